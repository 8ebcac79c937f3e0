/**
 * records: the data model on top of kv. A record is the key range
 * `file:<rid>/…` of a UUIDv7 root; CIDs are aliases (`cid:<cid>` → root,
 * `file:<rid>/cids/<cid>` = "true"); `canonical_cid` is derived on read.
 *
 * Guarantees:
 * - Every write is one kv write function: fields, aliases, versions, search
 *   rows, counters and events commit together or not at all.
 * - Every `file:` key has a version `(hlc, origin)` kept beside it in
 *   `ver:<rid>`; deletes leave tombstones, DeleteRoot a root tombstone.
 *   `applyRemote` merges last-writer-wins, so stores that saw the same writes
 *   hold the same records whatever the order.
 * - Every change of a replicated key appends a row to the change log
 *   (`meta:events`: key, set/del, version) in the same transaction, root
 *   tombstones included; `changesSince` serves it to peers (each key once,
 *   current value and version), `onChanges` hands committed changes to
 *   listeners after COMMIT, `exportRange` pages the whole replicated range
 *   for a full resync.
 * - Roots sharing a CID form one group, read as one record whose canonical
 *   root is the smallest rid; this is derived locally and writes nothing
 *   replicated.
 * - A root is a record while it has a live `cids/` member and, once it was
 *   ever held, a live `holders/` member (`record-liveness.ts`): a function of
 *   the merged state, so every node counts, lists and resolves the same
 *   records; a node's last release removes only its own holder member.
 * - A file's location (`filePath`, `sizeByte`, `mtimeNano`) as this node
 *   shows and serves it is its own (`local-location.ts`, never replicated).
 *
 * Files by concern: `reads.ts` (documents, roots, groups merged),
 * `local-writes.ts` (this node's writes), `file-ops.ts` (duplicate paths,
 * holders, file tuples), `remote-apply.ts` (merging a peer's entries),
 * `change-log.ts` and `change-feed.ts` (the versioned change log and what
 * peers read from it), `mutation.ts` (the one write path under all of them),
 * `record-liveness.ts` (what makes a root a record), `local-location.ts`
 * (this node's own file locations), `local-store.ts` (the one door to
 * node-local rows: the layers' and the clients' namespaces, an allow-list
 * each), `store-identity.ts` (whose holder members the store holds), `layout.ts` (the key grammar, private
 * to this module), `record-store.ts` (the object that wires them together).
 */
export { RecordStore } from './record-store.js'
export { LOCATION_FIELDS, isLocationField } from './local-location.js'
export { CLIENT_NAMESPACES, NotNodeLocalKeyError } from './local-store.js'
export { isRecord } from './record-liveness.js'
export { checkRemoteEntry, newEntryChecks, InvalidRemoteEntryError, ORIGIN_RE, MAX_REMOTE_KEY_BYTES } from './remote-entry.js'
export type { BulkProgress } from './bulk-apply.js'
export { BULK_CARRY_KEY } from './bulk-apply.js'
export type { RecordDocument, ReleaseResult, LocalCopy } from './types.js'
export type { ChangePage } from './change-feed.js'
export type { RemoteEntry } from './remote-entry.js'
export { META_EVENTS, presentChange, decodeChange } from './change-log.js'
export type { CommittedChange } from './change-log.js'
export type { BulkRoots, RecordIndexer } from './mutation.js'
export { newRecordId, isRecordId, recordIdTime, encodeUuidV7, decodeRecordId, RecordIdMinter } from './record-id.js'
export type { RecordId } from './record-id.js'
export { validateFieldPath, rejectDeprecatedField, checkWritableField, cidMemberOf, MAX_FIELD_BYTES, MAX_VALUE_LENGTH } from './field-path.js'
export {
  InvalidFieldError, DeprecatedFieldError, InvalidValueError, UnknownRecordError, InvalidAddressError, SelfAliasError, LocationFieldError
} from './errors.js'
export { nest, flatten } from './flatten.js'
export { formatHlc, parseHlc } from './hlc.js'
export { ClockOutOfBoundError } from './clock-gate.js'
export type { ClockGate, ClockRefusal } from './clock-gate.js'
export { VersionMap, versionHlc, versionOrigin } from './versions.js'
export type { Version } from './versions.js'
export { classifyValue, generaliseField } from './schema-type.js'
export type {
  Records, RecordReads, IndexedRecords, FileRecords, Replication, EventStreams, ShownEntry, LocalStore, LocalTx, FieldVersion
} from './surface.js'
export { FILE_EVENTS } from './events.js'
export { recordRows, countLiveRoots } from './rows.js'
export type { RowReader } from './rows.js'
// What callers of the record layer meet from the store below: its errors and stream ids.
export {
  KvClosedError, StorageError, compareEventIds, formatEventId, parseEventId
} from '../kv/index.js'
export type { EventId, EventIdParts, Tx } from '../kv/index.js'
export { openNodeStore } from './open-store.js'
export type { NodeStore, NodeStoreOptions } from './open-store.js'
