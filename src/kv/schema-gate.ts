import { SchemaGateError } from './errors.js'
import { SCHEMA_VERSION, SCHEMA_VERSION_KEY } from './keys.js'
import type { Statements } from './statements.js'
import type { KvOptions, KvReader } from './types.js'

const NO_MIGRATION = 'There is no migration: move the file away (or set META_CORE_DB_PATH to a new file) and re-ingest the library.'

/**
 * The boot gate: a file stamped with another schema version is refused; an
 * unstamped one is stamped, unless the layers above recognise rows an older
 * program wrote (`checkUnversioned`). Refusing leaves the file untouched.
 */
export function checkSchema (st: Statements, path: string, checkUnversioned: KvOptions['checkUnversioned']): void {
  const v = st.get.get(SCHEMA_VERSION_KEY) as string | undefined
  if (v === undefined) {
    const reader: KvReader = {
      get: (k) => st.get.get(k) as string | undefined,
      any: (lo, hi) => st.firstKey.get(lo, hi) !== undefined
    }
    const why = checkUnversioned?.(reader)
    if (why !== undefined) {
      throw new SchemaGateError(`store file ${path} ${why} but no schema version: it was written by an older meta-core. ${NO_MIGRATION}`)
    }
    st.put.run(SCHEMA_VERSION_KEY, SCHEMA_VERSION)
    return
  }
  if (v !== SCHEMA_VERSION) {
    throw new SchemaGateError(
      `store file ${path} has schema version ${JSON.stringify(v)}, this meta-core reads version ${JSON.stringify(SCHEMA_VERSION)}. ${NO_MIGRATION}`)
  }
}
