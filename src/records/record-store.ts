/**
 * The record layer as one object: it wires the parts (reads, local writes,
 * file operations, remote apply, the change log) over one kv store and one
 * mutation path, and is what `openNodeStore` returns. Each method is the
 * part's; see reads.ts, local-writes.ts, file-ops.ts, remote-apply.ts,
 * change-log.ts and change-feed.ts for what each guarantees.
 */
import { silentLogger } from '../common/index.js'
import { prefixEnd, type EventId, type KvStore, type Tx } from '../kv/index.js'
import { ChangeLog, META_EVENTS, type ChangeListener, type ChangeLogEntry } from './change-log.js'
import {
  changedRootsSince, changesSince, exportRange, readChangeLog, rootEntries, rootVersions, type ChangePage, type ExportPage, type PageOptions
} from './change-feed.js'
import { eventStreams } from './events.js'
import { CLIENT_NAMESPACES, LAYER_NAMESPACES, localStore } from './local-store.js'
import { readStoreIdentity, writeStoreIdentity, type StoreIdentity } from './store-identity.js'
import { Fingerprints, type RangeFingerprint, type RootHash } from './fingerprints.js'
import { createHash } from 'node:crypto'
import type {
  EventStreams, FieldVersion, LibraryPage, LocalStore, Records, ReplicaDigest, SchemaCounter
} from './surface.js'
import type { ClockGate } from './clock-gate.js'
import type { RecordContext } from './context.js'
import { InvalidValueError } from './errors.js'
import { FileOps } from './file-ops.js'
import { sweepNonRecords } from './record-liveness.js'
import type { Location } from './local-location.js'
import { Hlc } from './hlc.js'
import { COUNT_READY, COUNT_ROOTS, HLC_KEY, HOLDERS_INDEX, ROOTS, VER, canonOf, type Reader } from './layout.js'
import { LocalWriter } from './local-writes.js'
import { Mutator, type RecordIndexer } from './mutation.js'
import type { Nested } from './flatten.js'
import { RecordReader } from './reads.js'
import { RecordIdMinter, newRecordId, type RandomSource, type RecordId } from './record-id.js'
import { ORIGIN_RE, type RemoteEntry } from './remote-entry.js'
import { RemoteApplier, type ApplyBatchOptions } from './remote-apply.js'
import { BULK_CARRY_KEY, BulkApplier, type BulkPageOptions, type BulkProgress } from './bulk-apply.js'
import { BULK_FINISH_KEY, deriveBulk } from './bulk-derive.js'
import type {
  ApplyResult, CachedCopyResult, FileTuple, RecordDocument, RecordDocumentJson, ReleaseResult, LocalCopy, RemovePathResult, WriteResult
} from './types.js'
import type { Logger } from '../common/index.js'

export interface RecordStoreOptions {
  /** This node's id: the origin of every version it issues (its peer id in a mesh). */
  nodeId: string
  indexers?: RecordIndexer[]
  /** A remote version further ahead of local wall time than this is refused (default 10 s). */
  maxClockDriftMs?: number
  /** Wall clock in ms: the HLC and the time part of minted root ids (default Date.now). */
  now?: () => number
  /**
   * Uniform numbers in [0, 1) for the random part of minted root ids. With
   * it (and `now`), ids come from this store's own minter, so a simulator with
   * a virtual clock and a seed mints the same ids on every run. Default: OS
   * randomness, shared by every store in the process.
   */
  random?: RandomSource
  logger?: Logger
}

export class RecordStore implements Records {
  private readonly kv: KvStore
  readonly nodeId: string
  readonly hlc: Hlc
  readonly events: EventStreams
  readonly local: LocalStore
  readonly clientRows: LocalStore
  private readonly ctx: RecordContext
  private readonly changeLog: ChangeLog
  private readonly reads: RecordReader
  private readonly writer: LocalWriter
  private readonly files: FileOps
  private readonly remote: RemoteApplier
  private readonly fingerprints: Fingerprints
  private readonly bulk: BulkApplier

