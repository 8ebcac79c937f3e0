/**
 * kv: the one SQLite table `kv(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`
 * that holds everything a node stores, and the only module that imports
 * better-sqlite3.
 *
 * Files: `kv-store.ts` the connection and reads; `group-commit.ts` the writer
 * and the transaction handle; `streams.ts` the event streams, `stream-rows.ts`
 * the text of their rows; `schema-gate.ts` the boot gate; `store-guard.ts`
 * the refusal of foreign files and the one-process-per-store lock;
 * `statements.ts` the shared prepared statements; `checkpointer.ts` WAL
 * checkpoints on a worker thread (`checkpoint-worker.ts`), `wal-hold.ts` the
 * WAL start-over's protocol with the store's threads; `side-file.ts` a database file a layer
 * above keeps beside the store.
 *
 * It owns the file (WAL, synchronous=NORMAL), the schema-version gate, the
 * group-commit writer (one transaction per batch; a failing write rolls back alone),
 * and generic event streams kept as rows `ev:<stream>/<ms13>-<seq10>` (the
 * entries of one bulk append packed in one row) with a high-water mark
 * `evhwm:<stream>` (ids never go back) and a low-water mark `evlow:<stream>`
 * (the newest id a trim or clear removed). It knows nothing
 * of records: which keys mean what, and what a stream's entries say, belong
 * to the layers above (the record layer writes `meta:events` itself).
 */
export { KvStore, openKv } from './kv-store.js'
export { openSideFile } from './side-file.js'
export { WalHold } from './wal-hold.js'
export type { SideFile, SideFileOptions } from './side-file.js'
export type { CheckpointTuning, KvOptions, KvReader, Tx, StreamEntry, EntryRun, BatchStats, SqlStatement } from './types.js'
export { entriesOf } from './streams.js'
export { SchemaGateError, KvClosedError, StorageError, AsyncWriteError, ForeignStoreError, StoreInUseError } from './errors.js'
export { prefixEnd, prefixRange } from './keys.js'
export { formatEventId, parseEventId, padEventId, compareEventIds } from './event-id.js'
export type { EventId, EventIdParts } from './event-id.js'
