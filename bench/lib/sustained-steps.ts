/**
 * The arithmetic of bench:join's sustained figure (bench/lib/join-sustained.ts):
 * from when each write was issued and when each node committed it, a step's
 * lag (issued → committed on the last node), its backlog over time (writes
 * issued and not yet on every node) and whether the nodes kept up. Pure: no
 * processes, no clock.
 */
import { percentile } from './report.js'

/** What a step is judged by (see `analyseStep`). */
export interface KeepUpRule {
  /** Writes issued at least this share of the offered rate. */
  minIssuedShare: number
  /** Lag p99 at most this (ms). */
  maxP99Ms: number
  /** The backlog grows by at most this share of the offered rate per second (least squares over the step, its first fifth left out as the ramp). */
  maxBacklogGrowthShare: number
}

export const DEFAULT_RULE: KeepUpRule = { minIssuedShare: 0.95, maxP99Ms: 2_000, maxBacklogGrowthShare: 0.05 }

export interface StepInput {
  /** Offered records/s, mesh-wide, and the writing window (wall ms). */
  rate: number
  start: number
  end: number
  /** Every write of the step: its id, when it was issued and on which node (an index into `seen`). */
  issued: ReadonlyArray<readonly [number, number, number]>
  failed: number
  /** Per node: when it committed each write (by id). */
  seen: ReadonlyArray<ReadonlyMap<number, number>>
}

export interface StepResult {
  offeredRate: number
  issuedRate: number
  issued: number
  failed: number
  visibleOnAll: number
  missing: number
  lagMs: { p50: number, p90: number, p99: number, max: number }
  /** From the call until the writing node itself committed the write: its own write path's share of the lag. */
  localLagMs: { p50: number, p99: number }
  /** Median lag of the writes issued in the step's first and last thirds. */
  lagFirstThirdMs: number
  lagLastThirdMs: number
  /** Least-squares slope of the backlog over the step after its first fifth, records/s. */
  backlogGrowthPerSecond: number
  backlogMax: number
  keptUp: boolean
  /** Why not, when not. */
  why: string[]
}

const r1 = (x: number): number => Math.round(x * 10) / 10

/** When each write was on every node (undefined: not on all of them). */
export function lastSeen (issued: StepInput['issued'], seen: StepInput['seen']): Map<number, number | undefined> {
  const out = new Map<number, number | undefined>()
  for (const [id] of issued) {
    let last: number | undefined = -Infinity
    for (const m of seen) {
      const at = m.get(id)
      if (at === undefined) { last = undefined; break }
      last = Math.max(last, at)
    }
    out.set(id, last)
  }
  return out
}

/** Writes issued by `t` and not yet on every node at `t`. */
export function backlogAt (t: number, issued: StepInput['issued'], last: ReadonlyMap<number, number | undefined>): number {
  let n = 0
  for (const [id, at] of issued) {
    if (at > t) continue
    const l = last.get(id)
    if (l === undefined || l > t) n++
  }
  return n
}

/** Least-squares slope of y over x. */
export function slope (xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length
  if (n < 2) return 0
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my)
    den += (xs[i] - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

export function analyseStep (s: StepInput, rule: KeepUpRule = DEFAULT_RULE): StepResult {
  const seconds = (s.end - s.start) / 1000
  const last = lastSeen(s.issued, s.seen)
  const lags: number[] = []
  const third = (s.end - s.start) / 3
  const first: number[] = []
  const final: number[] = []
  const local: number[] = []
  for (const [id, at, node] of s.issued) {
    const own = s.seen[node]?.get(id)
    if (own !== undefined) local.push(own - at)
    const l = last.get(id)
    if (l === undefined) continue
    lags.push(l - at)
    if (at < s.start + third) first.push(l - at)
    else if (at >= s.end - third) final.push(l - at)
  }
  // The backlog every 1/40 of the step, from the end of its first fifth (the ramp while the pipeline fills).
  const xs: number[] = []
  const ys: number[] = []
  for (let k = 8; k <= 40; k++) {
    const t = s.start + (s.end - s.start) * k / 40
    xs.push((t - s.start) / 1000)
    ys.push(backlogAt(t, s.issued, last))
  }
  const growth = slope(xs, ys)
  const missing = s.issued.length - lags.length
  const issuedRate = s.issued.length / seconds
  const p99 = lags.length === 0 ? NaN : percentile(lags, 99)
  const why: string[] = []
  if (issuedRate < rule.minIssuedShare * s.rate) why.push(`issued ${r1(issuedRate)}/s of ${s.rate}/s offered`)
  if (s.failed > 0) why.push(`${s.failed} writes failed`)
  if (missing > 0) why.push(`${missing} writes not on every node by the end of the drain`)
  if (!(p99 <= rule.maxP99Ms)) why.push(`lag p99 ${r1(p99)} ms over ${rule.maxP99Ms} ms`)
  if (growth > rule.maxBacklogGrowthShare * s.rate) why.push(`backlog grows ${r1(growth)} records/s`)
  return {
    offeredRate: s.rate,
    issuedRate: r1(issuedRate),
    issued: s.issued.length,
    failed: s.failed,
    visibleOnAll: lags.length,
    missing,
    lagMs: lags.length === 0 ? { p50: NaN, p90: NaN, p99: NaN, max: NaN } : { p50: r1(percentile(lags, 50)), p90: r1(percentile(lags, 90)), p99: r1(p99),
      max: r1(lags.reduce((a, b) => Math.max(a, b), -Infinity)) },
    localLagMs: { p50: r1(percentile(local, 50)), p99: r1(percentile(local, 99)) },
    lagFirstThirdMs: r1(percentile(first, 50)),
    lagLastThirdMs: r1(percentile(final, 50)),
    backlogGrowthPerSecond: r1(growth),
    backlogMax: ys.reduce((a, b) => Math.max(a, b), 0),
    keptUp: why.length === 0,
    why
  }
}

/** The highest offered rate of a step that kept up, below which every step kept up too (null: none). */
export function highestKeptUp (steps: ReadonlyArray<Pick<StepResult, 'offeredRate' | 'keptUp'>>): number | null {
  let best: number | null = null
  for (const s of [...steps].sort((a, b) => a.offeredRate - b.offeredRate)) {
    if (!s.keptUp) break
    best = s.offeredRate
  }
  return best
}
