/**
 * What a scenario is: defaults for the options, and a setup that schedules
 * its own events (churn, joins, skew, bad peers) on a world before the run.
 * The common machinery (nodes, topology, load, partitions) is in run.ts.
 */
import type { World } from '../world.js'
import type { SimOptions } from './options.js'

export interface ScenarioContext {
  world: World
  opts: SimOptions
  /** Honest nodes created at start (indices 0…n-1). */
  honest: number
  /** Virtual time the client load starts and ends (ms). */
  loadStart: number
  loadEnd: number
  /** Schedules `fn` at virtual time `t` (ms). */
  at: (t: number, fn: () => void) => void
  /** Marks nodes the checks must leave out (bad peers). */
  markBad: (index: number) => void
  /** Registers a key that must never appear on an honest node (a forged or refused entry). */
  forbid: (key: string) => void
  /** Adds a named check computed after the clock stops; its value goes into the report's `checks`. */
  check: (name: string, fn: () => CheckValue) => void
  /** Creates and starts a fresh node with an empty store that dials `targetPeers` random up nodes; returns its index. */
  join: () => number
}

export type CheckValue = number | boolean | string | Record<string, number | boolean | string>

export interface Scenario {
  name: string
  summary: string
  defaults: Partial<SimOptions>
  /** Schedules the scenario's own events; runs after the nodes exist and before the clock starts. */
  setup?: (ctx: ScenarioContext) => void
  /** Named configurations the report checks against bars (Maelstrom 3d/3e for baseline). */
  bars?: (opts: SimOptions) => BarSet[]
}

interface Bar {
  name: string
  limit: number
  /** The report field the bar is checked against. */
  field: 'messagesPerOp' | 'latencyP50' | 'latencyMax'
}

export interface BarSet {
  label: string
  bars: Bar[]
}
