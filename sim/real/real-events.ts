/**
 * The scenario's events on the real stack, at the moments the model has
 * them: partitions (the same cuts, drawn from the same seeded stream as the
 * model's: scenario/partitions.ts), a node stopped and returning
 * (`return-after-absence`), a fresh node joining (`fresh-join`). The
 * network's own options (latency matrix, jitter, loss, bandwidth) act on
 * every buffer through RealLinks. What the real stack cannot be made to do
 * here is listed, so the comparison says what it left out.
 */
import { Prng } from '../../src/mesh/testing/index.js'
import type { SimOptions } from '../scenario/options.js'
import { cutGroups, partitionTimes } from '../scenario/partitions.js'

/** When the returning node goes down, after the load's start (the model's return-after-absence). */
const STOP_AFTER_MS = 2000

/** What the runner does for an event. */
export interface RealEventHandlers {
  partition: (groups: [number[], number[]]) => void
  heal: () => void
  stop: (node: number) => Promise<void>
  start: (node: number) => Promise<void>
  join: () => Promise<void>
  /** The nodes that exist now (a joiner included once it has joined). */
  ids: () => number[]
  fail: (err: unknown) => void
}

/** A timeline of events on the process clock (ms from the run's t0); `cancel` stops what has not run yet. */
export function scheduleRealEvents (o: SimOptions, nodeCount: number, loadStart: number, now: () => number, h: RealEventHandlers): { cancel: () => void } {
  const timers: NodeJS.Timeout[] = []
  const at = (t: number, fn: () => void | Promise<void>): void => {
    timers.push(setTimeout(() => { Promise.resolve(fn()).catch(h.fail) }, Math.max(0, t - now())))
  }
  const loadEnd = loadStart + o.duration * 1000
  // The model's stream for cuts: its world's seed, then 'run', then 'partitions' (run.ts).
  const rng = new Prng(`${o.seed}/${o.scenario}/${nodeCount}`).fork('run').fork('partitions')
  for (const { at: t, cut } of partitionTimes(o, loadStart, loadEnd)) {
    at(t, () => { if (cut) h.partition(cutGroups(rng, h.ids(), o.partitionKind, new Set())); else h.heal() })
  }
  if (o.scenario === 'return-after-absence') {
    at(loadStart + STOP_AFTER_MS, async () => { await h.stop(1) })
    at(loadStart + STOP_AFTER_MS + o.absent * 1000, async () => { await h.start(1) })
  }
  if (o.scenario === 'fresh-join') at(loadStart + o.joinAt * 1000, async () => { await h.join() })
  return { cancel: () => { for (const t of timers) clearTimeout(t) } }
}

/** The scenario's events and network settings the real run carries out, and those it does not, in words. */
export function realEventsInWords (o: SimOptions): { run: string[], notRun: string[] } {
  const run: string[] = []
  const notRun: string[] = []
  if (o.link === 'serial') {
    notRun.push('with --link serial the memory transport delays buffers itself: no partitions, loss, regions or bandwidth')
    return { run: [`${o.latency} ms serial links`], notRun }
  }
  run.push(`latency ${o.latency}${o.jitter > 0 ? ` + jitter ${o.jitter} ms` : ''} per buffer`)
  if (o.partitionEvery > 0) run.push(`partitions (${o.partitionKind}) every ${o.partitionEvery} s of the load, the model's cuts`)
  if (o.loss > 0 || o.lossBetweenRegions > 0) {
    run.push(`loss ${o.loss}${o.lossBetweenRegions > 0 ? `, ${o.lossBetweenRegions} more between regions` : ''} per buffer, as 200 ms retransmissions`)
    if (o.lossMode === 'drop') notRun.push('--loss-mode drop: a stream cannot drop a buffer and go on; run as retransmission delays')
  }
  if (o.bandwidth > 0 || o.downlink > 0) run.push(`bandwidth ${o.bandwidth} Mbit/s up, ${o.downlink} Mbit/s down per node`)
  if (o.scenario === 'return-after-absence') run.push(`node 1 down for ${o.absent} s from 2 s into the load, then back`)
  if (o.scenario === 'fresh-join') run.push(`a fresh node joins ${o.joinAt} s into the load`)
  if (o.skew > 0 || o.scenario === 'clock-skew') notRun.push('clock skew (the real nodes share this process\'s clock)')
  if (o.clockStep > 0 || o.scenario === 'clock-step') notRun.push('clock steps (the real nodes share this process\'s clock)')
  if (o.badPeers > 0) notRun.push('bad peers')
  if (o.scenario === 'same-content-twice') notRun.push('same-content-twice\'s writes of one content on both sides (the load is the baseline\'s)')
  if (o.scan > 0) notRun.push('--scan')
  return { run, notRun }
}
