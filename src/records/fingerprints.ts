/**
 * Range fingerprints of the replicated range: the digest and the
 * fingerprint of any range are cheap reads (the mesh's set reconciliation,
 * src/mesh/protocol/reconcile.ts, and `GET /api/mesh/digest`).
 *
 * Every root has a position, the first 32 bits of SHA-256(rid) (8 hex), and
 * a hash, the first 128 bits of SHA-256 over its id, its version map
 * (folded and canonical: versions.ts) and its live fields' names and values in name order:
 * equal exactly when two stores hold the same keys, values, tombstones and
 * versions of the root. The id is in it so that two roots of equal content
 * (the same fields written in one batch) do not cancel out of a range's sum:
 * {X} on one side and {Y} on the other would otherwise sum alike.
 *
 * A range is a hex prefix of positions (0 to 8 hex digits: "" is
 * everything); its fingerprint is the sum mod 2^128 of its roots' hashes
 * with the count of its roots (and of their versioned keys).
 *
 * Rows (derived and node-local, under `idx:`, never replicated):
 * - `idx:fpr/<pos><rid>` = `<hash 32 hex> <keys>`: one per root that has a
 *   version map.
 * - `idx:fpb/<4 hex>` = `<sum 32 hex> <roots> <keys>`: the sum of the roots
 *   whose position starts with it (65,536 buckets at most), written when
 *   the store closes, valid while `idx:fp/buckets` (= FP_FORMAT) is there.
 * - `idx:fp/ready` = the rows' format (FP_FORMAT): the root rows describe
 *   every root (absent or another format: a store that predates them,
 *   rebuilt at open).
 * - `idx:fp/folded` = a change-log id: every change up to it is folded in.
 *
 * Off the write transaction: a write only notes, after it commits, the
 * roots it changed and their new state (`changed`). The changed roots are
 * folded in later, many at once (`fold`: in position order, so the root
 * rows' pages are written once for all the roots they hold, with the
 * `folded` mark), when `FOLD_ROOTS` roots or `FOLD_ENTRIES` change-log
 * entries wait, before any read of the fingerprints (so the digest is
 * always exact: `settle`), and when the store closes. A root changed again
 * before it is folded is hashed once. After a crash, the roots the change
 * log names after the `folded` mark are folded at open (the change log is
 * written in the same transaction as every change it names); if the log no
 * longer reaches back to the mark, the rows are rebuilt.
 *
 * In memory: the buckets and the sums over their shorter prefixes
 * (fingerprint-tree.ts), moved by each fold after it commits. At open the
 * buckets come from their rows when the store was closed cleanly, and are
 * summed from the root rows otherwise (a crash, a copy of a running store's
 * file: about 0.3 s per 200,000 roots); `idx:fp/buckets` is removed at
 * open, before any write, so bucket rows are never taken for current after
 * writes they missed. Prefixes of 5 to 8 digits are summed from the root
 * rows of their bucket.
 */
import type { Logger } from '../common/index.js'
import { prefixEnd, type KvStore, type Tx } from '../kv/index.js'
import { changedRootsSince } from './change-feed.js'
import { META_EVENTS } from './change-log.js'
import { BUCKET_DIGITS, FingerprintTree, ZERO_SUM, addLimbs, hexOf, limbsOf, subLimbs, type Delta } from './fingerprint-tree.js'
import { VER } from './layout.js'
import { POSITION_DIGITS, describeRoot, rootHash, rootPosition, versionedKeys, type LiveFields } from './root-hash.js'
import type { VersionMap } from './versions.js'

export { sumHex } from './fingerprint-tree.js'
export { rootHash, rootPosition, versionedKeys, POSITION_DIGITS } from './root-hash.js'

export const FP_ROOT = 'idx:fpr/'
export const FP_BUCKET = 'idx:fpb/'
export const FP_READY = 'idx:fp/ready'
/** The bucket rows are current (written at a clean close; removed at open). */
export const FP_BUCKETS_CURRENT = 'idx:fp/buckets'
/** Every change up to this change-log id is folded into the rows ('0-0': from the log's start). */
export const FP_FOLDED = 'idx:fp/folded'
/** The rows' format: 2 has the root's id in its hash (1 did not). A store whose rows are of another format rebuilds them at open. */
export const FP_FORMAT = '2'
/** During a rebuild: `<format> <last root done>` (the rebuild resumes after it if the format is this one's). */
export const FP_REBUILD = 'idx:fp/rebuild'

