/**
 * The model against the real stack on the same scenario: the model's run
 * and the real nodes' run at `--real-nodes` nodes and `--real-rate`
 * operations per second, everything else as given; agreement means median
 * stable latency and messages per operation within 1.5× of each other.
 *
 * The real run is in real time, so its figures vary from run to run: a
 * report made with `--real` is not byte-identical across runs (the model's
 * figures in it still are).
 */
import type { RealStackComparison } from '../report/report.js'
import { runOnce, type Progress } from '../run.js'
import type { SimOptions } from '../scenario/options.js'
import { findScenario } from '../scenario/scenarios.js'
import { round } from '../metrics/stats.js'
import { runRealStack } from './real-stack.js'

const AGREEMENT_FACTOR = 1.5

export async function compareWithRealStack (o: SimOptions, progress?: Progress): Promise<RealStackComparison> {
  const opts: SimOptions = { ...o, nodes: [o.realNodes], rate: o.realRate }
  // The real nodes share one thread: the model they are compared with puts its nodes on one CPU too.
  const model = (await runOnce(findScenario(o.scenario), { ...opts, cpuShared: true }, o.realNodes, progress)).summary
  const real = await runRealStack(opts, o.realNodes, progress)
  const ratio = (a: number, b: number): number => round(b === 0 ? (a === 0 ? 1 : Infinity) : a / b, 2)
  const r = { messagesPerOp: ratio(real.messagesPerOp, model.messagesPerOp), latencyP50: ratio(real.latency.p50, model.latencyMs.p50) }
  const within = (x: number): boolean => x <= AGREEMENT_FACTOR && x >= 1 / AGREEMENT_FACTOR
  const modelCatchUp = model.catchUp[0]?.timeMs
  const catchUp = real.catchUpMs !== undefined && modelCatchUp !== undefined
    ? { model: modelCatchUp, real: real.catchUpMs, ratio: modelCatchUp === null || real.catchUpMs === null ? null : ratio(real.catchUpMs, modelCatchUp) }
    : undefined
  return {
    nodes: o.realNodes,
    rate: o.realRate,
    model: { messagesPerOp: model.messagesPerOp, latencyP50: model.latencyMs.p50 },
    real: {
      messagesPerOp: real.messagesPerOp,
      latencyP50: real.latency.p50,
      latencyP99: real.latency.p99,
      latencyMax: real.latency.max,
      converged: real.converged,
      lostWrites: real.lostWrites,
      operations: real.operations.total
    },
    ratio: r,
    ...(catchUp !== undefined ? { catchUp } : {}),
    withinFactor: AGREEMENT_FACTOR,
    agrees: within(r.messagesPerOp) && within(r.latencyP50) && (catchUp === undefined || (catchUp.ratio !== null && within(catchUp.ratio))),
    notes: [
      `Both runs: ${o.realNodes} nodes, ${o.realRate} operations/s, every other option as given. The real nodes are the node's own libp2p stack ` +
      `(TCP replaced by the in-memory transport with ${real.latencyMs} ms ${o.link} links) in one Node.js process, in real time.`,
      `Why not the full rate: ${o.realNodes} real nodes share one JavaScript thread, and at 100 operations/s their work (noise, pnet, ` +
      'signatures, SQLite) takes more than that thread has: the run falls behind real time and its latency measures the queue, not the mesh.',
      'The model run compared puts its nodes on one virtual CPU (--cpu-shared), as the real nodes share one thread.'
    ]
  }
}
