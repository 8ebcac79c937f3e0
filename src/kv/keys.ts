export { prefixEnd, prefixRange } from '../common/index.js'

export const SCHEMA_VERSION_KEY = 'meta-core:schema-version'
export const SCHEMA_VERSION = '2'
