/**
 * The `ReplicaStore` the mesh core replicates, over the record layer.
 *
 * The change log is the record layer's (`records.changesSince`,
 * `records.onChanges`, `records.exportRange`): every committed change of a
 * `file:` key, remote applies and root tombstones included, and a no-op
 * apply appends nothing. A page answers each key once with its current value
 * and version; a key whose own version was dropped under a root tombstone is
 * answered by that root tombstone (`file:<rid>`).
 *
 * Gap: retention removed entries after the cursor, or the cursor is ahead
 * of the head (this log never issued it). Reconciliation reads the range fingerprints (`rangeFingerprint`,
 * `rangeRoots`) and whole roots (`exportRoots`).
 *
 * Node-local bookkeeping lives under `mesh:` (never replicated, refused by
 * the raw kv routes).
 */
import { randomBytes } from 'node:crypto'
import {
  checkRemoteEntry, newEntryChecks, type ClockGate, type CommittedChange, type LocalStore, type RecordId, type RemoteEntry, type Replication
} from '../records/index.js'
import type { BulkProgress } from '../records/index.js'
import type { ApplyOutcome, BulkPage, ChangePage, Cursor, RangePage, ReplicaStore, StoreDigest } from './protocol/index.js'

/** What the mesh asks of the record layer: replication, and its node-local bookkeeping rows. */
export type MeshRecords = Replication & { readonly local: LocalStore, read: <T>(fn: () => T) => T, countRecords: () => number }

const LOG_ID_KEY = 'mesh:log-id'
const EMPTY_LOG_HEAD = '0-0'
/** A pulled page is applied in one transaction; the core screened its entries (checkEntries), so they are not checked again. */
const WHOLE_PAGE = { rootsPerTransaction: Infinity, entriesPerTransaction: Infinity, checked: true }
/**
 * A page of a bulk transfer starts the bulk path when at least this many of
 * its roots, and at least half of them, are new to this store (a page of
 * 40-field records holds about 170): a join, or a store far behind. A
 * resync that finds the store mostly equal stays on the page path, and
 * search is not rebuilt for it.
 */
const BULK_FROM_ROOTS = 64

interface RecordReplicaOptions {
  /** A fresh log id for a store that has none (injectable for deterministic runs). */
  newLogId?: () => string
  /** New roots in one page of a bulk transfer that start the bulk path (default 64, and half the page's; Infinity: never). */
  bulkFromRoots?: number
}

export class RecordReplica implements ReplicaStore {
  private readonly id: string
  private readonly bulkFromRoots: number

  constructor (private readonly records: MeshRecords, opts: RecordReplicaOptions = {}) {
    this.bulkFromRoots = opts.bulkFromRoots ?? BULK_FROM_ROOTS
    let id = records.local.get(LOG_ID_KEY)
    if (id === undefined) {
      id = (opts.newLogId ?? (() => randomBytes(8).toString('hex')))()
      const fresh = id
      records.local.writeSync(tx => { tx.put(LOG_ID_KEY, fresh) })
    }
    this.id = id
  }

  logId (): string {
    return this.id
  }

  /**
   * The last id of the log; `0-0` for a log that never had an entry, so a
   * peer that synced with an empty log still holds a cursor (and a trim
   * before its next pull shows as a gap).
   */
  head (): Cursor {
    return this.records.changeLogHead() ?? EMPTY_LOG_HEAD
  }

  changesSince (cursor: Cursor | null, opts: { limit: number, maxBytes: number }): ChangePage {
    const page = this.records.changesSince(cursor ?? undefined, opts)
    return { changes: page.changes, next: page.next ?? cursor, head: page.head ?? EMPTY_LOG_HEAD, gap: page.gap }
  }

  exportRange (after: string | null, opts: { maxBytes: number }): RangePage {
    const page = this.records.exportRange(after ?? undefined, { limit: Infinity, maxBytes: opts.maxBytes })
    return { entries: page.entries, next: page.next ?? null }
  }

  checkEntries (entries: readonly RemoteEntry[]): string | undefined {
    const seen = newEntryChecks()
    try {
      for (const e of entries) checkRemoteEntry(e, seen)
      return undefined
    } catch (err) {
      return (err as Error).message
    }
  }

  /**
   * Through the record layer's batch apply, in one transaction: the page's
   * roots in key order, search's work deferred and merged in sorted batches
   * (a full resync is thousands of such pages). A page is at most 1 MiB, so
   * its transaction stays small.
   */
  async apply (entries: readonly RemoteEntry[], opts: { ties?: boolean } = {}): Promise<{ applied: number, refused: number }> {
    // Most of an anti-entropy page is already known (it came by push, or from another peer): those never reach the write path.
    const byRoot = this.records.newerByRoot(entries, opts.ties === true)
    if (byRoot.size === 0) return { applied: 0, refused: 0 }
    const r = await this.records.applyBatch([...byRoot.values()].flat(), WHOLE_PAGE)
    return { applied: r.applied, refused: r.refused }
  }