  constructor (kv: KvStore, opts: RecordStoreOptions) {
    if (!ORIGIN_RE.test(opts.nodeId)) throw new InvalidValueError('node id must be 1-128 characters of [A-Za-z0-9._-]')
    this.kv = kv
    this.nodeId = opts.nodeId
    const log = opts.logger ?? silentLogger
    const now = opts.now ?? Date.now
    this.hlc = new Hlc(now, kv.get(HLC_KEY))
    let mintId: (ms: number) => RecordId = (ms) => newRecordId(ms)
    if (opts.random !== undefined) {
      const minter = new RecordIdMinter(opts.random)
      mintId = (ms) => minter.next(ms)
    }
    this.changeLog = new ChangeLog(kv, log)
    this.fingerprints = new Fingerprints(kv, log)
    const mutator = new Mutator(opts.indexers ?? [], this.changeLog, this.fingerprints)
    const write = async <T>(fn: (tx: Tx) => T): Promise<T> => {
      // Waits while an indexer is at its backlog bound; re-checked, since others may have filled it meanwhile.
      for (let w = mutator.whenWritable(); w !== undefined; w = mutator.whenWritable()) await w
      return await kv.write(fn)
    }
    this.ctx = { kv, nodeId: opts.nodeId, hlc: this.hlc, mutator, now, mintId, log, write, clockGate: undefined }
    this.reads = new RecordReader(kv)
    this.writer = new LocalWriter(this.ctx, this.reads)
    this.files = new FileOps(this.ctx, this.reads)
    this.remote = new RemoteApplier(this.ctx, opts.maxClockDriftMs ?? 10_000)
    this.bulk = new BulkApplier(this.remote, mutator, () => kv.get(BULK_CARRY_KEY), now, {
      derive: async () => await deriveBulk(kv, this.fingerprints, (tx, rid, cid) => { mutator.aliasAdded(tx, rid, cid) }),
      finishDue: () => kv.get(BULK_FINISH_KEY) !== undefined,
      log
    })
    this.events = eventStreams(kv)
    this.local = localStore(kv, this.reads, LAYER_NAMESPACES)
    this.clientRows = localStore(kv, this.reads, CLIENT_NAMESPACES)
    if (kv.get(COUNT_READY) === undefined) this.rebuildCounters()
    this.fingerprints.open()
    this.ensureHoldersIndex(log)
  }

  /** Adds an indexer (search) before any write runs. */
  addIndexer (ix: RecordIndexer): void {
    this.ctx.mutator.addIndexer(ix)
  }

  // ---------------------------------------------------------------- reads (reads.ts)

  read<T> (fn: () => T): T { return this.kv.read(fn) }
  available (): boolean { return this.reads.available() }
  get storePath (): string { return this.kv.path }
  fieldVersions (doc: RecordDocument): FieldVersion[] { return this.reads.fieldVersions(doc) }
  schemaCounters (): SchemaCounter[] { return this.reads.schemaCounters() }
  libraryPage (after: RecordId | undefined, limit: number): LibraryPage { return this.reads.libraryPage(after, limit) }

  resolveRoot (addr: string, r?: Reader): RecordId | undefined { return this.reads.resolveRoot(addr, r) }
  getFlat (addr: string): Record<string, string> | undefined { return this.reads.getFlat(addr) }
  getProperty (addr: string, field: string): string | undefined { return this.reads.getProperty(addr, field) }
  getDocumentJson (addr: string): RecordDocumentJson | undefined { return this.reads.getDocumentJson(addr) }
  getDocument (addr: string): RecordDocument | undefined { return this.reads.getDocument(addr) }
  getNestedDocument (addr: string): Record<string, Nested> | undefined { return this.reads.getNestedDocument(addr) }
  countRecords (): number { return this.reads.countRecords() }
  listRoots (opts?: { after?: string, limit?: number }): RecordId[] { return this.reads.listRoots(opts) }
  iterateRoots (): IterableIterator<RecordId> { return this.reads.iterateRoots() }
  duplicatesOf (addr: string): string[] { return this.reads.duplicatesOf(addr) }

  // ---------------------------------------------------------------- local writes (local-writes.ts)

  async mint (filePath: string, sizeByte: number | string, mtimeNano: number | bigint | string, extra?: Record<string, string>,
    opts?: { inheritFrom?: string }): Promise<RecordId> {
    return await this.writer.mint(filePath, sizeByte, mtimeNano, extra, opts)
  }

  async deleteAll (opts?: { batch?: number, onProgress?: (deleted: number) => void }): Promise<number> { return await this.writer.deleteAll(opts) }

  async mergeFlat (addr: string, fields: Record<string, string>): Promise<WriteResult> { return await this.writer.mergeFlat(addr, fields) }
  async setFlat (addr: string, fields: Record<string, string>): Promise<WriteResult> { return await this.writer.setFlat(addr, fields) }
  async setProperty (addr: string, field: string, value: string): Promise<WriteResult> { return await this.writer.mergeFlat(addr, { [field]: value }) }
  async deleteProperty (addr: string,
    field: string): Promise<{ rid: RecordId | undefined, deleted: boolean }> { return await this.writer.deleteProperty(addr, field) }
  async addToSet (addr: string, field: string,
    member: string): Promise<WriteResult & { added: boolean }> { return await this.writer.addToSet(addr, field, member) }
  async addAlias (addr: string, cid: string): Promise<WriteResult> { return await this.writer.addAlias(addr, cid) }
  async deleteRoot (addr: string): Promise<{ rid: RecordId | undefined, deleted: number }> { return await this.writer.deleteRoot(addr) }

