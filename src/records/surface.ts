/**
 * The narrow interface in front of the record layer: what the API, the
 * watcher, search and the mesh may ask of it. None of it names a key, a kv
 * store or a transaction: the key layout stays private to `records/`, and
 * every write still commits as one transaction with everything it implies.
 *
 * It comes in roles, so each caller states what it uses:
 * - `RecordReads`: documents, roots, figures (API, search, watcher).
 * - `RecordWrites`: this node's edits of records (API).
 * - `FileRecords`: files on this node's disk (watcher, file routes).
 * - `Replication`: the change log, remote apply, full export (mesh).
 * - `EventStreams`: the node's event streams as clients see them (SSE).
 * - `LocalStore`: rows and stream entries a layer above keeps for this node
 *   only (watcher state, mesh bookkeeping), committed with record writes.
 * `Records` is all of them, which `RecordStore` implements.
 */
import type { EventId, EventIdParts } from '../kv/index.js'
import type { ChangeListener } from './change-log.js'
import type { ClockGate } from './clock-gate.js'
import type { ChangePage, ExportPage, PageOptions } from './change-feed.js'
import type { Nested } from './flatten.js'
import type { RangeFingerprint, RootHash } from './fingerprints.js'
import type { RecordIndexer } from './mutation.js'
import type { RecordId } from './record-id.js'
import type { RemoteEntry } from './remote-entry.js'
import type { ApplyBatchOptions } from './remote-apply.js'
import type { BulkPageOptions, BulkProgress } from './bulk-apply.js'
import type { FieldType } from './schema-type.js'
import type { Location } from './local-location.js'
import type {
  ApplyResult, CachedCopyResult, FileTuple, RecordDocument, RecordDocumentJson, LocalCopy, ReleaseResult, RemovePathResult, WriteResult
} from './types.js'

/** One value-type counter behind `/api/schema`: how many values of `field` classify as `prim`/`hint`. */
export interface SchemaCounter extends FieldType {
  count: number
}

/** The newest version of one field across a record's roots (tombstones included). */
export interface FieldVersion {
  field: string
  hlc: string
  origin: string
  /** The root of the group whose version this is. */
  root: RecordId
  /** The field was deleted by this write. */
  deleted: boolean
}

/** A page of the library sweep (`/api/stats`): figures over the live roots after `after`. */
export interface LibraryPage {
  /** Keys of record fields in the page's roots. */
  fieldKeys: number
  /**
   * Roots this node holds a copy of: their location row (`loc:<rid>`) carries filePath, sizeByte and mtimeNano. Replicated paths of other
   * nodes' copies do not count.
   */
  fileCount: number
  /** Sum of those copies' sizeByte. */
  totalSize: bigint
  /** The last root of the page, for the next call; undefined at the end. */
  next: RecordId | undefined
}

export interface RecordReads {
  /** This node's id: the origin of its versions. */
  readonly nodeId: string
  /** Runs synchronous reads in one snapshot. */
  read: <T>(fn: () => T) => T
  /** False once the store is closed or a read fails (what `/health` reports). */
  available: () => boolean
  /** The canonical root an address (root id or any CID) names, or undefined when nothing is live there. */
  resolveRoot: (addr: string) => RecordId | undefined
  getFlat: (addr: string) => Record<string, string> | undefined
  getProperty: (addr: string, field: string) => string | undefined
  getDocument: (addr: string) => RecordDocument | undefined
  getDocumentJson: (addr: string) => RecordDocumentJson | undefined
  getNestedDocument: (addr: string) => Record<string, Nested> | undefined
  /** Visible records (a group counts once). */
  countRecords: () => number
  listRoots: (opts?: { after?: string, limit?: number }) => RecordId[]
  iterateRoots: () => IterableIterator<RecordId>
  duplicatesOf: (addr: string) => string[]
  /** Per field, the newest version across the record's roots (the one its merged value shows), tombstones included. */
  fieldVersions: (doc: RecordDocument) => FieldVersion[]
  schemaCounters: () => SchemaCounter[]
  libraryPage: (after: RecordId | undefined, limit: number) => LibraryPage
  /** The store file's path (its size is what `/api/stats` reports as memory). */
  readonly storePath: string
}

/** What search needs beyond reads: its hooks in every record write transaction. */
export interface IndexedRecords extends RecordReads {
  /** Adds an indexer before any write runs. */
  addIndexer: (ix: RecordIndexer) => void
  /** The change log's last id, or undefined while it never had an entry (an indexer's catch-up mark). */
  changeLogHead: () => EventId | undefined
  /**
   * The roots changed after change-log id `after` (writes an indexer did not
   * see because it was not attached); undefined when the log no longer
   * reaches back that far or more than `limit` roots changed.
   */
  changedRootsSince: (after: EventId, limit: number) => Set<RecordId> | undefined
}

