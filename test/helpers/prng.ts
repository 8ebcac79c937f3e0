/**
 * Seeded test data for the tests of the store, search, API, watcher and the
 * benchmarks: a small generator (mulberry32) so a test replays by seed. The
 * mesh's property tests and the simulator draw from the engine's generator
 * instead (`Prng`, src/mesh/testing); this one keeps the streams those
 * tests' seeds were chosen with.
 */
export function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function pick<T> (rand: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rand() * xs.length)]
}

export function shuffle<T> (rand: () => number, xs: readonly T[]): T[] {
  const a = [...xs]
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[a[i], a[j]] = [a[j], a[i]]
  }
  return a
}
