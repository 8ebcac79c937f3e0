/**
 * Entries from peers: merged last-writer-wins by (hlc, origin) through the
 * same mutation path as local writes, so both keep exactly the same derived
 * state. A call with a malformed entry is refused whole, before anything is
 * written; entries more than `maxClockDriftMs` ahead of local wall time are
 * refused, counted, and never advance the clock.
 *
 * Entries are checked when a call starts and read again when their
 * transaction runs (no copy of a large page is kept): a caller must not
 * change them until the call's promise settles.
 *
 * Two entry points with the same rules, entry for entry:
 * - `applyRemote`: one transaction (a gossip frame).
 * - `applyBatch`: many roots at once (a pulled page, a full resync, a bulk
 *   import), in transactions of 100 roots each unless told otherwise,
 *   roots in key order.
 * - `applyBulk`: one transaction of many roots in key order, the indexers
 *   told once (onBulkApply) instead of per record, and no wait for their
 *   backlog: the bulk path of a join (bulk-apply.ts). Roots the store holds
 *   nothing of are inserted as they are (bulk-insert.ts), the others merged.
 */
import type { Tx } from '../kv/index.js'
import { persistHlc, type RecordContext } from './context.js'
import type { FieldChange } from './mutation.js'
import type { RecordId } from './record-id.js'
import { checkRemoteEntry, newEntryChecks, type RemoteEntry } from './remote-entry.js'
import type { ApplyResult } from './types.js'
import { VER } from './layout.js'
import { VersionMap, makeVersion, type Version } from './versions.js'
import { insertFresh, stage, type Staged } from './bulk-insert.js'

/**
 * Roots per transaction in applyBatch. Measured on ~40-field records: 100
 * roots cost about 12 % less per record than 2,000 (a smaller transaction's
 * pages stay in SQLite's page cache), and already amortise the commit over
 * six times the records a group commit of 16 writers holds.
 */
const BATCH_ROOTS = 100
/** Entries per transaction in applyBatch, whatever the roots: bounds a commit when roots are large. */
const BATCH_ENTRIES = 10_000

/**
 * A root's part of a call: its newest root tombstone, and where its field
 * entries are in the call's list. Their changes are made when the root's
 * transaction runs, so a page of many roots does not keep a second object
 * per entry alive until its last transaction.
 */
interface Slot { root?: Version, at: number[] }

interface Prepared {
  byRoot: Map<RecordId, Slot>
  refused: number
  maxHlc: string | undefined
}

export interface ApplyBatchOptions {
  /** Roots per transaction (default 100). */
  rootsPerTransaction?: number
  /** Entries per transaction, a root never split (default 10,000). */
  entriesPerTransaction?: number
  /** Every entry already passed `checkRemoteEntry` (the mesh screens what it receives before queueing it): not checked again. */
  checked?: boolean
}

/** The root and field of a checked entry's key (`file:<rid>/<field>`, or `file:<rid>` for a root tombstone). */
function splitKey (key: string): { rid: RecordId, field?: string } {
  const slash = key.indexOf('/', 5)
  return slash < 0 ? { rid: key.slice(5) as RecordId } : { rid: key.slice(5, slash) as RecordId, field: key.slice(slash + 1) }
}

export class RemoteApplier {
  private refusedTotal = 0

  constructor (private readonly ctx: RecordContext, private readonly maxDrift: number) {}

  /** Remote versions refused for clock drift since start. */
  get driftRefused (): number {
    return this.refusedTotal
  }

  /**
   * The entries that win over what the store holds now, by root, read in
   * one snapshot outside any write. A version never goes back, so an entry
   * that does not win now cannot win when a write runs: a caller may skip
   * the rest without changing the outcome. Entries are not validated here.
   *
   * An entry at the version the store holds is the same write again (most
   * of a pulled page: it came by push too) and is left out unread, unless
   * `ties`: then its value is compared with the stored one and it stays
   * when it wins the tie (versions.ts `tieWins`). Reconciliation asks for
   * that: it is what repairs a version that came with two values.
   */
  newerByRoot (entries: readonly RemoteEntry[], ties = false): Map<string, RemoteEntry[]> {
    const kv = this.ctx.kv
    return kv.read(() => {
      const maps = new Map<string, VersionMap>()
      const byRoot = new Map<string, RemoteEntry[]>()
      for (const e of entries) {
        const slash = e.key.indexOf('/', 5)
        const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
        let vm = maps.get(rid)
        if (vm === undefined) {
          vm = VersionMap.parse(kv.get(VER + rid))
          maps.set(rid, vm)
        }
        const v = makeVersion(e.hlc, e.origin)
        const field = slash < 0 ? undefined : e.key.slice(slash + 1)
        const wins = field === undefined
          ? vm.root === undefined || v > vm.root
          : vm.beats(field, v, e.value, () => (ties ? kv.get(e.key) : e.value ?? undefined))
        if (!wins) continue
        const list = byRoot.get(rid)
        if (list === undefined) byRoot.set(rid, [e])
        else list.push(e)
      }
      return byRoot
    })
  }