interface RecordWrites {
  mergeFlat: (addr: string, fields: Record<string, string>) => Promise<WriteResult>
  setFlat: (addr: string, fields: Record<string, string>) => Promise<WriteResult>
  setProperty: (addr: string, field: string, value: string) => Promise<WriteResult>
  deleteProperty: (addr: string, field: string) => Promise<{ rid: RecordId | undefined, deleted: boolean }>
  addToSet: (addr: string, field: string, member: string) => Promise<WriteResult & { added: boolean }>
  addAlias: (addr: string, cid: string) => Promise<WriteResult>
  deleteRoot: (addr: string) => Promise<{ rid: RecordId | undefined, deleted: number }>
  /** Deletes every record, a batch of roots per transaction; returns how many records went. */
  deleteAll: (opts?: { batch?: number, onProgress?: (deleted: number) => void }) => Promise<number>
}

export interface FileRecords {
  /** Mints a root for a file on this node's disk; `inheritFrom`: a record whose fields the new one starts with (content changed in place). */
  mint: (filePath: string, sizeByte: number | string, mtimeNano: number | bigint | string, extra?: Record<string, string>,
    opts?: { inheritFrom?: string }) => Promise<RecordId>
  mergeFlat: (addr: string, fields: Record<string, string>) => Promise<WriteResult>
  /** The copy at `path` went; `copies`: the other paths on this node known to hold the content (see file-ops.ts). */
  releaseCopy: (addr: string, path: string, holderId: string, opts?: { copies?: readonly LocalCopy[] }) => Promise<ReleaseResult>
  addDuplicatePath: (addr: string, path: string) => Promise<RecordId>
  /** This node's byte cache keeps the record's bytes: a node-local `meta-core:cached/` row and this node's holder member (file-ops.ts). */
  holdCachedCopy: (addr: string, holderId: string) => Promise<RecordId | undefined>
  /** The cache let root `rid`'s bytes go: the row goes, the holder member too unless a library copy remains here. */
  releaseCachedCopy: (rid: string, holderId: string) => Promise<CachedCopyResult>
  /** Roots the cache said it keeps (`meta-core:cached/` rows). */
  cachedCopies: () => RecordId[]
  removeFilePath: (addr: string, path: string) => Promise<RemovePathResult>
  /** `path` is one of the record's duplicate paths on this node. */
  isDuplicatePath: (addr: string, path: string) => boolean
  /** Where this node holds the record's bytes, from its own knowledge only: each root's own location here, then its duplicate paths. */
  copyPaths: (doc: RecordDocument) => string[]
  /** This node's own filePath, sizeByte and mtimeNano for the record (local-location.ts); undefined when it has no copy recorded. */
  ownLocation: (addr: string) => Location | undefined
  /** The CIDs one root (not its group) holds as `cids/` members. */
  rootCids: (rid: RecordId) => string[]
  iterateFileTuples: () => IterableIterator<FileTuple>
  fileTuplesWithField: (field: string) => FileTuple[]
  iterateDuplicates: () => IterableIterator<[RecordId, string]>
}

/**
 * A SHA-256 of the whole range's fingerprint (every root's hash over its values and versions: fingerprints.ts): equal on two stores exactly
 * when they hold the same records.
 */
export interface ReplicaDigest {
  digest: string
  /** Replicated keys counted (live, tombstones, root tombstones). */
  keys: number
}

