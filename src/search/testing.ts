/**
 * What tests and benchmarks use beside search's public surface (index.ts):
 * the reference search, a scan of every record with the same matchers,
 * which the indexed search must answer exactly like.
 */
export { referenceSearch } from './reference-search.js'
export type { MergerOptions } from './merger-options.js'
