/**
 * The bulk path: how a node takes many pages of a peer's entries at once (a
 * join's full resync today, a reconciliation's pages later), fed one page
 * at a time by whatever transfers them.
 *
 * - Each page is one transaction, its roots in key order: those the store
 *   holds nothing of inserted as they are (bulk-insert.ts), the others
 *   merged last-writer-wins entry by entry exactly as applyBatch does
 *   (remote-apply.ts `applyBulk`).
 * - Derived work is deferred: the inserted roots' range fingerprints and
 *   CIDs are built when the transfer's last page is in (bulk-derive.ts);
 *   the indexers are told once per transaction
 *   (RecordIndexer.onBulkApply) instead of per record, so the apply never
 *   waits on search's backlog; when the transfer has ended, they are
 *   told (onBulkEnd), and whether every
 *   transaction's roots came after the previous one's. Search builds its
 *   index once, in key order, on its own thread behind the arriving
 *   records, and completes it after the last page (answers stay right
 *   meanwhile; search says it is building).
 * - A record is never half applied: a page may end inside a root (pages are
 *   cut by bytes), so the entries of the page's last root are held back and
 *   applied with the next page (or with the last one). What is held back is
 *   kept in the store (`idx:bulk/carry`), written in the same transaction
 *   as the page: whoever moves its cursor past a page after the page's
 *   apply settled loses nothing when killed, and a page taken again after a
 *   restart holds back the same root again.
 * - Progress (keys and records taken, the rate, time left when the expected
 *   number of records is known) is counted here for the mesh status.
 */
import type { Logger } from '../common/index.js'
import type { Tx } from '../kv/index.js'
import { BULK_FINISH_KEY } from './bulk-derive.js'
import type { RemoteApplier } from './remote-apply.js'
import { checkRemoteEntry, type RemoteEntry } from './remote-entry.js'
import type { ApplyResult } from './types.js'
import type { Mutator } from './mutation.js'

/** Where the held-back entries of a page's last root are kept (record-layer namespace, never replicated). */
export const BULK_CARRY_KEY = 'idx:bulk/carry'

export interface BulkPageOptions {
  /** The transfer's last page: nothing is held back, and the deferred derived work is built after it. */
  done?: boolean
  /** How many records the peer holds (for time left), when the transfer knows it. */
  expectedRecords?: number
  /**
   * The page's entries already passed `checkRemoteEntry` (remote-apply.ts `ApplyBatchOptions.checked`); entries held back from an earlier
   * page are checked here.
   */
  checked?: boolean
}

/** A bulk transfer as it goes (the mesh status's `join`). */
export interface BulkProgress {
  /** True from a bulk page until the transfer's last page. */
  active: boolean
  /** When the transfer began (ms since 1970), null before any. */
  startedAt: number | null
  /** When it ended (its last page applied), null while it runs or before any. */
  endedAt: number | null
  /** Entries (keys, tombstones) received in its pages. */
  keys: number
  /** Roots applied whole. */
  records: number
  /** Roots applied per second since it began. */
  recordsPerSecond: number
  /** The peer's records, when known. */
  expectedRecords: number | null
  /** Seconds left at the rate so far, when the expected records are known. */
  secondsLeft: number | null
}

const ridOf = (key: string): string => {
  const slash = key.indexOf('/', 5)
  return slash < 0 ? key.slice(5) : key.slice(5, slash)
}

export class BulkApplier {
  private carry: RemoteEntry[] | undefined
  private active = false
  private startedAt: number | null = null
  private endedAt: number | null = null
  private keys = 0
  private records = 0
  private expected: number | null = null
  /** The greatest root applied in this transfer, and whether every transaction's roots came after the previous one's. */
  private lastRid: string | undefined
  private ordered = true

  constructor (
    private readonly remote: RemoteApplier,
    private readonly mutator: Mutator,
    private readonly load: () => string | undefined,
    private readonly now: () => number,
    private readonly d: { derive: () => Promise<number>, finishDue: () => boolean, log: Logger }
  ) {}

  /** True while a transfer is under way (its last page not yet applied) or entries are held back from one. */
  get running (): boolean {
    return this.active || this.held().length > 0
  }

