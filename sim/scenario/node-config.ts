/**
 * The node's configuration is the simulator's: which node options set a
 * simulation's configuration (`env`), or why no node can be set to run it
 * (`modelOnly`). The options a node has are its own table (src/node/config.ts),
 * read here, with their ranges; the rest of the node's behaviour is fixed
 * (gossipsub's defaults, the core's), and a simulation that changes it
 * models a node that does not exist.
 */
import { gossipDegreeProblem, gossipDout } from '../../src/mesh/gossip-degree.js'
import { DEFAULT_MESH_OPTIONS } from '../../src/mesh/protocol/options.js'
import { OPTIONS, type NodeConfig } from '../../src/node/config.js'
import { isFar } from '../../src/mesh/peer-distance.js'
import { parseLatency } from '../../src/mesh/testing/index.js'
import { GOSSIPSUB_DEFAULTS } from '../gossip/config.js'
import type { SimOptions } from './options.js'

function nodeOption (key: keyof NodeConfig): (typeof OPTIONS)[number] {
  const o = OPTIONS.find(x => x.key === key)
  if (o === undefined) throw new Error(`the node has no option ${key}`)
  return o
}

/** The node's META_CORE_TARGET_PEERS default. */
export const DEFAULT_TARGET_PEERS = Number(nodeOption('targetPeers').def)

/** Simulation options a node sets with an option of its own. */
const SET_BY_NODE: ReadonlyArray<{ sim: keyof SimOptions, node: keyof NodeConfig }> = [
  { sim: 'targetPeers', node: 'targetPeers' },
  { sim: 'D', node: 'gossipD' },
  { sim: 'Dlo', node: 'gossipDlo' },
  { sim: 'Dhi', node: 'gossipDhi' },
  { sim: 'flushMs', node: 'pushWindowMs' },
  { sim: 'antiEntropy', node: 'antiEntropyMs' }
]

/** Simulation options of the node's fixed behaviour, with the value a node has. */
function fixedByNode (o: SimOptions): Array<{ sim: keyof SimOptions, flag: string, value: number | boolean | string, why: string }> {
  return [
    { sim: 'Dout', flag: 'gossip-dout', value: gossipDout(o), why: 'the node derives Dout from D and Dlo' },
    { sim: 'Dlazy', flag: 'gossip-dlazy', value: GOSSIPSUB_DEFAULTS.Dlazy, why: 'gossipsub\'s default' },
    { sim: 'heartbeat', flag: 'heartbeat', value: GOSSIPSUB_DEFAULTS.heartbeatMs, why: 'gossipsub\'s default' },
    { sim: 'floodPublish', flag: 'flood-publish', value: GOSSIPSUB_DEFAULTS.floodPublish, why: 'gossipsub\'s default' },
    { sim: 'idontwantMin', flag: 'idontwant-min', value: GOSSIPSUB_DEFAULTS.idontwantMinDataSize, why: 'gossipsub\'s default' },
    { sim: 'flushBytes', flag: 'flush-bytes', value: DEFAULT_MESH_OPTIONS.flushBytes, why: 'the core\'s default' },
    { sim: 'requestTimeout', flag: 'request-timeout', value: DEFAULT_MESH_OPTIONS.requestTimeoutMs, why: 'the core\'s default' }
  ]
}

export interface NodeSettings {
  /** A node can be set to run this configuration. */
  runnable: boolean
  /** The node options that set it: those that differ from the node's defaults (empty: a node with default options). */
  env: Record<string, string>
  /** When it cannot: each setting no node option gives. */
  modelOnly: string[]
}

export function nodeSettings (o: SimOptions): NodeSettings {
  const env: Record<string, string> = {}
  const modelOnly: string[] = []
  for (const m of SET_BY_NODE) {
    const spec = nodeOption(m.node)
    const v = o[m.sim] as number
    if (spec.kind.type === 'int' && (!Number.isInteger(v) || v < spec.kind.min || v > spec.kind.max)) {
      modelOnly.push(`${spec.env ?? spec.flag}=${v}: the node takes whole numbers from ${spec.kind.min} to ${spec.kind.max}`)
      continue
    }
    if (String(v) !== spec.def) env[spec.env ?? spec.flag] = String(v)
  }
  const dial = regionDialing(o)
  if (dial.problem !== undefined) modelOnly.push(dial.problem)
  else if (dial.env !== undefined) env[dial.env[0]] = dial.env[1]
  const degree = gossipDegreeProblem(o)
  if (degree !== undefined) modelOnly.push(degree)
  for (const f of fixedByNode(o)) {
    if (o[f.sim] !== f.value) modelOnly.push(`--${f.flag} ${String(o[f.sim])}: a node runs ${String(f.value)} (${f.why})`)
  }
  return { runnable: modelOnly.length === 0, env, modelOnly }
}

/**
 * `--dial regions --cross-region-peers N` is the node's region-aware
 * dialing (META_CORE_CROSS_REGION_PEERS=N), which tells regions apart by
 * round trip: the latency's regions must look near and far to it.
 */
function regionDialing (o: SimOptions): { env?: [string, string], problem?: string } {
  if (o.dial !== 'regions') return {}
  const spec = nodeOption('crossRegionPeers')
  const max = spec.kind.type === 'int' ? spec.kind.max : 0
  const flag = `--dial regions --cross-region-peers ${o.crossRegionPeers}`
  if (o.crossRegionPeers < 1 || o.crossRegionPeers > max) return { problem: `${flag}: the node keeps 1 to ${max} connections across regions (${spec.env ?? spec.flag}; 0 dials at random)` }
  const latency = parseLatency(o.latency)
  const regionOf = latency.regionOf
  if (regionOf === undefined) return { problem: `${flag}: the latency has no regions` }
  const ids = Array.from({ length: 64 }, (_, i) => i)
  const rtts = (same: boolean): number[] => ids.flatMap(a => ids.filter(b => b !== a && (regionOf(a) === regionOf(b)) === same).map(b =>
    2 * latency.mean(a, b)))
  const inside = rtts(true)
  const between = rtts(false)
  const nearest = Math.min(...inside, ...between)
  if (inside.some(r => isFar(r, nearest)) || between.some(r => !isFar(r, nearest))) {
    return { problem: `${flag}: a node tells regions apart by round trip (src/mesh/peer-distance.ts), and this latency's regions do not look apart to it` }
  }
  return { env: [spec.env ?? spec.flag, String(o.crossRegionPeers)] }
}

/** `META_CORE_X=1 META_CORE_Y=2 meta-core`, or why no node runs it. */
export function nodeCommand (s: NodeSettings): string {
  if (!s.runnable) return `model only: ${s.modelOnly.join('; ')}`
  return [...Object.entries(s.env).map(([k, v]) => `${k}=${v}`), 'meta-core start'].join(' ')
}
