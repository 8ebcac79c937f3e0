/**
 * Range fingerprints of the replicated range, kept up to date in the same
 * transaction as the `ver:`/`file:` rows they describe, so that the digest
 * and the fingerprint of any range are cheap reads (the mesh's set
 * reconciliation, src/mesh/protocol/reconcile.ts, and `GET /api/mesh/digest`).
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
 *   version map, written in the transaction that changes the root.
 * - `idx:fpb/<4 hex>` = `<sum 32 hex> <roots> <keys>`: the sum of the roots
 *   whose position starts with it (65,536 buckets at most), written when
 *   the store closes, valid while `idx:fp/buckets` (= FP_FORMAT) is there.
 * - `idx:fp/ready` = the rows' format (FP_FORMAT): the root rows describe
 *   every root (absent or another format: a store that predates them,
 *   rebuilt at open).
 *
 * In memory: the buckets and the sums over their 1-, 2- and 3-digit
 * prefixes and the whole range (a 16-ary tree, 69,905 nodes, 1.6 MB),
 * moved by each commit's deltas (after-commit hooks: a write that rolls
 * back moves nothing). At open the buckets come from their rows when the
 * store was closed cleanly, and are summed from the root rows otherwise (a
 * crash, a copy of a running store's file: about 0.3 s per 200,000 roots);
 * `idx:fp/buckets` is removed at open, before any write, so bucket rows
 * are never taken for current after writes they missed. A root's change so
 * costs its own row only, not a second random write to its bucket's.
 * Prefixes of 5 to 8 digits are summed from the root rows of their bucket.
 */
import { hash } from 'node:crypto'
import type { Logger } from '../common/index.js'
import { prefixEnd, type KvStore, type Tx } from '../kv/index.js'
import type { Reader } from './layout.js'
import { VER, FILE } from './layout.js'
import { VersionMap } from './versions.js'

export const FP_ROOT = 'idx:fpr/'
export const FP_BUCKET = 'idx:fpb/'
export const FP_READY = 'idx:fp/ready'
/** The bucket rows are current (written at a clean close; removed at open). */
export const FP_BUCKETS_CURRENT = 'idx:fp/buckets'
/** The rows' format: 2 has the root's id in its hash (1 did not). A store whose rows are of another format rebuilds them at open. */
export const FP_FORMAT = '2'
/** During a rebuild: `<format> <last root done>` (the rebuild resumes after it if the format is this one's). */
export const FP_REBUILD = 'idx:fp/rebuild'

/** Hex digits of a bucket: the tree in memory goes down to them. */
const BUCKET_DIGITS = 4
/** Hex digits of a position. */
export const POSITION_DIGITS = 8
const LEVELS = BUCKET_DIGITS + 1
const LEVEL_START = Array.from({ length: LEVELS }, (_, l) => (16 ** l - 1) / 15)
const NODES = (16 ** LEVELS - 1) / 15
const ZERO_SUM = '0'.repeat(32)
/** Roots a rebuild writes per transaction. */
const REBUILD_ROOTS = 2_000
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

/** The position of a root (8 hex). */
export function rootPosition (rid: string): string {
  return hash('sha256', rid, 'hex').slice(0, POSITION_DIGITS) // one-shot: a Hash object per root cost three times as much
}

/**
 * The hash of a root's replicated state: its id, its version map folded and
 * canonical (`VersionMap.serialize` of a parsed map) and its live fields, `fields` giving name → value; 32 hex.
 */
export function rootHash (rid: string, verSerialized: string, fields: ReadonlyMap<string, string> | Record<string, string>): string {
  const entries = fields instanceof Map ? [...fields as ReadonlyMap<string, string>] : Object.entries(fields)
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  let s = `${rid}\n${verSerialized}`
  for (const [n, v] of entries) s += `\n${n.length}:${n}${v.length}:${v}`
  return hash('sha256', s, 'hex').slice(0, 32)
}

/** Versioned keys a version map holds: its fields and its root tombstone. */
export function versionedKeys (vm: VersionMap): number {
  return vm.fields.size + (vm.root === undefined ? 0 : 1)
}

// ------------------------------------------------------------------ 128-bit sums as four 32-bit limbs, most significant first

function limbsOf (hex: string): number[] {
  return [0, 8, 16, 24].map(i => parseInt(hex.slice(i, i + 8), 16))
}

function hexOf (l: ArrayLike<number>, off = 0): string {
  let s = ''
  for (let i = 0; i < 4; i++) s += (l[off + i] >>> 0).toString(16).padStart(8, '0')
  return s
}

function addLimbs (dst: Uint32Array | number[], off: number, src: ArrayLike<number>): void {
  let carry = 0
  for (let i = 3; i >= 0; i--) {
    const s = dst[off + i] + src[i] + carry
    dst[off + i] = s >>> 0
    carry = s > 0xffffffff ? 1 : 0
  }
}

/** a − b mod 2^128. */
function subLimbs (a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  const neg = [0, 1, 2, 3].map(i => (0xffffffff - b[i]) >>> 0)
  addLimbs(neg, 0, [0, 0, 0, 1])
  const out = [a[0], a[1], a[2], a[3]]
  addLimbs(out, 0, neg)
  return out
}