export interface Replication {
  readonly nodeId: string
  applyRemote: (entries: readonly RemoteEntry[]) => Promise<ApplyResult>
  /** Many entries at once (a resync's pages, an import): the same merge, roots in key order, a transaction per hundred roots unless `opts` says otherwise. */
  applyBatch: (entries: readonly RemoteEntry[], opts?: ApplyBatchOptions) => Promise<ApplyResult>
  /** One page of a bulk transfer (a join): one transaction, derived work deferred until the page with `done`, no record half applied (bulk-apply.ts). */
  applyBulk: (entries: readonly RemoteEntry[], opts?: BulkPageOptions) => Promise<ApplyResult>
  /** The bulk transfer under way or last ended. */
  bulkProgress: () => BulkProgress
  /** True while a bulk transfer runs, or entries of one are held back waiting for its next page, or its end is still to build. */
  readonly bulkRunning: boolean
  /** How many of the roots from `first` to `last` (in key order) this store holds something of (a version map). */
  heldRoots: (first: string, last: string) => number
  /**
   * The entries that win over what is held now, grouped by root (what is not there would be skipped by `applyRemote` anyway);
   * an entry at the held version is left out unread unless `ties` (its value then decides: remote-apply.ts).
   */
  newerByRoot: (entries: readonly RemoteEntry[], ties?: boolean) => Map<string, RemoteEntry[]>
  changesSince: (cursor: string | undefined, opts: PageOptions) => ChangePage
  exportRange: (after: string | undefined, opts: PageOptions) => ExportPage
  onChanges: (listener: ChangeListener) => () => void
  /** The change log's last id, or undefined while it never had an entry. */
  changeLogHead: () => EventId | undefined
  /** The hybrid logical clock: the last value issued or observed. */
  clock: () => string
  /** Remote versions refused for clock drift since start. */
  readonly driftRefusedCount: number
  /** Installs (or with undefined removes) the check every local version must pass: the mesh's clock bound (clock-gate.ts). */
  setClockGate: (gate: ClockGate | undefined) => void
  digest: () => ReplicaDigest
  /** The fingerprint of the roots whose position starts with `prefix` (0–8 hex digits): the mesh's set reconciliation. */
  rangeFingerprint: (prefix: string) => RangeFingerprint
  /** The roots whose position starts with `prefix`, with their hashes, in position order (at most `limit`). */
  rangeRoots: (prefix: string, limit?: number) => RootHash[]
  /** The replicated state of one root: its root tombstone, live keys and tombstones, with versions. */
  exportRoot: (rid: RecordId) => RemoteEntry[]
  /** The same with every value null: the root's versions, from its version map alone. */
  exportVersions: (rid: RecordId) => RemoteEntry[]
}

/** A stream entry as clients see it; `fields: null` for an entry they are not shown (it still advances a cursor). */
export interface ShownEntry {
  stream: string
  id: EventId
  fields: Record<string, string> | null
}

export interface EventStreams {
  head: (stream: string) => EventId | undefined
  first: (stream: string) => EventId | undefined
  read: (stream: string, after: EventIdParts | undefined, limit: number) => ShownEntry[]
  /**
   * Hears each commit's entries, after COMMIT, in order: of every stream, or
   * only of those `wants` accepts at that commit (the others are never
   * shaped for the API, and a commit with none of them is not heard).
   */
  onCommit: (listener: (entries: readonly ShownEntry[]) => void, wants?: (stream: string) => boolean) => () => void
  /** Keys of live record fields after `after`, in key order: the `meta` snapshot. */
  recordKeys: (after: string | undefined, limit: number) => string[]
}

/** A write of node-local rows and stream entries, in the record layer's group commit. */
export interface LocalTx {
  get: (key: string) => string | undefined
  put: (key: string, value: string) => void
  delete: (key: string) => void
  /** Deletes every row under `prefix`. */
  deletePrefix: (prefix: string) => void
  appendEvent: (stream: string, fields: Record<string, string>) => EventId
  clearStream: (stream: string) => void
  /** Inside this transaction: some live record holds `cid`. */
  resolves: (cid: string) => boolean
  /** Inside this transaction: the record of `cid` names `path` as its filePath or one of its duplicate paths. */
  recordedAt: (cid: string, path: string) => boolean
}

/**
 * Node-local rows in the namespaces a door was opened for (local-store.ts:
 * the layers' `watch:`, `mesh:`; the clients' `btmagnet:`, `searchcov:`,
 * `nzb:`): never replicated, never in the change log. Every other key is
 * refused (NotNodeLocalKeyError, a 400 `reserved_key` at the API). A write queued in the same turn
 * of the event loop as record writes commits in the same transaction.
 */
export interface LocalStore {
  get: (key: string) => string | undefined
  /** Rows under `prefix` in key order (lazily; no write may run meanwhile). */
  entries: (prefix: string) => IterableIterator<[string, string]>
  write: <T>(fn: (tx: LocalTx) => T) => Promise<T>
  /** The same, now, in its own transaction (boot-time work). */
  writeSync: <T>(fn: (tx: LocalTx) => T) => T
}

/** Everything the record layer offers the layers above. */
export interface Records extends RecordReads, IndexedRecords, RecordWrites, FileRecords, Replication {
  readonly events: EventStreams
  /** The layers' node-local rows (`watch:`, `mesh:`: local-store.ts LAYER_NAMESPACES). */
  readonly local: LocalStore
  /** The plain rows clients write through `/api/kv` (`btmagnet:`, `searchcov:`, `nzb:`: local-store.ts CLIENT_NAMESPACES). */
  readonly clientRows: LocalStore
}
