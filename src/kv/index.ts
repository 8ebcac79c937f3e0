/**
 * kv: the one SQLite table `kv(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`
 * that holds everything a node stores, and the only module that imports
 * better-sqlite3.
 *
 * It owns the file (WAL, synchronous=NORMAL), the schema-version gate, the
 * group-commit writer (one transaction per batch, one savepoint per write),
 * and the event streams kept as rows `ev:<stream>/<ms13>-<seq10>` with a
 * high-water mark `evhwm:<stream>`. Every change under `file:` appends
 * `{type: set|del, key, ts}` to `meta:events` in the same transaction; a put
 * of the value a key already holds writes and emits nothing.
 */
export { KvStore, openKv, META_EVENTS } from './kv-store.js'
export type { KvOptions, Tx, StreamEntry, CommitListener, SqlStatement } from './kv-store.js'
export { SchemaGateError, KvClosedError, StorageError, AsyncWriteError } from './errors.js'
export { prefixEnd, prefixRange, isFileKey, FILE_PREFIX, SCHEMA_VERSION, SCHEMA_VERSION_KEY } from './keys.js'
export { formatEventId, parseEventId, padEventId, compareEventIds, nextEventId } from './event-id.js'
export type { EventId, EventIdParts } from './event-id.js'
