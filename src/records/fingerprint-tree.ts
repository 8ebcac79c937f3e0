/**
 * The range fingerprints' sums in memory (fingerprints.ts keeps the rows):
 * for each 4-hex-digit prefix of root positions (a bucket, 65,536 of them)
 * and each shorter prefix, the sum mod 2^128 of its roots' hashes, how many
 * roots and how many versioned keys. A 16-ary tree of 69,905 nodes (1.6 MB):
 * the digest and the fingerprint of a range of up to 4 digits are reads.
 */
import type { RangeFingerprint } from './fingerprints.js'

/** Hex digits of a bucket: the tree goes down to them. */
export const BUCKET_DIGITS = 4
const LEVELS = BUCKET_DIGITS + 1
const LEVEL_START = Array.from({ length: LEVELS }, (_, l) => (16 ** l - 1) / 15)
const NODES = (16 ** LEVELS - 1) / 15
const BUCKETS = 16 ** BUCKET_DIGITS
export const ZERO_SUM = '0'.repeat(32)

// ------------------------------------------------------------------ 128-bit sums as four 32-bit limbs, most significant first

export function limbsOf (hex: string): number[] {
  return [parseInt(hex.slice(0, 8), 16), parseInt(hex.slice(8, 16), 16), parseInt(hex.slice(16, 24), 16), parseInt(hex.slice(24, 32), 16)]
}

export function hexOf (l: ArrayLike<number>, off = 0): string {
  let s = ''
  for (let i = 0; i < 4; i++) s += (l[off + i] >>> 0).toString(16).padStart(8, '0')
  return s
}

export function addLimbs (dst: Uint32Array | number[], off: number, src: ArrayLike<number>): void {
  let carry = 0
  for (let i = 3; i >= 0; i--) {
    const s = dst[off + i] + src[i] + carry
    dst[off + i] = s >>> 0
    carry = s > 0xffffffff ? 1 : 0
  }
}

/** a − b mod 2^128. */
export function subLimbs (a: ArrayLike<number>, b: ArrayLike<number>): number[] {
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

/** What one root's change moves: its bucket, and the sum and counts to add. */
export interface Delta { bucket: number, sum: number[], roots: number, keys: number }

export class FingerprintTree {
  private readonly sums = new Uint32Array(NODES * 4)
  private readonly roots = new Float64Array(NODES)
  private readonly keys = new Float64Array(NODES)

  /** The fingerprint of the prefix of `level` digits numbered `index` (0: the whole range). */
  node (level: number, index: number): RangeFingerprint {
    const n = LEVEL_START[level] + index
    return { fp: hexOf(this.sums, n * 4), roots: this.roots[n], keys: this.keys[n] }
  }

  /** Adds a committed delta to its bucket and every prefix above it. */
  move (d: Delta): void {
    for (let level = BUCKET_DIGITS; level >= 0; level--) {
      const n = LEVEL_START[level] + (d.bucket >>> (4 * (BUCKET_DIGITS - level)))
      addLimbs(this.sums, n * 4, d.sum)
      this.roots[n] += d.roots
      this.keys[n] += d.keys
    }
  }

  clear (): void {
    this.sums.fill(0)
    this.roots.fill(0)
    this.keys.fill(0)
  }

  /** Sets a bucket (while loading: `sumLevels` then fills the levels above). */
  setBucket (bucket: number, sum: string, roots: number, keys: number): void {
    const n = LEVEL_START[BUCKET_DIGITS] + bucket
    for (let i = 0; i < 4; i++) this.sums[n * 4 + i] = parseInt(sum.slice(i * 8, i * 8 + 8), 16)
    this.roots[n] = roots
    this.keys[n] = keys
  }

  /** Adds one root to a bucket (while loading from the root rows). */
  addToBucket (bucket: number, hash: string, keys: number): void {
    const n = LEVEL_START[BUCKET_DIGITS] + bucket
    addLimbs(this.sums, n * 4, limbsOf(hash))
    this.roots[n]++
    this.keys[n] += keys
  }

  /** Each bucket that holds roots, as its row would say it (`<sum> <roots> <keys>`), by bucket number. */
  * buckets (): Generator<[number, string | undefined]> {
    const leaves = LEVEL_START[BUCKET_DIGITS]
    for (let b = 0; b < BUCKETS; b++) {
      const n = leaves + b
      yield [b, this.roots[n] === 0 ? undefined : `${hexOf(this.sums, n * 4)} ${this.roots[n]} ${this.keys[n]}`]
    }
  }

  /** Each level above the buckets, summed from the one below. */
  sumLevels (): void {
    for (let level = BUCKET_DIGITS - 1; level >= 0; level--) {
      const width = 16 ** level
      for (let i = 0; i < width; i++) {
        const n = LEVEL_START[level] + i
        this.sums.fill(0, n * 4, n * 4 + 4)
        this.roots[n] = 0
        this.keys[n] = 0
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
}