  /**
   * Each key takes the entry iff its (hlc, origin) is greater than what is
   * held (root tombstones shadow older keys). One transaction.
   */
  async applyRemote (entries: readonly RemoteEntry[]): Promise<ApplyResult> {
    const p = this.prepare(entries, false)
    const total = entries.length - p.refused
    const applied = await this.ctx.write(tx => this.applyRoots(tx, [...p.byRoot], entries, p.maxHlc))
    return { applied, skipped: total - Math.min(applied, total), refused: p.refused }
  }

  /**
   * The same merge as applyRemote over any number of entries: grouped by
   * root, roots in key order (appends stay sequential in the B-tree), one
   * transaction per `rootsPerTransaction` roots or 10,000 entries. Each
   * transaction waits for the indexers' backlog first, as every write does.
   * Not atomic as a whole: a crash keeps the transactions already
   * committed, whole roots only, and applying the same entries again is
   * harmless (the merge is idempotent).
   */
  async applyBatch (entries: readonly RemoteEntry[], opts: ApplyBatchOptions = {}): Promise<ApplyResult> {
    const maxRoots = Math.max(1, opts.rootsPerTransaction ?? BATCH_ROOTS)
    const maxEntries = Math.max(1, opts.entriesPerTransaction ?? BATCH_ENTRIES)
    const p = this.prepare(entries, opts.checked === true)
    const total = entries.length - p.refused
    const roots = [...p.byRoot].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    let applied = 0
    for (let i = 0; i < roots.length;) {
      let j = i
      let n = 0
      while (j < roots.length && j - i < maxRoots && (n === 0 || n + roots[j][1].at.length <= maxEntries)) {
        n += roots[j][1].at.length
        j++
      }
      const chunk = roots.slice(i, j)
      applied += await this.ctx.write(tx => this.applyRoots(tx, chunk, entries, p.maxHlc))
      i = j
    }
    return { applied, skipped: total - Math.min(applied, total), refused: p.refused }
  }

  /**
   * The merge of applyBatch in one transaction, roots in key order, as a
   * bulk apply: the indexers are told once (RecordIndexer.onBulkApply, with
   * its first and last root) and not per record, and the write does not
   * wait for their backlog. `also` runs in the same transaction after the
   * roots (the bulk path's own bookkeeping). `checked` as in applyBatch.
   */
  async applyBulk (entries: readonly RemoteEntry[], also?: (tx: Tx) => void, checked = false): Promise<ApplyResult> {
    const p = this.prepare(entries, checked)
    const total = entries.length - p.refused
    const roots = [...p.byRoot].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    const applied = await this.ctx.kv.write(tx => {
      const span = roots.length === 0 ? undefined : { first: roots[0][0], last: roots[roots.length - 1][0] }
      const n = span === undefined ? 0 : this.ctx.mutator.inBulk(tx, span, () => this.insertOrMerge(tx, roots, entries, p.maxHlc))
      also?.(tx)
      return n
    })
    return { applied, skipped: total - Math.min(applied, total), refused: p.refused }
  }

  /**
   * Inside a bulk transaction: the roots this store holds nothing of (one
   * range read of the page's version rows tells) are inserted as they are
   * (bulk-insert.ts), the others merged as every remote entry is.
   */
  private insertOrMerge (tx: Tx, roots: ReadonlyArray<[RecordId, Slot]>, entries: readonly RemoteEntry[], maxHlc: string | undefined): number {
    const held = new Set(tx.keys(VER + roots[0][0], VER + roots[roots.length - 1][0] + '\u0000').map(k => k.slice(VER.length)))
    const rows: Array<readonly [string, string, undefined]> = []
    const staged: Staged[] = []
    const merge: Array<[RecordId, Slot]> = []
    let applied = 0
    for (const root of roots) {
      const fresh = held.has(root[0]) ? undefined : insertFresh(tx, root[0], root[1].root, entries, root[1].at, rows)
      if (fresh === undefined) {
        merge.push(root)
        continue
      }
      staged.push(fresh.staged)
      applied += fresh.versioned
    }
    tx.putMany(rows)
    stage(tx, staged)
    return applied + this.applyRoots(tx, merge, entries, maxHlc)
  }