/** Roots a rebuild writes per transaction. */
const REBUILD_ROOTS = 2_000
/**
 * Changed roots waiting that make a fold due. Measured on 40-field records
 * into a store of 10,000: folding a few hundred roots at a time writes each
 * page of root rows once for many roots, where a root row written in each
 * write's own transaction dirtied a page of its own every time.
 */
const FOLD_ROOTS = 1_000
/**
 * Change-log entries since the last fold that make one due, whatever the
 * roots: the `folded` mark stays well within the log's retention (100,000
 * entries by default), so a crash is repaired from the log, not by a rebuild.
 */
const FOLD_ENTRIES = 20_000
const LOG_START = '0-0'
const HEX_RE = /^[0-9a-f]{0,8}$/

export interface RangeFingerprint {
  /** Sum mod 2^128 of the hashes of the roots in the range, 32 hex. */
  fp: string
  /** Roots in the range. */
  roots: number
  /** Versioned keys of those roots (live keys, tombstones, root tombstones). */
  keys: number
}

/** A root of a range: its id and its hash (32 hex). */
export interface RootHash { rid: string, hash: string }

function parseRootRow (v: string | undefined): { hash: string, keys: number } | undefined {
  if (v === undefined) return undefined
  const sp = v.indexOf(' ')
  return { hash: v.slice(0, sp), keys: Number(v.slice(sp + 1)) }
}

function parseBucketRow (v: string): { sum: string, roots: number, keys: number } {
  const [sum, roots, keys] = v.split(' ')
  return { sum, roots: Number(roots), keys: Number(keys) }
}

/** A changed root's state as its last commit left it, waiting to be folded in. */
interface Changed {
  /** Its hash and versioned keys (fingerprints.ts `rootHash`); undefined: it has no version map left. */
  now: { hash: string, keys: number } | undefined
  /** It had no version map when it was first noted, so it has no row: nothing to read. */
  fresh: boolean
  /** Bumped by every commit that changes it: a fold forgets it only if no commit changed it since the fold read it. */
  seq: number
}

export class Fingerprints {
  private readonly tree = new FingerprintTree()
  /** Roots changed by commits and not yet folded in, by root. */
  private readonly pending = new Map<string, Changed>()
  private seq = 0
  /** The newest change-log id of a committed change (its root is folded or waiting). */
  private through: string | undefined
  /** Change-log entries committed since the last fold was queued. */
  private entries = 0
  /** A fold is queued with the writes and has not committed yet. */
  private queued = false

  constructor (private readonly kv: KvStore, private readonly log: Logger) {}

  /**
   * At open: rebuilds the rows of a store that predates them, or whose rows
   * are of another format or were invalidated; after a crash folds in the
   * roots changed since the last fold; then loads the tree (from the bucket
   * rows after a clean close, else from the root rows), and folds and writes
   * the buckets back when the store closes.
   */
  open (): void {
    const kv = this.kv
    let rebuild = kv.get(FP_READY) !== FP_FORMAT
    const clean = !rebuild && kv.get(FP_BUCKETS_CURRENT) === FP_FORMAT
    if (!rebuild && !clean && !this.recover()) {
      kv.writeSync(tx => { tx.delete(FP_READY) })
      rebuild = true
    }
    if (rebuild) this.rebuild()
    if (clean) {
      this.load()
    } else {
      const t0 = Date.now()
      const roots = this.loadFromRoots()
      const ms = Date.now() - t0
      if (ms >= 1000) this.log.info('range fingerprints summed from their roots (the store was not closed cleanly)', { roots, ms })
    }
    this.through = kv.streamHead(META_EVENTS)
    kv.writeSync(tx => {
      tx.delete(FP_BUCKETS_CURRENT)
      tx.put(FP_FOLDED, this.through ?? LOG_START)
    })
    kv.beforeClose(() => {
      this.settle()
      this.flush()
    })
  }