  // ---------------------------------------------------------------- files on this node (file-ops.ts)

  async releaseCopy (addr: string, path: string, holderId: string,
    opts?: { copies?: readonly LocalCopy[] }): Promise<ReleaseResult> { return await this.files.releaseCopy(addr, path, holderId, opts) }
  async addDuplicatePath (addr: string, path: string): Promise<RecordId> { return await this.files.addDuplicatePath(addr, path) }
  async holdCachedCopy (addr: string, holderId: string): Promise<RecordId | undefined> { return await this.files.holdCachedCopy(addr, holderId) }
  async releaseCachedCopy (rid: string, holderId: string): Promise<CachedCopyResult> { return await this.files.releaseCachedCopy(rid, holderId) }
  cachedCopies (): RecordId[] { return this.files.cachedCopies() }
  async removeFilePath (addr: string, path: string): Promise<RemovePathResult> { return await this.files.removeFilePath(addr, path) }
  isDuplicatePath (addr: string, path: string): boolean { return this.files.isDuplicatePath(addr, path) }
  copyPaths (doc: RecordDocument): string[] { return this.files.copyPaths(doc) }
  ownLocation (addr: string): Location | undefined { return this.files.ownLocation(addr) }
  rootCids (rid: RecordId): string[] { return this.files.rootCids(rid) }
  iterateFileTuples (): IterableIterator<FileTuple> { return this.files.iterateFileTuples() }
  fileTuplesWithField (field: string): FileTuple[] { return this.files.fileTuplesWithField(field) }
  iterateDuplicates (): IterableIterator<[RecordId, string]> { return this.files.iterateDuplicates() }
  async forgetLocalPaths (): Promise<number> { return await this.files.forgetLocalPaths() }
  async backfillLocations (holderId: string): Promise<number> { return await this.files.backfillLocations(holderId) }
  /** Whose holder members this store holds (store-identity.ts). */
  storeIdentity (): StoreIdentity { return readStoreIdentity(this.kv) }
  /** Records the id the holder members are now under, and with `copiedFrom` the node a copied store came from (store-identity.ts). */
  async recordStoreIdentity (holderId: string,
    copiedFrom?: string): Promise<void> { await this.ctx.write(tx => { writeStoreIdentity(tx, holderId, copiedFrom) }) }
  /** Once per store, after the indexers attached: roots counted before the record rule that are no records go (record-liveness.ts). */
  async sweepNonRecords (): Promise<number> { return await sweepNonRecords(this.ctx) }

  // ---------------------------------------------------------------- replication (remote-apply.ts, change-log.ts, change-feed.ts)

  async applyRemote (entries: readonly RemoteEntry[]): Promise<ApplyResult> { return await this.remote.applyRemote(entries) }
  newerByRoot (entries: readonly RemoteEntry[], ties?: boolean): Map<string, RemoteEntry[]> { return this.remote.newerByRoot(entries, ties) }

  /**
   * Applies many peers' entries at once: a full resync's pages, a bulk
   * import. The same last-writer-wins merge as applyRemote, entry for entry,
   * and the same refusals (a malformed entry refuses the whole call before
   * anything is written; entries too far ahead of the clock are counted and
   * skipped). Entries are grouped by root and applied in root order, one
   * transaction per 100 roots (`rootsPerTransaction`) or 10,000 entries
   * (`entriesPerTransaction`; a root is never split), so the per-commit
   * cost is paid once per hundred records; derived work (search) is
   * deferred and merged in sorted batches as for every write. Not atomic
   * as a whole: a crash keeps whole roots of the transactions already
   * committed, and applying the same entries again is harmless. Use it
   * rather than many applyRemote calls for anything larger than a gossip
   * frame. The entries are checked when called and read again as their
   * transactions run: they must not change until the promise settles (as
   * for applyRemote).
   */
  async applyBatch (entries: readonly RemoteEntry[], opts?: ApplyBatchOptions): Promise<ApplyResult> { return await this.remote.applyBatch(entries, opts) }

