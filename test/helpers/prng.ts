import { prng } from '../../src/mesh/testing/prng.js'

/** Small seeded PRNG (mulberry32) so property tests replay by seed. */
export { prng }

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