  /**
   * Inside a mutation's write: `rid`'s version map is now `verSerialized`
   * (undefined: the root has none left) with these live fields; `fresh`:
   * it had no version map before; `logId`: the last change-log id the write
   * appended for it. Noted after the write commits, folded in later.
   */
  changed (tx: Tx, rid: string, vm: VersionMap, verSerialized: string | undefined, fields: LiveFields, fresh: boolean, logId: string | undefined,
    logEntries: number): void {
    const keys = versionedKeys(vm)
    tx.afterCommit(() => {
      // Hashed now, while its fields are at hand: what waits for the fold is small (a root's fields kept until then
      // were garbage the collector had to carry into its old generation).
      const now = verSerialized === undefined ? undefined : { hash: rootHash(rid, verSerialized, fields), keys }
      const had = this.pending.get(rid)
      this.pending.set(rid, { now, fresh: had === undefined ? fresh : had.fresh, seq: ++this.seq })
      if (logId !== undefined) this.through = logId
      this.entries += logEntries
      if (this.pending.size >= FOLD_ROOTS || this.entries >= FOLD_ENTRIES) this.queueFold()
    })
  }

  /** Folds in what waits, in a write of its own queued with the others (it rides their transaction). */
  private queueFold (): void {
    if (this.queued) return
    this.queued = true
    this.entries = 0
    this.kv.write(tx => { this.fold(tx) }).catch((err: unknown) => {
      // Not folded now: the roots stay noted, and the next read, fold or close folds them.
      this.log.warn('folding range fingerprints failed', { err })
    }).finally(() => { this.queued = false })
  }

  /** Folds in every root noted so far, now, in a transaction of its own: what every read of the fingerprints does first. */
  settle (): void {
    if (this.pending.size === 0) return
    if (this.kv.inTransaction) throw new Error('range fingerprints read inside a transaction with roots not folded in')
    this.kv.writeSync(tx => { this.fold(tx) })
  }

  /**
   * Inside a write: the noted roots' rows, in position order, and the
   * `folded` mark; the tree moves and the roots are forgotten after commit
   * (those changed again meanwhile stay noted, with a row now).
   */
  private fold (tx: Tx): void {
    if (this.pending.size === 0) return
    const through = this.through
    const work = [...this.pending].map(([rid, c]) => ({ rid, c, pos: rootPosition(rid) }))
    work.sort((a, b) => (a.pos < b.pos ? -1 : a.pos > b.pos ? 1 : a.rid < b.rid ? -1 : 1))
    const deltas: Delta[] = []
    for (const { rid, c, pos } of work) {
      const d = this.writeRoot(tx, rid, pos, c.now, c.fresh)
      if (d !== undefined) deltas.push(d)
    }
    if (through !== undefined) tx.put(FP_FOLDED, through)
    tx.afterCommit(() => {
      for (const d of deltas) this.tree.move(d)
      for (const { rid, c } of work) {
        const now = this.pending.get(rid)
        if (now === undefined) continue
        if (now.seq === c.seq) this.pending.delete(rid)
        else now.fresh = false
      }
    })
  }

  /** Writes a root's row (`now` undefined: it has none now); the delta to move the tree by, or undefined when the row did not change. */
  private writeRoot (tx: Tx, rid: string, pos: string, now: { hash: string, keys: number } | undefined, fresh: boolean): Delta | undefined {
    const rowKey = FP_ROOT + pos + rid
    const oldRow = fresh ? undefined : tx.get(rowKey)
    const old = parseRootRow(oldRow)
    if (old?.hash === now?.hash && old?.keys === now?.keys) return undefined
    if (now === undefined) tx.delete(rowKey)
    else tx.putMany([[rowKey, `${now.hash} ${now.keys}`, oldRow]]) // the old row was just read: no read before the write
    return {
      bucket: parseInt(pos.slice(0, BUCKET_DIGITS), 16),
      sum: subLimbs(limbsOf(now?.hash ?? ZERO_SUM), limbsOf(old?.hash ?? ZERO_SUM)),
      roots: (now === undefined ? 0 : 1) - (old === undefined ? 0 : 1),
      keys: (now?.keys ?? 0) - (old?.keys ?? 0)
    }
  }

