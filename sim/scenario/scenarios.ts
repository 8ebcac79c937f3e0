/**
 * The scenarios `npm run sim -- --scenario NAME` runs, and the profiles
 * (named configurations of gossip and push batching) they run under.
 *
 * Options resolve in this order, later winning: the base defaults, the
 * scenario's defaults, the profile, the command line.
 */
import { gossipDout } from '../../src/mesh/gossip-degree.js'
import { addBadPeer } from './bad-peer.js'
import { clockStepSetup } from './clock-step.js'
import { sameContentSetup } from './same-content.js'
import { BASE_DEFAULTS, checkOptions, UsageError, type SimOptions } from './options.js'
import type { BarSet, Scenario } from './scenario.js'

/**
 * Profiles, each one a node can be set to run (node options: connection
 * target, gossipsub degree, push window, anti-entropy; the report names
 * them). `library` is a node with default options. `low-latency` and
 * `batched` are the configurations Maelstrom's bars were first met in; why
 * each value is what it is is in docs/simulator.md ("Meeting the bars").
 */
export const PROFILES: Record<SimOptions['profile'], Partial<SimOptions>> = {
  library: {},
  // Every node connected to every other (up to 101 nodes); flood publishing reaches them all in one hop, so no relaying mesh.
  'low-latency': { targetPeers: 100, D: 0, Dlo: 0, Dhi: 0, flushMs: 5, antiEntropy: 30_000 },
  // A sparse mesh (10 connections, mesh degree 2-3) and push frames batched for half a second.
  batched: { targetPeers: 10, D: 2, Dlo: 2, Dhi: 3, flushMs: 500, antiEntropy: 30_000 }
}