  /**
   * One page of a bulk transfer (a join): one transaction, roots in key
   * order, the indexers' work deferred and built once after the page with
   * `done` (bulk-apply.ts). The entries of the page's last root wait for the
   * next page, so no record is ever half applied; the same merge and
   * refusals as applyBatch otherwise.
   */
  async applyBulk (entries: readonly RemoteEntry[], opts?: BulkPageOptions): Promise<ApplyResult> { return await this.bulk.apply(entries, opts) }

  /** The bulk transfer under way or last ended: keys and records taken, rate, time left. */
  bulkProgress (): BulkProgress { return this.bulk.progress() }

  /** True while a bulk transfer runs, or entries of one are held back waiting for its next page, or its end is still to build. */
  get bulkRunning (): boolean { return this.bulk.running || this.bulk.finishDue }

  heldRoots (first: string, last: string): number { return this.kv.count(VER + first, VER + last + '\u0000') }

  /** Remote versions refused for clock drift since start. */
  get driftRefusedCount (): number { return this.remote.driftRefused }

  /** Installs (or with undefined removes) the check every local version must pass (clock-gate.ts): the mesh's clock bound. */
  setClockGate (gate: ClockGate | undefined): void { this.ctx.clockGate = gate }

  /** The replicated state of one root in key order: the root tombstone, live keys and tombstones, with their versions. */
  exportRoot (rid: RecordId, r: Reader = this.kv): RemoteEntry[] { return rootEntries(r, rid) }
  /** The same with every value null: the root's versions, from its version map alone. */
  exportVersions (rid: RecordId, r: Reader = this.kv): RemoteEntry[] { return rootVersions(r, rid) }

  /** Each key changed after `cursor` once, with its current value and version (change-feed.ts). */
  changesSince (cursor: string | undefined, opts: PageOptions): ChangePage { return changesSince(this.kv, cursor, opts) }

  /** The whole replicated range, in key order after `after` (change-feed.ts). */
  exportRange (after: string | undefined, opts: PageOptions): ExportPage { return exportRange(this.kv, after, opts) }

  changeLogHead (): EventId | undefined { return this.kv.streamHead(META_EVENTS) }
  changedRootsSince (after: EventId, limit: number): Set<RecordId> | undefined { return changedRootsSince(this.kv, after, limit) }
  clock (): string { return this.hlc.last() }
  /**
   * SHA-256 of the whole range's fingerprint (the sum of every root's hash,
   * the count of roots and of versioned keys): a read of the fingerprint
   * tree, never a scan (fingerprints.ts).
   */
  digest (): ReplicaDigest {
    const t = this.fingerprints.total()
    return { digest: createHash('sha256').update(`meta-core range ${t.fp} ${t.roots} ${t.keys}`).digest('hex'), keys: t.keys }
  }

  /** The fingerprint of the roots whose position starts with `prefix` (0–8 hex digits; fingerprints.ts). */
  rangeFingerprint (prefix: string): RangeFingerprint { return this.fingerprints.range(prefix) }
  /** The roots whose position starts with `prefix`, with their hashes, in position order (at most `limit`). */
  rangeRoots (prefix: string, limit?: number): RootHash[] { return this.fingerprints.items(prefix, limit) }


  /** Change-log rows after `after` as stored (id, set/del, key, version), for tests and tools. */
  readChangeLog (after: string | undefined, limit: number): ChangeLogEntry[] { return readChangeLog(this.kv, after, limit) }

  /**
   * Hears every commit's change-log entries after COMMIT, in log order, with
   * the value and version each change wrote: what a mesh pushes without
   * re-reading. Local and remote changes both; tell them apart by `origin`.
   * Returns the unsubscribe function.
   */
  onChanges (listener: ChangeListener): () => void { return this.changeLog.onChanges(listener) }

  // ---------------------------------------------------------------- internals

  /** Creates the `holders/` index (layout.ts) if missing: one pass over the table on a store that predates it. */
  private ensureHoldersIndex (log: Logger): void {
    if (this.kv.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'kv_holders'").get() !== undefined) return
    const t0 = Date.now()
    this.kv.exec(HOLDERS_INDEX)
    const ms = Date.now() - t0
    if (ms > 1000) log.info('created the holders index', { ms })
  }

  /** Rebuilds the visible-record counter from the rows (a store whose counters were never built). */
  private rebuildCounters (): void {
    this.kv.writeSync(tx => {
      let n = 0
      for (const k of tx.keys(ROOTS, prefixEnd(ROOTS))) {
        const rid = k.slice(ROOTS.length)
        if (canonOf(tx, rid) === rid) n++
      }
      if (n === 0) tx.delete(COUNT_ROOTS)
      else tx.put(COUNT_ROOTS, String(n))
      tx.put(COUNT_READY, '1')
    })
  }
}
