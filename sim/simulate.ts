/**
 * Runs a scenario over each of its node counts and assembles the report;
 * the costs (wall time, memory) come back beside it, never inside it.
 */
import { buildReport, type RealStackComparison, type Report } from './report/report.js'
import { runOnce, type Progress, type RunCost } from './run.js'
import type { SimOptions } from './scenario/options.js'
import { resolveOptions } from './scenario/scenarios.js'

export interface SimulationOutput {
  report: Report
  /** Per node count: wall time and memory of that run. */
  costs: Array<{ nodes: number } & RunCost>
}

interface RunScenarioHooks {
  progress?: Progress
  /** Runs the real-stack comparison when the options ask for it (the CLI passes the libp2p-backed runner). */
  realStack?: (opts: SimOptions, progress?: Progress) => Promise<RealStackComparison>
}

export async function runScenario (overrides: Partial<SimOptions>, hooks: RunScenarioHooks = {}): Promise<SimulationOutput> {
  const { scenario, opts } = resolveOptions(overrides)
  const runs = []
  const costs = []
  for (const n of opts.nodes) {
    const r = await runOnce(scenario, opts, n, hooks.progress)
    runs.push(r.summary)
    costs.push({ nodes: n, ...r.cost })
    hooks.progress?.(`${scenario.name} n=${n}: done in ${(r.cost.wallMs / 1000).toFixed(1)} s wall, peak rss ${r.cost.peakRssMiB} MiB`)
  }
  let report = buildReport(scenario, opts, runs)
  if (opts.real && hooks.realStack !== undefined) report = buildReport(scenario, opts, runs, await hooks.realStack(opts, hooks.progress))
  return { report, costs }
}
