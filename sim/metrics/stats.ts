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

/** Bins a histogram should have across its values at the least: fewer say nothing of their spread. */
const MIN_BINS = 12
/** The finest bins: 2,000 per decade, about 0.1 % wide (a few values per bin at the report's sizes). */
const MAX_PER_DECADE = 2000

/**
 * Counts of `values` in bins of equal width on a log scale: at least
 * `perDecade` bins per factor of 10, and more when the values span so
 * little of a decade that fewer than `MIN_BINS` bins would cover them (all
 * writes readable within a few ms of each other would otherwise be one
 * bar), from the bin holding the smallest value (at least 1) to the one
 * holding the largest. Returns each bin's upper edge and its count, the
 * first bin's lower edge, and the bins per decade used; values below 1
 * count in the first bin.
 */
export function logHistogram (values: readonly number[], perDecade = 10): { edges: number[], counts: number[], lower: number, perDecade: number } {
  if (values.length === 0) return { edges: [], counts: [], lower: 1, perDecade }
  let min = Infinity
  let max = -Infinity
  for (const v of values) {
    const x = Math.max(1, v)
    if (x < min) min = x
    if (x > max) max = x
  }
  const span = Math.log10(max / min)
  const per = span > 0 ? Math.min(MAX_PER_DECADE, Math.max(perDecade, Math.ceil(MIN_BINS / span))) : perDecade
  const bin = (v: number): number => Math.floor(Math.log10(Math.max(1, v)) * per + 1e-9)
  const lo = bin(min)
  const hi = bin(max)
  const counts = new Array<number>(hi - lo + 1).fill(0)
  for (const v of values) counts[bin(v) - lo]++
  // Four significant digits: edges stay apart however narrow the bins.
  const edge = (b: number): number => Number((10 ** (b / per)).toPrecision(4))
  return { edges: counts.map((_, i) => edge(lo + i + 1)), counts, lower: edge(lo), perDecade: per }
}