  /**
   * The root rows of roots inserted in bulk (bulk-insert.ts: their hashes
   * computed as they were inserted), written in position order, `chunk`
   * roots per transaction queued with the other writes. A root noted since
   * (changed after it was inserted), or whose row a fold has written, is
   * left to the fold: it holds the root's current state.
   */
  async addStaged (roots: ReadonlyArray<{ rid: string, hash: string, keys: number }>, chunk: number): Promise<void> {
    const work = roots.map(r => ({ ...r, pos: rootPosition(r.rid) }))
    work.sort((a, b) => (a.pos < b.pos ? -1 : a.pos > b.pos ? 1 : a.rid < b.rid ? -1 : 1))
    for (let i = 0; i < work.length; i += chunk) {
      const part = work.slice(i, i + chunk)
      await this.kv.write(tx => {
        const deltas: Delta[] = []
        for (const r of part) {
          if (this.pending.has(r.rid)) continue
          const key = FP_ROOT + r.pos + r.rid
          if (tx.get(key) !== undefined) continue
          const d = this.writeRoot(tx, r.rid, r.pos, { hash: r.hash, keys: r.keys }, true)
          if (d !== undefined) deltas.push(d)
        }
        tx.afterCommit(() => { for (const d of deltas) this.tree.move(d) })
      })
    }
  }

  /**
   * After a crash: the roots the change log names after the `folded` mark
   * get their rows from their stored state. False when the log no longer
   * reaches back to the mark (the rows are then rebuilt).
   */
  private recover (): boolean {
    const mark = this.kv.get(FP_FOLDED)
    // A store last written by a version that kept the rows in every write's transaction: they are exact.
    if (mark === undefined) return true
    const roots = changedRootsSince(this.kv, mark, Infinity)
    if (roots === undefined) {
      this.log.warn('range fingerprints: the change log no longer reaches back to the last fold; rebuilding them')
      return false
    }
    if (roots.size === 0) return true
    const sorted = [...roots].map(rid => ({ rid, pos: rootPosition(rid) })).sort((a, b) => (a.pos < b.pos ? -1 : a.pos > b.pos ? 1 : a.rid < b.rid ? -1 : 1))
    this.kv.writeSync(tx => { for (const { rid, pos } of sorted) this.writeRoot(tx, rid, pos, describeRoot(tx, rid), false) })
    this.log.info('range fingerprints: folded in the roots changed since the last fold (the store was not closed cleanly)', { roots: roots.size })
    return true
  }

  /** Marks the rows stale (a repair that rewrote `ver:` rows outside the mutation path): the next open rebuilds them. */
  static invalidate (tx: Pick<Tx, 'delete'>): void {
    tx.delete(FP_READY)
    tx.delete(FP_BUCKETS_CURRENT)
  }

  /** The whole range: what the digest is made of. */
  total (): RangeFingerprint {
    this.settle()
    return this.tree.node(0, 0)
  }

  /** The fingerprint of the roots whose position starts with `prefix` (0 to 8 hex digits). */
  range (prefix: string): RangeFingerprint {
    if (!HEX_RE.test(prefix)) throw new RangeError(`not a position prefix: ${prefix}`)
    this.settle()
    if (prefix.length <= BUCKET_DIGITS) return this.tree.node(prefix.length, prefix === '' ? 0 : parseInt(prefix, 16))
    const rows = this.kv.range(FP_ROOT + prefix, prefixEnd(FP_ROOT + prefix))
    const acc = [0, 0, 0, 0]
    let keys = 0
    for (const [, v] of rows) {
      const r = parseRootRow(v)!
      addLimbs(acc, 0, limbsOf(r.hash))
      keys += r.keys
    }
    return { fp: hexOf(acc), roots: rows.length, keys }
  }