  progress (): BulkProgress {
    const end = this.endedAt ?? this.now()
    const seconds = this.startedAt === null ? 0 : Math.max(0.001, (end - this.startedAt) / 1000)
    const rate = this.startedAt === null ? 0 : this.records / seconds
    const left = this.expected === null || !this.active ? (this.active ? null : 0) : rate <= 0 ? null : Math.max(0, this.expected - this.records) / rate
    return {
      active: this.active,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      keys: this.keys,
      records: this.records,
      recordsPerSecond: Math.round(rate),
      expectedRecords: this.expected,
      secondsLeft: left === null ? null : Math.round(left)
    }
  }

  /**
   * Applies one page (one transaction). Entries are checked as applyBatch
   * checks them (a malformed one refuses the page before anything is
   * written). The entries of the page's last root are held back, unless
   * `done`; with `done`, the indexers are told the transfer ended once it
   * has committed.
   */
  async apply (entries: readonly RemoteEntry[], opts: BulkPageOptions = {}): Promise<ApplyResult> {
    const done = opts.done === true
    if (opts.expectedRecords !== undefined) this.expected = opts.expectedRecords
    if (!this.active) {
      this.active = true
      if (this.startedAt === null || this.endedAt !== null) {
        this.startedAt = this.now()
        this.endedAt = null
        this.keys = 0
        this.records = 0
        this.lastRid = undefined
        this.ordered = true
      }
    }
    this.keys += entries.length
    const before = this.held()
    const checked = opts.checked === true
    // Held back from an earlier page (or read back after a restart): not covered by this page's `checked`.
    if (checked) for (const e of before) checkRemoteEntry(e)
    const all = before.length === 0 ? entries : [...before, ...entries]
    let apply: readonly RemoteEntry[] = all
    let keep: RemoteEntry[] = []
    if (!done && entries.length > 0) {
      const last = ridOf(entries[entries.length - 1].key)
      apply = all.filter(e => ridOf(e.key) !== last)
      keep = all.filter(e => ridOf(e.key) === last)
    }
    const roots = new Set<string>()
    let lo: string | undefined
    let hi: string | undefined
    for (const e of apply) {
      const rid = ridOf(e.key)
      roots.add(rid)
      if (lo === undefined || rid < lo) lo = rid
      if (hi === undefined || rid > hi) hi = rid
    }
    const carryChanged = keep.length !== before.length || keep.some((e, i) => e !== before[i])
    const r = await this.remote.applyBulk(apply, (tx: Tx) => {
      // The transfer's end is due from this commit on, even if the node stops before it is built.
      if (done) tx.put(BULK_FINISH_KEY, '1')
      if (!carryChanged) return
      if (keep.length === 0) tx.delete(BULK_CARRY_KEY)
      else tx.put(BULK_CARRY_KEY, JSON.stringify(keep))
    }, checked)
    this.carry = keep
    this.records += roots.size
    if (lo !== undefined && this.lastRid !== undefined && lo <= this.lastRid) this.ordered = false
    if (hi !== undefined && (this.lastRid === undefined || hi > this.lastRid)) this.lastRid = hi
    if (done) await this.finish()
    return r
  }

  /** True when a transfer's last page is in and what it derives is still to build (a node stopped before it was). */
  get finishDue (): boolean {
    return this.d.finishDue()
  }

  /** The transfer ended: what its inserted roots wait for is built (bulk-derive.ts), then the indexers complete their work. */
  private async finish (): Promise<void> {
    const roots = await this.d.derive()
    this.active = false
    this.endedAt = this.now()
    if (roots > 0) this.d.log.info('bulk transfer ended: range fingerprints and the cid index built', { roots, ms: this.now() - (this.startedAt ?? this.now()) })
    this.mutator.bulkEnded(this.ordered)
  }

  private held (): RemoteEntry[] {
    if (this.carry === undefined) {
      const raw = this.load()
      let parsed: RemoteEntry[] = []
      try {
        const o = raw === undefined ? [] : JSON.parse(raw) as unknown
        if (Array.isArray(o)) parsed = o as RemoteEntry[]
      } catch {
        // Unreadable: nothing held (its root comes again with the next full transfer).
      }
      this.carry = parsed
    }
    return this.carry
  }
}
