/** Small numeric helpers for the report: percentiles, histograms, rounding that survives JSON. */

export interface Summary {
  count: number
  p50: number
  p90: number
  p99: number
  max: number
  mean: number
}

/** Nearest-rank percentile of an ascending array (0 for an empty one). */
export function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]
}

export function summarise (values: readonly number[], digits = 1): Summary {
  const s = [...values].sort((a, b) => a - b)
  const mean = s.length === 0 ? 0 : s.reduce((a, b) => a + b, 0) / s.length
  return {
    count: s.length,
    p50: round(percentile(s, 50), digits),
    p90: round(percentile(s, 90), digits),
    p99: round(percentile(s, 99), digits),
    max: round(s.length === 0 ? 0 : s[s.length - 1], digits),
    mean: round(mean, digits)
  }
}

/** Rounds to `digits` decimals; the same input gives the same JSON text on every run and platform. */
export function round (x: number, digits = 2): number {
  if (!Number.isFinite(x)) return 0
  const f = 10 ** digits
  const r = Math.round(x * f) / f
  return Object.is(r, -0) ? 0 : r
}

/** Counts of `values` in `bins` equal-width bins over [0, max]; returns bin upper edges and counts. */
export function histogram (values: readonly number[], bins: number): { edges: number[], counts: number[] } {
  const max = values.reduce((a, b) => Math.max(a, b), 0)
  const width = max > 0 ? max / bins : 1
  const counts = new Array<number>(bins).fill(0)
  for (const v of values) counts[Math.min(bins - 1, Math.floor(v / width))]++
  return { edges: counts.map((_, i) => round((i + 1) * width, 1)), counts }
}