/** Sum of 32-hex numbers mod 2^128, as 32 hex. */
export function sumHex (hexes: Iterable<string>): string {
  const acc = [0, 0, 0, 0]
  for (const h of hexes) addLimbs(acc, 0, limbsOf(h))
  return hexOf(acc)
}

function parseRootRow (v: string | undefined): { hash: string, keys: number } | undefined {
  if (v === undefined) return undefined
  const sp = v.indexOf(' ')
  return { hash: v.slice(0, sp), keys: Number(v.slice(sp + 1)) }
}

function parseBucketRow (v: string | undefined): { sum: string, roots: number, keys: number } {
  if (v === undefined) return { sum: ZERO_SUM, roots: 0, keys: 0 }
  const [sum, roots, keys] = v.split(' ')
  return { sum, roots: Number(roots), keys: Number(keys) }
}

/** What one root's change moves: its bucket, and the sum and counts to add. */
interface Delta { bucket: number, sum: number[], roots: number, keys: number }

export class Fingerprints {
  private readonly sums = new Uint32Array(NODES * 4)
  private readonly roots = new Float64Array(NODES)
  private readonly keys = new Float64Array(NODES)
  /** While a rebuild runs: roots after this one are not described yet (the rebuild gets to them). */
  private rebuildAfter: string | undefined

  constructor (private readonly kv: KvStore, private readonly log: Logger) {}

  /**
   * At open: rebuilds the rows of a store that predates them, or whose rows
   * are of another format or were invalidated, then loads the tree (from
   * the bucket rows after a clean close, else from the root rows), and
   * writes the buckets back when the store closes.
   */
  open (): void {
    const kv = this.kv
    const rebuild = kv.get(FP_READY) !== FP_FORMAT
    if (rebuild) this.rebuild()
    if (!rebuild && kv.get(FP_BUCKETS_CURRENT) === FP_FORMAT) {
      this.load()
    } else {
      const t0 = Date.now()
      const roots = this.loadFromRoots()
      const ms = Date.now() - t0
      if (ms >= 1000) this.log.info('range fingerprints summed from their roots (the store was not closed cleanly)', { roots, ms })
    }
    if (kv.get(FP_BUCKETS_CURRENT) !== undefined) kv.writeSync(tx => { tx.delete(FP_BUCKETS_CURRENT) })
    kv.beforeClose(() => { this.flush() })
  }

  /**
   * Inside a mutation's write: `rid`'s version map is now `verSerialized`
   * (undefined: the root has none left) with these live fields. Writes the
   * root's row and its bucket's, and moves the tree after commit. `fresh`:
   * the root had no version map before (nothing to read).
   */
  update (tx: Tx, rid: string, vm: VersionMap, verSerialized: string | undefined, fields: ReadonlyMap<string, string> | Record<string, string>, fresh = false): void {
    if (this.rebuildAfter !== undefined && rid > this.rebuildAfter) return
    const pos = rootPosition(rid)
    const rowKey = FP_ROOT + pos + rid
    // `fresh`: the root had no version map before this write, so it has no row yet.
    const oldRow = fresh ? undefined : tx.get(rowKey)
    const old = parseRootRow(oldRow)
    const now = verSerialized === undefined ? undefined : { hash: rootHash(rid, verSerialized, fields), keys: versionedKeys(vm) }
    if (old?.hash === now?.hash && old?.keys === now?.keys) return
    if (now === undefined) tx.delete(rowKey)
    else tx.putMany([[rowKey, `${now.hash} ${now.keys}`, oldRow]]) // the old row was just read: no read before the write
    const d: Delta = {
      bucket: parseInt(pos.slice(0, BUCKET_DIGITS), 16),
      sum: subLimbs(limbsOf(now?.hash ?? ZERO_SUM), limbsOf(old?.hash ?? ZERO_SUM)),
      roots: (now === undefined ? 0 : 1) - (old === undefined ? 0 : 1),
      keys: (now?.keys ?? 0) - (old?.keys ?? 0)
    }
    tx.afterCommit(() => { this.move(d) })
  }

  /** Marks the rows stale (a repair that rewrote `ver:` rows outside the mutation path): the next open rebuilds them. */
  static invalidate (tx: Pick<Tx, 'delete'>): void {
    tx.delete(FP_READY)
    tx.delete(FP_BUCKETS_CURRENT)
  }

  /** The whole range: what the digest is made of. */
  total (): RangeFingerprint {
    return this.node(0, 0)
  }

  /** The fingerprint of the roots whose position starts with `prefix` (0 to 8 hex digits). */
  range (prefix: string): RangeFingerprint {
    if (!HEX_RE.test(prefix)) throw new RangeError(`not a position prefix: ${prefix}`)
    if (prefix.length <= BUCKET_DIGITS) return this.node(prefix.length, prefix === '' ? 0 : parseInt(prefix, 16))
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
    const lo = FP_ROOT + prefix
    const rows = Number.isFinite(limit) ? this.kv.range(lo, prefixEnd(lo), limit) : this.kv.range(lo, prefixEnd(lo))
    return rows.map(([k, v]) => ({ rid: k.slice(FP_ROOT.length + POSITION_DIGITS), hash: v.slice(0, v.indexOf(' ')) }))
  }

