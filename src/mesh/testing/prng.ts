/**
 * Seeded randomness for the virtual mesh, its property tests and the
 * simulator: xoshiro128** (Blackman and Vigna), seeded through cyrb128 from
 * a string (a number is its decimal string), so a run is a pure function of
 * its seed and options. Independent streams come from `fork(label)`: every
 * node, link and workload draws from its own stream, so adding a draw in one
 * place (a new option, one more heartbeat) does not shift every other random
 * choice of the run, and two runs that differ in one node stay comparable.
 */
export class Prng {
  private a: number
  private b: number
  private c: number
  private d: number
  readonly seed: string

  constructor (seed: string | number) {
    this.seed = String(seed)
    const [a, b, c, d] = cyrb128(this.seed)
    this.a = a
    this.b = b
    this.c = c
    this.d = d
    // xoshiro needs a non-zero state; cyrb128 of any string practically never gives all zeros.
    if ((a | b | c | d) === 0) this.a = 1
  }

  /** An independent stream named `label`, a pure function of this stream's seed and the label. */
  fork (label: string): Prng {
    return new Prng(`${this.seed}/${label}`)
  }

  /** Unsigned 32-bit integer. */
  u32 (): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0
    const t = this.b << 9
    this.c ^= this.a
    this.d ^= this.b
    this.b ^= this.c
    this.a ^= this.d
    this.c ^= t
    this.d = rotl(this.d, 11)
    return r
  }

  /** Uniform in [0, 1). */
  next (): number {
    return this.u32() / 4294967296
  }

  /** Uniform integer in [0, n). */
  int (n: number): number {
    return Math.floor(this.next() * n)
  }

  /** Uniform in [lo, hi). */
  uniform (lo: number, hi: number): number {
    return lo + (hi - lo) * this.next()
  }

  /** Exponential with the given mean. */
  exponential (mean: number): number {
    // 1 - next() is in (0, 1], so the log is finite.
    return -mean * Math.log(1 - this.next())
  }

  chance (p: number): boolean {
    return p > 0 && this.next() < p
  }

  pick<T> (xs: readonly T[]): T {
    if (xs.length === 0) throw new RangeError('pick from an empty list')
    return xs[this.int(xs.length)]
  }

  /** Fisher-Yates in place; returns the array. */
  shuffle<T> (xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = this.int(i + 1)
      const t = xs[i]
      xs[i] = xs[j]
      xs[j] = t
    }
    return xs
  }

  /** `n` distinct items, in random order (all of them when there are fewer). */
  sample<T> (xs: Iterable<T>, n: number): T[] {
    const all = this.shuffle([...xs])
    return all.length <= n ? all : all.slice(0, n)
  }

  /** Random bytes (for payloads and ids that must replay by seed). */
  bytes (n: number): Uint8Array {
    const out = new Uint8Array(n)
    for (let i = 0; i < n; i += 4) {
      const v = this.u32()
      for (let k = 0; k < 4 && i + k < n; k++) out[i + k] = (v >>> (8 * k)) & 0xff
    }
    return out
  }
}

/** A seeded stream as a bare `() => number` (uniform in [0, 1)), for code that takes a `random` function. */
export function prng (seed: string | number): () => number {
  const r = new Prng(seed)
  return () => r.next()
}

function rotl (x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}

/** cyrb128: a fast 128-bit string hash, used only to spread a seed over the generator's state. */
function cyrb128 (s: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < s.length; i++) {
    const k = s.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}