/** Maelstrom's broadcast bars (challenges 3d and 3e). */
const BARS_3D: BarSet = {
  label: 'Maelstrom 3d (low latency)',
  bars: [
    { name: 'messages per operation', field: 'messagesPerOp', limit: 30 },
    { name: 'stable latency median (ms)', field: 'latencyP50', limit: 400 },
    { name: 'stable latency max (ms)', field: 'latencyMax', limit: 600 }
  ]
}
const BARS_3E: BarSet = {
  label: 'Maelstrom 3e (batched)',
  bars: [
    { name: 'messages per operation', field: 'messagesPerOp', limit: 20 },
    { name: 'stable latency median (ms)', field: 'latencyP50', limit: 1000 },
    { name: 'stable latency max (ms)', field: 'latencyMax', limit: 2000 }
  ]
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'baseline',
    summary: "Maelstrom's broadcast setup: 25 nodes, 100 ms links, 100 ops/s, half writes, 20 s and a quiet tail (profile low-latency unless told)",
    defaults: { profile: 'low-latency' },
    bars: () => [BARS_3D, BARS_3E]
  },
  {
    name: 'partition-heal',
    summary: 'baseline with the mesh cut in two random halves every other 10 s, healed at the end of the load',
    defaults: { partitionEvery: 10, duration: 40, tail: 20 },
    bars: () => [BARS_3D, BARS_3E]
  },
  {
    name: 'fresh-join',
    summary: 'a node with an empty store joins 15 s into the load: catch-up time and bytes',
    defaults: { duration: 30, joinAt: 15, tail: 15 },
    setup: (ctx) => {
      ctx.at(ctx.loadStart + ctx.opts.joinAt * 1000, () => {
        const n = ctx.join()
        ctx.world.metrics.event({ kind: 'join', nodes: [n] })
        // Joining a preloaded mesh, it must receive the library too: as many records as an up node holds now.
        const records = ctx.world.node(n).records
        const holder = ctx.world.nodes.find(m => m.up && m.index !== n)
        const held = ctx.opts.preload > 0 && holder !== undefined ? holder.records.countRecords() : 0
        ctx.world.metrics.catchUpStarted(n, 'fresh-join', held > 0 ? { target: held, count: () => records.countRecords() } : undefined)
      })
    }
  },
  {
    name: 'return-after-absence',
    summary: 'a node is down for --absent seconds of the load, then returns and catches up',
    defaults: { duration: 30, absent: 15, tail: 15 },
    setup: (ctx) => {
      const node = ctx.world.node(1)
      const stopAt = ctx.loadStart + 2000
      ctx.at(stopAt, () => {
        node.stop()
        ctx.world.metrics.event({ kind: 'stop', nodes: [node.index] })
      })
      ctx.at(stopAt + ctx.opts.absent * 1000, () => {
        node.start()
        ctx.world.metrics.event({ kind: 'start', nodes: [node.index] })
        ctx.world.metrics.catchUpStarted(node.index, 'return')
      })
    }
  },
  {
    name: 'clock-skew',
    summary: 'clocks offset by up to ±--skew ms; node 0 runs --skew ahead (past the 10 s drift limit when skew > 10000)',
    defaults: { skew: 12_000, duration: 30, tail: 20 },
    setup: (ctx) => {
      const rng = ctx.world.rng.fork('skew')
      for (let i = 0; i < ctx.honest; i++) {
        const s = i === 0 ? ctx.opts.skew : Math.round(rng.uniform(-ctx.opts.skew, ctx.opts.skew) / 4)
        ctx.world.node(i).skewMs = s
      }
      ctx.world.metrics.event({ kind: 'skew', nodes: [0], detail: `node 0 at +${ctx.opts.skew} ms, others within ±${ctx.opts.skew / 4} ms` })
    }
  },
  {
    name: 'clock-step',
    summary: 'node 0\'s wall clock jumps --clock-step ms ahead 5 s into the load and back after --clock-step-for s: how long writes were refused, and by whom',
    defaults: { clockStep: 30_000, clockStepFor: 10, duration: 40, tail: 10 },
    setup: clockStepSetup
  },
  {
    name: 'bad-peer',
    summary: 'a member publishes forged, malformed, replayed, far-future and oversized frames at --bad-rate per second',
    defaults: { badPeers: 1, badRate: 20 },
    setup: (ctx) => {
      for (let i = 0; i < ctx.opts.badPeers; i++) addBadPeer(ctx, ctx.world.rng.fork(`bad-${i}`))
    }
  },
  {
    name: 'same-content-twice',
    summary: 'both halves of a partitioned mesh mint records for the same content, then meet: one document everywhere',
    defaults: { rate: 20, duration: 20, tail: 15 },
    setup: sameContentSetup
  },
  {
    name: 'scale',
    summary: 'the baseline load at 5 to 1,000 nodes (lighter: 20 ops/s for 10 s) and how cost per node grows',
    defaults: { nodes: [5, 10, 25, 50, 100, 250, 500, 1000], rate: 20, duration: 10, tail: 10, warmup: 5 }
  }
]

export function findScenario (name: string): Scenario {
  const s = SCENARIOS.find(x => x.name === name)
  if (s === undefined) throw new UsageError(`unknown scenario ${JSON.stringify(name)}; known: ${SCENARIOS.map(x => x.name).join(', ')}`)
  return s
}

/** Base defaults, then the scenario's, then the profile's, then the command line's. */
export function resolveOptions (overrides: Partial<SimOptions>): { scenario: Scenario, opts: SimOptions } {
  const scenario = findScenario(overrides.scenario ?? BASE_DEFAULTS.scenario)
  const profile = overrides.profile ?? scenario.defaults.profile ?? BASE_DEFAULTS.profile
  const merged = { ...BASE_DEFAULTS, ...scenario.defaults, ...PROFILES[profile], ...overrides, scenario: scenario.name, profile }
  // Dout follows D and Dlo as on a node (src/mesh/gossip-degree.ts) unless the command line sets it.
  if (overrides.Dout === undefined) merged.Dout = gossipDout(merged)
  const opts = checkOptions(merged)
  return { scenario, opts }
}