  /** The roots whose position starts with `prefix`, in position order, at most `limit`. */
  items (prefix: string, limit = Infinity): RootHash[] {
    if (!HEX_RE.test(prefix)) throw new RangeError(`not a position prefix: ${prefix}`)
    this.settle()
    const lo = FP_ROOT + prefix
    const rows = Number.isFinite(limit) ? this.kv.range(lo, prefixEnd(lo), limit) : this.kv.range(lo, prefixEnd(lo))
    return rows.map(([k, v]) => ({ rid: k.slice(FP_ROOT.length + POSITION_DIGITS), hash: v.slice(0, v.indexOf(' ')) }))
  }

  /** Writes the buckets that differ from their rows and marks the rows current: the store's last write before it closes. */
  private flush (): void {
    this.kv.writeSync(tx => {
      const rows = new Map(tx.range(FP_BUCKET, prefixEnd(FP_BUCKET)))
      for (const [b, row] of this.tree.buckets()) {
        const key = FP_BUCKET + b.toString(16).padStart(BUCKET_DIGITS, '0')
        const old = rows.get(key)
        if (row === old) continue
        if (row === undefined) tx.delete(key)
        else tx.put(key, row)
      }
      tx.put(FP_BUCKETS_CURRENT, FP_FORMAT)
    })
  }

  /** The buckets from their rows, then the levels above them. */
  private load (): void {
    this.tree.clear()
    for (const [k, v] of this.kv.range(FP_BUCKET, prefixEnd(FP_BUCKET))) {
      const b = parseBucketRow(v)
      this.tree.setBucket(parseInt(k.slice(FP_BUCKET.length), 16), b.sum, b.roots, b.keys)
    }
    this.tree.sumLevels()
  }

  /** The buckets summed from every root's row, then the levels above them; returns how many roots. */
  private loadFromRoots (): number {
    this.tree.clear()
    let roots = 0
    this.kv.read(() => {
      for (const [k, v] of this.kv.range(FP_ROOT, prefixEnd(FP_ROOT))) {
        const r = parseRootRow(v)!
        this.tree.addToBucket(parseInt(k.slice(FP_ROOT.length, FP_ROOT.length + BUCKET_DIGITS), 16), r.hash, r.keys)
        roots++
      }
    })
    this.tree.sumLevels()
    return roots
  }

  /**
   * Describes every root, in batches of 2,000 roots per transaction,
   * resuming after the last root a previous run finished (a crash midway
   * costs only the batch under way). Logs its progress every 5 s.
   */
  private rebuild (): void {
    const kv = this.kv
    const marker = kv.get(FP_REBUILD)
    let after = marker?.startsWith(FP_FORMAT + ' ') === true ? marker.slice(FP_FORMAT.length + 1) : undefined
    if (after === undefined) {
      // From scratch (or a run of another format): whatever rows a stale run left go first.
      kv.writeSync(tx => {
        for (const p of [FP_ROOT, FP_BUCKET]) for (const k of tx.keys(p, prefixEnd(p))) tx.delete(k)
        tx.delete(FP_READY)
        tx.put(FP_REBUILD, FP_FORMAT + ' ')
      })
      after = ''
    }
    const total = kv.count(VER, prefixEnd(VER))
    const t0 = Date.now()
    let lastLog = t0
    let done = 0
    for (;;) {
      const vers = kv.range(after === '' ? VER : VER + after + '\u0000', prefixEnd(VER), REBUILD_ROOTS)
      if (vers.length === 0) break
      const last = vers[vers.length - 1][0].slice(VER.length)
      kv.writeSync(tx => {
        for (const [k] of vers) {
          const rid = k.slice(VER.length)
          this.writeRoot(tx, rid, rootPosition(rid), describeRoot(tx, rid), false)
        }
        tx.put(FP_REBUILD, `${FP_FORMAT} ${last}`)
      })
      after = last
      done += vers.length
      if (Date.now() - lastLog >= 5000) {
        lastLog = Date.now()
        this.log.info('building range fingerprints', { roots: done, of: total, seconds: Math.round((lastLog - t0) / 1000) })
      }
    }
    kv.writeSync(tx => { tx.delete(FP_REBUILD); tx.put(FP_READY, FP_FORMAT) })
    const ms = Date.now() - t0
    if (total > 0) this.log.info('range fingerprints built', { roots: total, ms })
  }
}