  /** The stored hash of one root (32 hex), or undefined when it has no version map. */
  hashOf (rid: string): string | undefined {
    return parseRootRow(this.kv.get(FP_ROOT + rootPosition(rid) + rid))?.hash
  }

  private node (level: number, index: number): RangeFingerprint {
    const n = LEVEL_START[level] + index
    return { fp: hexOf(this.sums, n * 4), roots: this.roots[n], keys: this.keys[n] }
  }

  /** Writes the buckets that differ from their rows and marks the rows current: the store's last write before it closes. */
  private flush (): void {
    const leaves = LEVEL_START[BUCKET_DIGITS]
    this.kv.writeSync(tx => {
      const rows = new Map(tx.range(FP_BUCKET, prefixEnd(FP_BUCKET)))
      for (let b = 0; b < 16 ** BUCKET_DIGITS; b++) {
        const n = leaves + b
        const key = FP_BUCKET + b.toString(16).padStart(BUCKET_DIGITS, '0')
        const row = this.roots[n] === 0 ? undefined : `${hexOf(this.sums, n * 4)} ${this.roots[n]} ${this.keys[n]}`
        const old = rows.get(key)
        if (row === old) continue
        if (row === undefined) tx.delete(key)
        else tx.put(key, row)
      }
      tx.put(FP_BUCKETS_CURRENT, FP_FORMAT)
    })
  }

  /** Adds a committed delta to its bucket and every prefix above it. */
  private move (d: Delta): void {
    for (let level = BUCKET_DIGITS; level >= 0; level--) {
      const n = LEVEL_START[level] + (d.bucket >>> (4 * (BUCKET_DIGITS - level)))
      addLimbs(this.sums, n * 4, d.sum)
      this.roots[n] += d.roots
      this.keys[n] += d.keys
    }
  }

  /** The buckets from their rows, then the levels above them. */
  private load (): void {
    this.clear()
    const leaves = LEVEL_START[BUCKET_DIGITS]
    for (const [k, v] of this.kv.range(FP_BUCKET, prefixEnd(FP_BUCKET))) {
      const n = leaves + parseInt(k.slice(FP_BUCKET.length), 16)
      const b = parseBucketRow(v)
      for (let i = 0; i < 4; i++) this.sums[n * 4 + i] = parseInt(b.sum.slice(i * 8, i * 8 + 8), 16)
      this.roots[n] = b.roots
      this.keys[n] = b.keys
    }
    this.sumLevels()
  }

  /** The buckets summed from every root's row, then the levels above them; returns how many roots. */
  private loadFromRoots (): number {
    this.clear()
    const leaves = LEVEL_START[BUCKET_DIGITS]
    let roots = 0
    this.kv.read(() => {
      for (const [k, v] of this.kv.range(FP_ROOT, prefixEnd(FP_ROOT))) {
        const n = leaves + parseInt(k.slice(FP_ROOT.length, FP_ROOT.length + BUCKET_DIGITS), 16)
        const r = parseRootRow(v)!
        addLimbs(this.sums, n * 4, limbsOf(r.hash))
        this.roots[n]++
        this.keys[n] += r.keys
        roots++
      }
    })
    this.sumLevels()
    return roots
  }

  private clear (): void {
    this.sums.fill(0)
    this.roots.fill(0)
    this.keys.fill(0)
  }

  /** Each level above the buckets, summed from the one below. */
  private sumLevels (): void {
    for (let level = BUCKET_DIGITS - 1; level >= 0; level--) {
      const width = 16 ** level
      for (let i = 0; i < width; i++) {
        const n = LEVEL_START[level] + i
        const first = LEVEL_START[level + 1] + i * 16
        for (let c = first; c < first + 16; c++) {
          if (this.roots[c] === 0) continue
          addLimbs(this.sums, n * 4, this.sums.subarray(c * 4, c * 4 + 4))
          this.roots[n] += this.roots[c]
          this.keys[n] += this.keys[c]
        }
      }
    }
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
    this.rebuildAfter = after
    try {
      for (;;) {
        const vers = kv.range(after === '' ? VER : VER + after + '\u0000', prefixEnd(VER), REBUILD_ROOTS)
        if (vers.length === 0) break
        const last = vers[vers.length - 1][0].slice(VER.length)
        kv.writeSync(tx => {
          for (const [k, v] of vers) {
            const rid = k.slice(VER.length)
            const vm = VersionMap.parse(v)
            this.rebuildAfter = rid
            // The folded form (versions.ts), as the mutation path writes it: a row stored otherwise hashes the same.
            this.update(tx, rid, vm, vm.serialize(), readLiveFields(tx, rid))
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
    } finally {
      this.rebuildAfter = undefined
    }
    const ms = Date.now() - t0
    if (total > 0) this.log.info('range fingerprints built', { roots: total, ms })
  }
}

function readLiveFields (r: Reader, rid: string): Record<string, string> {
  return r.suffixes(`${FILE}${rid}/`)
}
