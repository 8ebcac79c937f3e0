import { MetaCoreError } from '../common/index.js'

/** The store file holds data this version cannot read; the node must not boot on it. */
export class SchemaGateError extends MetaCoreError {
  constructor (message: string) {
    super('schema_gate', message)
  }
}

/** The store was closed (or is closing) and takes no more work. */
export class KvClosedError extends MetaCoreError {
  constructor () {
    super('storage_unavailable', 'store is closed')
  }
}

/** SQLite failed underneath a read or a commit (disk full, I/O error, corruption). */
export class StorageError extends MetaCoreError {
  constructor (message: string, options?: { cause?: unknown }) {
    super('storage_error', message, options)
  }
}

/** A write function returned a promise: writes must be synchronous (no await inside a transaction). */
export class AsyncWriteError extends MetaCoreError {
  constructor () {
    super('async_write', 'write functions must be synchronous: never await inside a transaction')
  }
}

/** A file at the store path that belongs to something else: refused, left untouched. */
export class ForeignStoreError extends MetaCoreError {
  constructor (file: string, why: string) {
    super('foreign_store',
      `${file} is not a meta-core store: ${why}. It was left untouched; ` +
      'point META_CORE_DB_PATH (--db-path) at a new file or an existing meta-core store.')
  }
}

/** Who holds a store, as recorded beside it. */
export interface StoreOwner {
  pid: number
  host: string
  /** When it took the store (ISO 8601). */
  since: string
  /** Its HTTP address, once it listens. */
  url?: string
}

/** Another process owns the store: one store, one node. */
export class StoreInUseError extends MetaCoreError {
  readonly owner: StoreOwner | undefined
  constructor (file: string, owner: StoreOwner | undefined) {
    const who = owner === undefined
      ? 'another process (it left no owner record)'
      : `another meta-core process: pid ${owner.pid}${owner.host === '' ? '' : ` on ${owner.host}`}` +
        `${owner.url === undefined ? '' : `, listening on ${owner.url}`}${owner.since === '' ? '' : `, since ${owner.since}`}`
    super('store_in_use',
      `store ${file} is in use by ${who}. A store belongs to one node process: stop that one first, ` +
      'or give this node its own store with META_CORE_DB_PATH (--db-path).')
    this.owner = owner
  }
}
