/**
 * The pure half of `bench:ab` (bench/ab.ts): which figures each benchmark's
 * JSON holds, how to find them in a run's output, and how the rounds of two
 * commits are summed up. Nothing here runs a process or touches the disk.
 */

/** Which way a figure is better: rates up, latencies down. */
export type Better = 'higher' | 'lower'

/**
 * One figure of a benchmark's JSON. `paths` are dot paths (array indexes as
 * numbers) tried in order, the first that holds a number wins: a benchmark's
 * JSON changes shape over the history, and one spec serves every commit.
 */
export interface MetricSpec {
  name: string
  paths: string[]
  better: Better
  /** The figure a gate is about; the others (controls, context) are reported only. */
  headline: boolean
  description: string
}

export interface BenchSpec {
  metrics: MetricSpec[]
  /**
   * Env for one unmeasured run per side before the rounds (e.g. building a
   * cached store), so the first measured round does not also pay for it.
   */
  prepareEnv?: Record<string, string>
}

/**
 * The figures `docs/benchmarks.md` quotes, per benchmark. The first path of
 * each is the JSON of the record-layer era (up to fc3bd6b), the second the
 * later one where it changed.
 */
export const BENCHES: Record<string, BenchSpec> = {
  ingest: {
    metrics: [
      {
        name: 'writePath',
        paths: ['small.recordsPerSecond', 'results.0.writePath.recordsPerSecond'],
        better: 'higher',
        headline: true,
        description: 'records/s through records.mergeFlat with search attached, first size (BENCH_INGEST_SMALL, 10k)'
      },
      {
        name: 'recordLayer',
        paths: ['small.withoutSearch.recordsPerSecond', 'results.0.withoutSearch.recordsPerSecond'],
        better: 'higher',
        headline: false,
        description: 'records/s through records.mergeFlat without search, first size'
      },
      {
        name: 'ceiling',
        paths: ['small.ceiling.recordsPerSecond', 'results.0.ceiling.recordsPerSecond'],
        better: 'higher',
        headline: false,
        description: 'bare kv table, same rows (the same code on both sides: a control for the machine)'
      }
    ]
  },
  api: {
    prepareEnv: { BENCH_API_BUILD_ONLY: '1' },
    metrics: [
      {
        name: 'apiMeta',
        paths: ['medianRound.apiMetaCid.requestsPerSecond'],
        better: 'higher',
        headline: true,
        description: 'GET /api/meta/{cid} requests/s, the bench\'s median round'
      },
      {
        name: 'ratioToHealth',
        paths: ['medianRound.ratioToHealth'],
        better: 'higher',
        headline: true,
        description: '/api/meta/{cid} rate over GET /health\'s in the same round'
      },
      {
        name: 'health',
        paths: ['medianRound.health.requestsPerSecond'],
        better: 'higher',
        headline: false,
        description: 'GET /health requests/s (fastify\'s ceiling here: a control for the machine)'
      },
      {
        name: 'apiMetaP99Ms',
        paths: ['medianRound.apiMetaCid.p99Ms'],
        better: 'lower',
        headline: false,
        description: 'GET /api/meta/{cid} p99 latency, ms'
      }
    ]
  }
}

/**
 * `name=path[|path…]` from the command line; the figure counts as a headline
 * (higher is better unless the name ends in Ms, Seconds or Bytes: a time or
 * a cost, where lower is better).
 */
export function parseMetricOption (text: string): MetricSpec {
  const eq = text.indexOf('=')
  if (eq <= 0 || eq === text.length - 1) throw new Error(`--metric wants name=path[|path...], got ${JSON.stringify(text)}`)
  const name = text.slice(0, eq)
  return {
    name,
    paths: text.slice(eq + 1).split('|'),
    better: /(Ms|Seconds|Bytes)$/.test(name) ? 'lower' : 'higher',
    headline: true,
    description: `--metric ${text}`
  }
}

/** `KEY=value` from the command line. */
export function parseEnvOption (text: string): [string, string] {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(text)
  if (m === null) throw new Error(`--env wants KEY=value, got ${JSON.stringify(text)}`)
  return [m[1], m[2]]
}

/**
 * The JSON object a benchmark printed on stdout. Benchmarks print one
 * pretty-printed object; anything before it (a banner, a progress line) and
 * after its closing brace is skipped. The object starts at a `{` at the start
 * of a line.
 */
export function extractJson (stdout: string): unknown {
  const end = stdout.lastIndexOf('}')
  for (let i = stdout.indexOf('{'); i >= 0 && i < end; i = stdout.indexOf('{', i + 1)) {
    if (i > 0 && stdout[i - 1] !== '\n') continue
    try {
      return JSON.parse(stdout.slice(i, end + 1))
    } catch {
      // not the start of the object: a brace in a log line; try the next one
    }
  }
  throw new Error(`no JSON object on the benchmark's stdout (${stdout.length} characters): ${stdout.slice(0, 200)}`)
}

/** The value at a dot path (`a.0.b`), or undefined. */
export function valueAt (json: unknown, dotPath: string): unknown {
  let v: unknown = json
  for (const part of dotPath.split('.')) {
    if (v === null || typeof v !== 'object') return undefined
    v = (v as Record<string, unknown>)[part]
  }
  return v
}

/** The spec's figure in one run's JSON: the first of its paths that holds a finite number. */
export function metricValue (json: unknown, spec: MetricSpec): number {
  for (const p of spec.paths) {
    const v = valueAt(json, p)
    if (typeof v === 'number' && Number.isFinite(v)) return v
  }
  throw new Error(`metric ${spec.name}: none of ${spec.paths.join(', ')} holds a number in the benchmark's JSON`)
}

export function median (xs: number[]): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** Which side runs first in round `round` (0-based): ab always A first; abba swaps every other round. */
export function sidesOfRound (order: 'ab' | 'abba', round: number): Array<'a' | 'b'> {
  return order === 'abba' && round % 2 === 1 ? ['b', 'a'] : ['a', 'b']
}

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

export interface MetricSummary {
  description: string
  better: Better
  headline: boolean
  a: number[]
  b: number[]
  medianA: number
  medianB: number
  /** medianB / medianA. */
  ratio: number
  /** B / A within each round, and their median: a second view that a slow drift of the machine moves less. */
  roundRatios: number[]
  medianRoundRatio: number
  /** B is no worse than A by more than the tolerance (by the ratio of the medians). */
  withinTolerance: boolean
}

/**
 * Sums up one figure over the rounds. `a[i]` and `b[i]` come from round i.
 * Worse means lower for a rate, higher for a latency; `tolerance` 0.05 allows
 * B down to 0.95× A for a rate, up to 1.05× A for a latency.
 */
export function summarise (spec: MetricSpec, a: number[], b: number[], tolerance: number): MetricSummary {
  if (a.length !== b.length || a.length === 0) throw new Error(`metric ${spec.name}: ${a.length} A and ${b.length} B figures`)
  const medianA = median(a)
  const medianB = median(b)
  const ratio = medianB / medianA
  const roundRatios = a.map((x, i) => round4(b[i] / x))
  return {
    description: spec.description,
    better: spec.better,
    headline: spec.headline,
    a,
    b,
    medianA: round4(medianA),
    medianB: round4(medianB),
    ratio: round4(ratio),
    roundRatios,
    medianRoundRatio: round4(median(roundRatios)),
    withinTolerance: spec.better === 'higher' ? ratio >= 1 - tolerance : ratio <= 1 + tolerance
  }
}
