/**
 * bench:join's figure 5: sustained writes on a mesh of 3 whole nodes, each
 * in its own child process (bench/lib/join-host.ts): its own event loop
 * and heap, as on three machines, so one node's apply never delays
 * another's writes or timers in the measurement; the three share the
 * machine's cores. Fresh stores, full mesh (the second node bootstraps to
 * the first, the third to both), anti-entropy at the node's default (15 s).
 *
 * Each step offers a rate mesh-wide, a third on each node: new 40-field
 * records (bench/lib/synthetic.ts) through records.mergeFlat, each with a
 * field `bench/w` naming it; every node notes when it commits each one
 * (own and replicated). After the step's writes, a drain of up to
 * `drainSeconds`. Lag, backlog and the keep-up rule: sustained-steps.ts.
 * Steps stop after the first one that does not keep up (unless
 * `allSteps`).
 *
 * The baseline, in the same run: one node alone (no peers) taking the same
 * records as fast as it goes (256 writes in flight), before and after the
 * steps, each time on a fresh store.
 */
import fs from 'node:fs'
import path from 'node:path'
import { waitFor } from '../../src/common/index.js'
import { swarmKeyIn } from '../../test/helpers/mesh-nodes.js'
import { wallNow } from './join-host.js'
import { NodeProc } from './join-proc.js'
import { analyseStep, highestKeptUp, type StepResult } from './sustained-steps.js'

export interface SustainedOptions {
  dir: string
  rates: number[]
  stepSeconds: number
  drainSeconds: number
  /** Records the lone node writes for the baseline. */
  soloRecords: number
  allSteps: boolean
  log: (msg: string) => void
}

const NODES = 3
const r2 = (x: number): number => Math.round(x * 100) / 100
const sleep = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

async function soloRate (o: SustainedOptions, key: string, round: number): Promise<number> {
  const dir = path.join(o.dir, `solo-${round}`)
  const n = await NodeProc.start({ label: 'solo', dir, swarmKey: key, targetPeers: 0, antiEntropyMs: 15_000 })
  const r = await n.call<{ recordsPerSecond: number }>('burst', { first: 90_000_000 + round * 1_000_000, count: o.soloRecords, concurrency: 256 })
  await n.stop()
  fs.rmSync(dir, { recursive: true, force: true })
  o.log(`sustained: one node alone writes ${Math.round(r.recordsPerSecond)} records/s`)
  return r.recordsPerSecond
}

async function step (nodes: NodeProc[], rate: number, index: number, o: SustainedOptions): Promise<StepResult & { cpuShare: number[] }> {
  for (const n of nodes) await n.call('seen')
  const cpuMs = nodes.map(() => 0)
  const seen = nodes.map(() => new Map<number, number>())
  const collect = async (): Promise<void> => {
    await Promise.all(nodes.map(async (n, k) => {
      const r = await n.call<{ seen: Array<[number, number]>, cpuMs: number }>('seen')
      for (const [id, at] of r.seen) seen[k].set(id, at)
      cpuMs[k] += r.cpuMs
    }))
  }
  const t0 = wallNow()
  await Promise.all(nodes.map(async (n, k) => await n.call('writer', { rate: rate / NODES, first: (k + 1) * 10_000_000 + index * 1_000_000, mark: true })))
  const until = performance.now() + o.stepSeconds * 1000
  while (performance.now() < until) {
    await sleep(Math.min(1000, until - performance.now()))
    await collect()
  }
  const stops = await Promise.all(nodes.map(async n => await n.call<{ issuedAt: Array<[number, number]>, failed: number, startedAt: number,
    stoppedAt: number }>('writerStop')))
  // The writing window: from the first writer's start to the last one's stop, as the writers' processes saw them.
  const start = Math.min(...stops.map(s => s.startedAt))
  const end = Math.max(...stops.map(s => s.stoppedAt))
  const issued = stops.flatMap((s, k) => s.issuedAt.map(([id, at]) => [id, at, k] as const))
  await waitFor(async () => {
    await collect()
    return issued.every(([id]) => seen.every(m => m.has(id)))
  }, { timeoutMs: o.drainSeconds * 1000, what: 'every write on every node', intervalMs: 250 }).catch(() => {})
  const r = analyseStep({ rate, start, end, issued, failed: stops.reduce((a, s) => a + s.failed, 0), seen })
  const wall = wallNow() - t0
  return { ...r, cpuShare: cpuMs.map(ms => r2(ms / wall)) }
}

export async function sustained (o: SustainedOptions): Promise<Record<string, unknown>> {
  fs.rmSync(o.dir, { recursive: true, force: true })
  fs.mkdirSync(o.dir, { recursive: true })
  const key = swarmKeyIn(o.dir)
  const before = await soloRate(o, key, 0)
  const nodes: NodeProc[] = []
  const steps: Array<StepResult & { cpuShare: number[] }> = []
  try {
    for (let k = 0; k < NODES; k++) {
      nodes.push(await NodeProc.start({ label: `S${k}`, dir: path.join(o.dir, `s${k}`), swarmKey: key, bootstrap: nodes.map(n => n.ready.addr),
        antiEntropyMs: 15_000 }))
    }
    await waitFor(async () => (await Promise.all(nodes.map(async n => (await n.status()).peers.filter(p => p.connected).length))).every(c => c >= NODES - 1),
      { timeoutMs: 30_000, what: 'the three nodes connected to each other', intervalMs: 100 })
    await sleep(2_000) // gossipsub's meshes settle (heartbeats)
    for (const [i, rate] of o.rates.entries()) {
      const s = await step(nodes, rate, i, o)
      steps.push(s)
      o.log(`sustained: ${rate} records/s offered: ${s.keptUp ? 'kept up' : `not kept up (${s.why.join('; ')})`}, lag p50 ${s.lagMs.p50} ms p99 ${s.lagMs.p99} ms, backlog ${s.backlogGrowthPerSecond}/s`)
      if (!s.keptUp && !o.allSteps) break
    }
  } finally {
    for (const n of nodes.reverse()) await n.stop()
  }
  const after = await soloRate(o, key, 1)
  fs.rmSync(o.dir, { recursive: true, force: true })
  const highest = highestKeptUp(steps)
  const bare = (before + after) / 2
  return {
    nodes: NODES,
    processes: 'one child process per node',
    stepSeconds: o.stepSeconds,
    drainSeconds: o.drainSeconds,
    steps,
    highestKeptUp: highest,
    bareWriteRate: { before: Math.round(before), after: Math.round(after), recordsPerSecond: Math.round(bare) },
    highestOfBare: highest === null ? null : r2(highest / bare),
    target: { recordsPerSecond: 2_000, met: highest !== null && highest >= 2_000 }
  }
}
