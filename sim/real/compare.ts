/**
 * The model against the real stack on the same scenario: the model's run
 * and the real nodes' run at `--real-nodes` nodes and `--real-rate`
 * operations per second, everything else as given, the scenario's events in
 * both (real-events.ts says which the real run could not carry out).
 * Compared: stable latency p50 and p99, messages per operation and per
 * write, bytes per write under load, and the catch-up time of a joining or
 * returning node; agreement means each within 1.5× of the other.
 *
 * The real run is in real time, so its figures vary from run to run: a
 * report made with `--real` is not byte-identical across runs (the model's
 * figures in it still are).
 */
import type { RealStackComparison, RealStackFigures } from '../report/report.js'
import { runOnce, type Progress } from '../run.js'
import type { SimOptions } from '../scenario/options.js'
import { findScenario } from '../scenario/scenarios.js'
import { round } from '../metrics/stats.js'
import { runRealStack } from './real-stack.js'

const AGREEMENT_FACTOR = 1.5

export async function compareWithRealStack (o: SimOptions, progress?: Progress): Promise<RealStackComparison> {
  const opts: SimOptions = { ...o, nodes: [o.realNodes], rate: o.realRate }
  // The real nodes share one thread: the model they are compared with puts its nodes on one CPU too.
  const run = await runOnce(findScenario(o.scenario), { ...opts, cpuShared: true }, o.realNodes, progress)
  const model = run.summary
  const m = run.world.metrics
  const [from, to] = m.window
  const modelWindowBytes = m.windowSent.reduce((a, b) => a + b, 0)
  const real = await runRealStack(opts, o.realNodes, progress)
  const modelFigures: RealStackFigures = {
    messagesPerOp: model.messagesPerOp,
    messagesPerWrite: round(model.messages.total / Math.max(1, model.operations.writes), 2),
    bytesPerWriteUnderLoad: round(modelWindowBytes / Math.max(1, m.writes.filter(w => w.at >= from && w.at < to).length), 0),
    latencyP50: model.latencyMs.p50,
    latencyP99: model.latencyMs.p99,
    ...(model.catchUp[0] !== undefined ? { catchUpMs: model.catchUp[0].timeMs } : {})
  }
  const realFigures: RealStackFigures = {
    messagesPerOp: real.messagesPerOp,
    messagesPerWrite: real.messagesPerWrite,
    bytesPerWriteUnderLoad: real.bytesPerWriteUnderLoad,
    latencyP50: real.latency.p50,
    latencyP99: real.latency.p99,
    ...(real.catchUpMs !== undefined ? { catchUpMs: real.catchUpMs } : {})
  }
  const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
    a == null || b == null ? null : round(b === 0 ? (a === 0 ? 1 : Infinity) : a / b, 2)
  const ratios: RealStackComparison['ratio'] = {
    messagesPerOp: ratio(realFigures.messagesPerOp, modelFigures.messagesPerOp),
    messagesPerWrite: ratio(realFigures.messagesPerWrite, modelFigures.messagesPerWrite),
    bytesPerWriteUnderLoad: ratio(realFigures.bytesPerWriteUnderLoad, modelFigures.bytesPerWriteUnderLoad),
    latencyP50: ratio(realFigures.latencyP50, modelFigures.latencyP50),
    latencyP99: ratio(realFigures.latencyP99, modelFigures.latencyP99),
    ...('catchUpMs' in modelFigures || 'catchUpMs' in realFigures ? { catchUpMs: ratio(realFigures.catchUpMs, modelFigures.catchUpMs) } : {})
  }
  const within = (x: number | null | undefined): boolean => x != null && x <= AGREEMENT_FACTOR && x >= 1 / AGREEMENT_FACTOR
  const outside = Object.entries(ratios).filter(([, x]) => !within(x)).map(([k]) => k)
  return {
    nodes: o.realNodes,
    rate: o.realRate,
    model: modelFigures,
    real: {
      ...realFigures,
      latencyMax: real.latency.max,
      converged: real.converged,
      lostWrites: real.lostWrites,
      operations: real.operations.total
    },
    ratio: ratios,
    withinFactor: AGREEMENT_FACTOR,
    agrees: outside.length === 0,
    outside,
    events: real.events,
    notes: [
      `Both runs: ${o.realNodes} nodes, ${o.realRate} operations/s, every other option as given. The real nodes are the node's own libp2p stack ` +
      `(TCP replaced by the in-memory transport, each buffer delayed by the model's link model) in one Node.js process, in real time.`,
      `Why not the full rate: ${o.realNodes} real nodes share one JavaScript thread, and at 100 operations/s their work (noise, pnet, ` +
      'signatures, SQLite) takes more than that thread has: the run falls behind real time and its latency measures the queue, not the mesh.',
      'The model run compared puts its nodes on one virtual CPU (--cpu-shared), as the real nodes share one thread.',
      'Bytes per write under load: bytes on the wire while the load ran (its first 10 % left out) over the writes issued then; the real count is every byte ' +
      'on the connections (handshakes, identify, ping, muxer window updates), the model\'s its protocol messages with their framing.'
    ]
  }
}
