/**
 * The clock-step nemesis: node 0's wall clock jumps `clockStep` ms ahead
 * 5 s into the load (a VM resumed, a bad NTP answer) and back
 * `clockStepFor` seconds later. Each node's core runs its own clock guard
 * (src/mesh/protocol/clock-guard.ts) over the simulator's clocks (the wall
 * clock steps, the monotonic one does not, as on a node); the scenario
 * watches every honest node's guard every 100 ms of virtual time and reports
 * how long each refused local writes, how many client writes it refused,
 * how soon node 0 noticed the step and how long after the step back it
 * wrote again.
 */
import type { ScenarioContext } from './scenario.js'

const WATCH_MS = 100
const STEP_AFTER_MS = 5_000

export function clockStepSetup (ctx: ScenarioContext): void {
  const { world, opts } = ctx
  const stepAt = ctx.loadStart + STEP_AFTER_MS
  const backAt = stepAt + opts.clockStepFor * 1000
  const refusedMs = new Map<number, number>()
  let detectedAt: number | undefined
  let resumedAt: number | undefined

  ctx.at(stepAt, () => {
    world.node(0).skewMs += opts.clockStep
    world.metrics.event({ kind: 'clock-step', nodes: [0], detail: `+${opts.clockStep} ms` })
  })
  ctx.at(backAt, () => {
    world.node(0).skewMs -= opts.clockStep
    world.metrics.event({ kind: 'clock-back', nodes: [0], detail: `-${opts.clockStep} ms` })
  })

  const watch = (): void => {
    const t = world.sched.now
    for (let i = 0; i < ctx.honest; i++) {
      const core = world.node(i).core
      if (core === undefined || core.clock.status().inBound) continue
      refusedMs.set(i, (refusedMs.get(i) ?? 0) + WATCH_MS)
    }
    const out = world.node(0).core?.clock.status().inBound === false
    if (out && t >= stepAt && detectedAt === undefined) detectedAt = t
    if (!out && t >= backAt && resumedAt === undefined) resumedAt = t
    if (t + WATCH_MS <= ctx.loadEnd) world.sched.after(WATCH_MS, watch)
  }
  ctx.at(ctx.loadStart, watch)

  ctx.check('clock-step', () => {
    const byNode: Record<string, number> = {}
    for (const [i, ms] of [...refusedMs].sort((a, b) => a[0] - b[0])) byNode[`node ${i}`] = ms
    const writes: Record<string, number> = {}
    for (const [i, n] of [...world.metrics.refusedByNode].sort((a, b) => a[0] - b[0])) writes[`node ${i}`] = n
    return {
      stepMs: opts.clockStep,
      stepForMs: opts.clockStepFor * 1000,
      /** From the step until node 0's guard refused writes (-1: never). */
      detectedAfterMs: detectedAt === undefined ? -1 : detectedAt - stepAt,
      /** From the step back until node 0 wrote again (-1: not before the load ended). */
      resumedAfterBackMs: resumedAt === undefined ? -1 : resumedAt - backAt,
      node0RefusedMs: refusedMs.get(0) ?? 0,
      othersRefusedMs: [...refusedMs].filter(([i]) => i !== 0).reduce((a, [, ms]) => a + ms, 0),
      refusedMsByNode: JSON.stringify(byNode),
      refusedWritesByNode: JSON.stringify(writes)
    }
  })
}
