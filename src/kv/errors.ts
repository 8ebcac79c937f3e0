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