  /**
   * Checks every entry (throws on the first malformed one) unless the
   * caller did (`checked`), refuses drifted ones, groups the rest by root.
   */
  private prepare (entries: readonly RemoteEntry[], checked: boolean): Prepared {
    const { ctx } = this
    const byRoot = new Map<RecordId, Slot>()
    let refused = 0
    let maxHlc: string | undefined
    const seen = newEntryChecks()
    const ahead = new Map<string, boolean>()
    // A record's entries come together and share their clock: the last one's results are reused.
    let lastHlc: string | undefined
    let lastTooFar = false
    let lastRid: string | undefined
    let slot: Slot | undefined
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]
      const parsed = checked ? splitKey(e.key) : checkRemoteEntry(e, seen)
      if (e.hlc !== lastHlc) {
        let tooFar = ahead.get(e.hlc)
        if (tooFar === undefined) ahead.set(e.hlc, tooFar = ctx.hlc.aheadOfWall(e.hlc) > this.maxDrift)
        lastTooFar = tooFar
        lastHlc = e.hlc
        // A refused entry never advances the clock.
        if (!tooFar && (maxHlc === undefined || e.hlc > maxHlc)) maxHlc = e.hlc
      }
      if (lastTooFar) { refused++; continue }
      if (parsed.rid !== lastRid || slot === undefined) {
        slot = byRoot.get(parsed.rid)
        if (slot === undefined) { slot = { at: [] }; byRoot.set(parsed.rid, slot) }
        lastRid = parsed.rid
      }
      if (parsed.field === undefined) {
        const version = makeVersion(e.hlc, e.origin)
        if (slot.root === undefined || version > slot.root) slot.root = version
      } else {
        slot.at.push(i)
      }
    }
    this.refusedTotal += refused
    if (refused > 0) ctx.log.warn('refused remote versions ahead of local clock', { refused, maxDriftMs: this.maxDrift })
    return { byRoot, refused, maxHlc }
  }

  /** Inside a write: merges each root's entries (checked by prepare); returns how many keys took a new version. */
  private applyRoots (tx: Tx, roots: ReadonlyArray<[RecordId, Slot]>, entries: readonly RemoteEntry[], maxHlc: string | undefined): number {
    const { ctx } = this
    let applied = 0
    let hlc: string | undefined
    let origin: string | undefined
    let version = ''
    for (const [rid, slot] of roots) {
      const fieldAt = 5 + rid.length + 1 // file:<rid>/<field>
      const changes = new Array<FieldChange>(slot.at.length)
      for (let k = 0; k < slot.at.length; k++) {
        const e = entries[slot.at[k]]
        if (e.hlc !== hlc || e.origin !== origin) {
          hlc = e.hlc
          origin = e.origin
          version = makeVersion(hlc, origin)
        }
        changes[k] = { field: e.key.slice(fieldAt), value: e.value, version, key: e.key }
      }
      // Within one call the newest version of a key decides, whatever the order it came in. (A record's
      // entries usually share one version: already in order, and a stable sort would leave them as they are.)
      if (!inVersionOrder(changes)) changes.sort((a, b) => (a.version < b.version ? -1 : a.version > b.version ? 1 : 0))
      applied += ctx.mutator.mutate(tx, rid, changes, { remote: true, rootTombstone: slot.root }).touched
    }
    // While the node's own clock is out of bound its wall clock must not reach the HLC (clock-gate.ts).
    if (maxHlc !== undefined) ctx.hlc.observe(maxHlc, ctx.clockGate?.() === undefined)
    persistHlc(ctx, tx)
    return applied
  }
}

/** True when no change has a newer version than one after it. */
function inVersionOrder (changes: readonly FieldChange[]): boolean {
  for (let i = 1; i < changes.length; i++) if (changes[i - 1].version > changes[i].version) return false
  return true
}