  /**
   * A page of a bulk transfer (a full resync's range pages; reconciliation's
   * later): on the record layer's bulk path (records `applyBulk`: one
   * transaction, search's work deferred and built once after the last page,
   * no record half applied) once a page brings many roots new to this store,
   * and from then on until the transfer's last page; otherwise as `apply`.
   */
  async applyBulk (entries: readonly RemoteEntry[], page: BulkPage): Promise<ApplyOutcome> {
    const r = this.records
    if (!r.bulkRunning) {
      // One count of the page's roots this store holds decides: a page mostly new to it starts the bulk path.
      const span = rootSpan(entries)
      const fresh = span.roots - (span.roots === 0 ? 0 : r.heldRoots(span.first, span.last))
      if (fresh < this.bulkFromRoots || fresh * 2 < span.roots) {
        const byRoot = r.newerByRoot(entries)
        if (byRoot.size === 0) return { applied: 0, refused: 0 }
        const out = await r.applyBatch([...byRoot.values()].flat(), WHOLE_PAGE)
        return { applied: out.applied, refused: out.refused }
      }
    }
    const out = await r.applyBulk(entries, { ...page, checked: true })
    return { applied: out.applied, refused: out.refused }
  }

  bulkPending (): boolean {
    return this.records.bulkRunning
  }

  /** The bulk transfer under way or last ended (the mesh status's `join`). */
  bulkProgress (): BulkProgress {
    return this.records.bulkProgress()
  }

  /** How many records this store holds (a resync's first page tells the peer, for its time left). */
  recordCount (): number {
    return this.records.countRecords()
  }

  onChanges (listener: (changes: readonly RemoteEntry[]) => void): () => void {
    return this.records.onChanges((committed) => { listener(withoutShadowed(committed)) })
  }

  /** Equal on two stores exactly when they hold the same keys, values, tombstones and versions (records' `digest`). */
  digest (): StoreDigest {
    return this.records.digest()
  }

  rangeFingerprint (prefix: string): { fp: string, roots: number } {
    return this.records.rangeFingerprint(prefix)
  }

  rangeRoots (prefix: string, limit: number): Array<{ rid: string, hash: string }> {
    return this.records.rangeRoots(prefix, limit)
  }

  exportRoots (rids: readonly string[]): RemoteEntry[] {
    return this.records.read(() => rids.flatMap(rid => this.records.exportRoot(rid as RecordId)))
  }

  exportVersions (rids: readonly string[]): RemoteEntry[] {
    return this.records.read(() => rids.flatMap(rid => this.records.exportVersions(rid as RecordId)))
  }

  clock (): string {
    return this.records.clock()
  }

  setClockGate (gate: ClockGate | undefined): void {
    this.records.setClockGate(gate)
  }

  getLocal (key: string): string | undefined {
    return this.records.local.get(key)
  }

  async setLocal (key: string, value: string | null): Promise<void> {
    await this.records.local.write(tx => {
      if (value === null) tx.delete(key)
      else tx.put(key, value)
    })
  }
}

/** Distinct roots among a page's entries (a page holds a root's entries together), its first and its last in key order. */
function rootSpan (entries: readonly RemoteEntry[]): { roots: number, first: string, last: string } {
  let n = 0
  let last: string | undefined
  let first = ''
  let max = ''
  for (const e of entries) {
    const slash = e.key.indexOf('/', 5)
    const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
    if (rid === last) continue
    n++
    last = rid
    if (n === 1 || rid < first) first = rid
    if (rid > max) max = rid
  }
  return { roots: n, first, last: max }
}

/**
 * The committed changes as entries, without the per-key tombstones a root
 * tombstone of the same commit already implies (DeleteRoot logs one per
 * removed key): a peer applying the root tombstone drops those keys anyway.
 */
function withoutShadowed (committed: readonly CommittedChange[]): RemoteEntry[] {
  const roots = new Map<string, string>()
  for (const c of committed) if (c.value === null && c.key.indexOf('/', 5) < 0) roots.set(c.key, c.hlc + c.origin)
  const out: RemoteEntry[] = []
  for (const { key, value, hlc, origin } of committed) {
    if (value === null && roots.size > 0) {
      const slash = key.indexOf('/', 5)
      if (slash > 0 && roots.get(key.slice(0, slash)) === hlc + origin) continue
    }
    out.push({ key, value, hlc, origin })
  }
  return out
}
