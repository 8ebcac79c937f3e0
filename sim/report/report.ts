/**
 * report.json: the figures of a scenario's runs, byte-identical for the
 * same seed and options (no wall clock, no machine figures: those go to
 * timing.json). For a sweep over node counts the headline fields are the
 * largest run's, and `converged`, `lostWrites` and `forgedApplied` cover all.
 */
import { meshOptions } from '../../src/mesh/protocol/index.js'
import { checkGossipConfig, GOSSIPSUB_DEFAULTS } from '../gossip/config.js'
import type { Summary } from '../metrics/stats.js'
import type { RunSummary } from '../metrics/summary.js'
import { DEFAULT_NET } from '../net/network.js'
import { worldOptions } from '../run.js'
import type { SimOptions } from '../scenario/options.js'
import { nodeCommand, nodeSettings, type NodeSettings } from '../scenario/node-config.js'
import type { Scenario } from '../scenario/scenario.js'

interface BarResult { name: string, limit: number, value: number, ok: boolean }

/** The figures the real-stack comparison puts side by side (sim/real/compare.ts). */
export interface RealStackFigures {
  messagesPerOp: number
  messagesPerWrite: number
  /** Bytes on the wire while the load ran (its first 10 % left out) over the writes issued then. */
  bytesPerWriteUnderLoad: number
  latencyP50: number
  latencyP99: number
  /** The first joining or returning node's catch-up (null: not within the run); absent when no node joins or returns. */
  catchUpMs?: number | null
}

/** The real-stack comparison (filled by the real-stack runner). */
export interface RealStackComparison {
  nodes: number
  /** Operations per second of both compared runs. */
  rate: number
  model: RealStackFigures
  real: RealStackFigures & { latencyMax: number, converged: boolean, lostWrites: number, operations: number }
  /** Real over model, per figure (null: one side has none). */
  ratio: { messagesPerOp: number | null, messagesPerWrite: number | null, bytesPerWriteUnderLoad: number | null, latencyP50: number | null,
    latencyP99: number | null, catchUpMs?: number | null }
  withinFactor: number
  /** Every ratio within the factor. */
  agrees: boolean
  /** The figures whose ratio is outside it. */
  outside: string[]
  /** The scenario's events and network settings the real run carried out, and those it could not. */
  events: { run: string[], notRun: string[] }
  notes: string[]
}

export interface Report {
  scenario: string
  seed: string
  profile: string
  nodes: number
  nodeCounts: number[]
  converged: boolean
  lostWrites: number
  unavailableWrites: number
  forgedApplied: number
  messagesPerOp: number
  bytesPerWrite: number
  duplicatesPerWrite: number
  latencyMs: Summary
  /** Latency of writes issued outside partitions (see RunSummary); the bars are checked on it. */
  latencyMsUnpartitioned: Summary
  bars: Array<{ label: string, ok: boolean, results: BarResult[] }>
  /** The node options that run this configuration, or why no node can (model only). */
  node: NodeSettings & { command: string }
  options: SimOptions
  config: { gossip: object, mesh: object, network: object }
  runs: RunSummary[]
  realStack?: RealStackComparison
}

export function buildReport (scenario: Scenario, o: SimOptions, runs: RunSummary[], realStack?: RealStackComparison): Report {
  if (runs.length === 0) throw new Error('a report needs at least one run')
  const head = runs[runs.length - 1]
  const w = worldOptions(o)
  // With partitions, a write born on one side cannot be readable on the other before the heal: latency bars
  // are checked on the writes made while the network was whole (equal to all writes when nothing was cut).
  const lat = head.latencyMsUnpartitioned
  const value = (field: string): number => field === 'messagesPerOp' ? head.messagesPerOp : field === 'latencyP50' ? lat.p50 : lat.max
  const bars = (scenario.bars?.(o) ?? []).map(set => {
    const results = set.bars.map(b => ({ name: b.name, limit: b.limit, value: value(b.field), ok: value(b.field) < b.limit }))
    return { label: set.label, ok: results.every(r => r.ok) && head.lostWrites === 0 && head.converged, results }
  })
  const settings = nodeSettings(o)
  const report: Report = {
    scenario: scenario.name,
    seed: o.seed,
    profile: o.profile,
    nodes: head.nodes,
    nodeCounts: runs.map(r => r.nodes),
    converged: runs.every(r => r.converged),
    lostWrites: runs.reduce((a, r) => a + r.lostWrites, 0),
    unavailableWrites: runs.reduce((a, r) => a + r.unavailableWrites, 0),
    forgedApplied: runs.reduce((a, r) => a + r.forgedApplied, 0),
    messagesPerOp: head.messagesPerOp,
    bytesPerWrite: head.bytesPerWrite,
    duplicatesPerWrite: head.duplicatesPerWrite,
    latencyMs: head.latencyMs,
    latencyMsUnpartitioned: head.latencyMsUnpartitioned,
    bars,
    node: { ...settings, command: nodeCommand(settings) },
    options: o,
    config: {
      gossip: checkGossipConfig({ ...GOSSIPSUB_DEFAULTS, ...w.gossip }),
      mesh: meshOptions(w.mesh),
      network: { ...DEFAULT_NET, latency: w.latency, link: w.link, jitterMs: w.jitterMs, loss: w.loss, lossBetweenRegions: w.lossBetweenRegions,
        lossMode: w.lossMode, uplinkBps: w.uplinkBps, downlinkBps: w.downlinkBps }
    },
    runs
  }
  if (realStack !== undefined) report.realStack = realStack
  return report
}

/** The JSON text written to report.json (two-space indent, trailing newline). */
export function reportJson (r: Report): string {
  return JSON.stringify(r, null, 2) + '\n'
}
