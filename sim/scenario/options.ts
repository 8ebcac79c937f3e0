/**
 * Every option of a simulation, in one table that drives the command line
 * (`--name value`), `--help`, the defaults and the `options` section of the
 * report. A scenario sets its own defaults (scenarios.ts); a flag on the
 * command line wins over them.
 */
import { DEFAULT_GOSSIP_DEGREE, gossipDout } from '../../src/mesh/gossip-degree.js'
import { DEFAULT_CPU_COSTS } from '../cpu.js'
import { parseLatency } from '../../src/mesh/testing/index.js'
import { DEFAULT_TARGET_PEERS } from './node-config.js'

type OptionValue = string | number | boolean | number[]

export interface SimOptions {
  scenario: string
  profile: 'library' | 'low-latency' | 'batched'
  nodes: number[]
  seed: string
  warmup: number
  duration: number
  tail: number
  rate: number
  writes: number
  newRecords: number
  valueBytes: number
  recordShape: 'small' | 'library'
  preload: number
  preloadNodes: number
  scan: number
  latency: string
  link: 'pipelined' | 'serial'
  jitter: number
  loss: number
  lossBetweenRegions: number
  lossMode: 'drop' | 'retransmit'
  bandwidth: number
  downlink: number
  targetPeers: number
  dial: 'random' | 'regions'
  crossRegionPeers: number
  D: number
  Dlo: number
  Dhi: number
  Dout: number
  Dlazy: number
  heartbeat: number
  floodPublish: boolean
  idontwantMin: number
  flushMs: number
  flushBytes: number
  antiEntropy: number
  requestTimeout: number
  cpuFactor: number
  cpuShared: boolean
  cpuMessageMs: number
  cpuKibMs: number
  cpuEntryMs: number
  partitionEvery: number
  partitionKind: 'halves' | 'isolate'
  absent: number
  joinAt: number
  skew: number
  clockStep: number
  clockStepFor: number
  badPeers: number
  badRate: number
  real: boolean
  realNodes: number
  realRate: number
}

interface OptionSpec {
  key: keyof SimOptions
  flag: string
  kind: 'string' | 'number' | 'boolean' | 'list'
  unit?: string
  help: string
  choices?: readonly string[]
}

export const OPTION_SPECS: readonly OptionSpec[] = [
  { key: 'scenario', flag: 'scenario', kind: 'string', help: 'which scenario to run (see above)' },
  { key: 'profile', flag: 'profile', kind: 'string', choices: ['library', 'low-latency', 'batched'],
    help: 'a named node configuration: connections, gossipsub degree, push window (see docs/simulator.md); flags override it' },
  { key: 'nodes', flag: 'nodes', kind: 'list', help: 'node count, or a comma-separated list for a sweep (e.g. 5,25,100)' },
  { key: 'seed', flag: 'seed', kind: 'string', help: 'seed of every random choice: the same seed and options give the same report.json' },
  { key: 'warmup', flag: 'warmup', kind: 'number', unit: 's', help: 'virtual time for the nodes to connect and form the mesh before the load starts' },
  { key: 'duration', flag: 'duration', kind: 'number', unit: 's', help: 'virtual time of client load' },
  { key: 'tail', flag: 'tail', kind: 'number', unit: 's', help: 'quiet virtual time after the load, before convergence is checked' },
  { key: 'rate', flag: 'rate', kind: 'number', unit: 'ops/s', help: 'client operations per second over the whole mesh (Poisson arrivals)' },
  { key: 'writes', flag: 'writes', kind: 'number', help: 'fraction of operations that are writes (the rest are local reads)' },
  { key: 'newRecords', flag: 'new-records', kind: 'number', help: 'fraction of writes that create a record (the rest update one)' },
  { key: 'valueBytes', flag: 'value-bytes', kind: 'number', unit: 'B', help: 'length of the title each write sets' },
  { key: 'recordShape', flag: 'record-shape', kind: 'string', choices: ['small', 'library'], help: 'what a record holds: small (a title and a size) or library (the benches\' synthetic library records, about 40 fields); for the preload and the load\'s new records' },
  { key: 'preload', flag: 'preload', kind: 'number', help: 'records every store holds before the clock starts (the mesh in sync; a joining node has none)' },
  { key: 'preloadNodes', flag: 'preload-nodes', kind: 'number', help: 'with --preload: only the first this many nodes hold them (0: every node)' },
  { key: 'scan', flag: 'scan', kind: 'number', help: 'node 0 ingests this many new library records from the load\'s start, each as soon as the previous is acknowledged and its CPU is free (a library scan beside the load)' },
  { key: 'latency', flag: 'latency', kind: 'string', unit: 'ms',
    help: 'one-way link delay: 100, uniform:50:150, exp:100, regions:world3, regions:3:80 (3 regions 80 ms apart)' },
  { key: 'link', flag: 'link', kind: 'string', choices: ['pipelined', 'serial'], help: 'pipelined: delays overlap as on a real link; serial: one message per delay per direction, as libp2p\'s in-memory transport' },
  { key: 'jitter', flag: 'jitter', kind: 'number', unit: 'ms', help: 'uniform extra delay in [0, jitter) per message' },
  { key: 'loss', flag: 'loss', kind: 'number', help: 'probability that one transmission is lost' },
  { key: 'lossBetweenRegions', flag: 'loss-between-regions', kind: 'number',
    help: 'with regions:… latency: a further loss probability on links between regions (on top of --loss)' },
  { key: 'lossMode', flag: 'loss-mode', kind: 'string', choices: ['drop', 'retransmit'],
    help: 'drop: the message is gone; retransmit: it arrives one 200 ms RTO later per loss (TCP)' },
  { key: 'bandwidth', flag: 'bandwidth', kind: 'number', unit: 'Mbit/s', help: 'upload bandwidth of each node (0: unlimited)' },
  { key: 'downlink', flag: 'downlink', kind: 'number', unit: 'Mbit/s', help: 'download bandwidth of each node, shared by its connections (0: unlimited)' },
  { key: 'targetPeers', flag: 'target-peers', kind: 'number', help: 'connections each node keeps (the node\'s META_CORE_TARGET_PEERS): at start each node dials random peers until it has this many, inbound ones counting' },
  { key: 'dial', flag: 'dial', kind: 'string', choices: ['random', 'regions'], help: 'whom a node dials: random members (a node\'s default), or with regions:… latency, members of its own region but for --cross-region-peers of them (a node\'s META_CORE_CROSS_REGION_PEERS, which tells regions apart by round trip)' },
  { key: 'crossRegionPeers', flag: 'cross-region-peers', kind: 'number',
    help: 'with --dial regions: connections each node keeps to other regions (the rest inside its own)' },
  { key: 'D', flag: 'gossip-d', kind: 'number', help: 'gossipsub mesh degree D (the node\'s META_CORE_GOSSIP_D, default 6)' },
  { key: 'Dlo', flag: 'gossip-dlo', kind: 'number', help: 'gossipsub Dlo (the node\'s META_CORE_GOSSIP_DLO, default 4)' },
  { key: 'Dhi', flag: 'gossip-dhi', kind: 'number', help: 'gossipsub Dhi (the node\'s META_CORE_GOSSIP_DHI, default 12)' },
  { key: 'Dout', flag: 'gossip-dout', kind: 'number',
    help: 'gossipsub Dout: outbound peers kept in the mesh (default: what the node derives from D and Dlo, 2 or less; any other value is model only)' },
  { key: 'Dlazy', flag: 'gossip-dlazy', kind: 'number', help: 'gossipsub Dlazy: peers sent IHAVE per heartbeat (default 6)' },
  { key: 'heartbeat', flag: 'heartbeat', kind: 'number', unit: 'ms', help: 'gossipsub heartbeat interval (default 1000)' },
  { key: 'floodPublish', flag: 'flood-publish', kind: 'boolean', help: 'publish to every subscribed peer, not only the mesh (library default true)' },
  { key: 'idontwantMin', flag: 'idontwant-min', kind: 'number', unit: 'B', help: 'messages at least this large trigger IDONTWANT (library default 512)' },
  { key: 'flushMs', flag: 'flush-ms', kind: 'number', unit: 'ms', help: 'push window: a frame leaves this long after its first change (the node\'s META_CORE_PUSH_WINDOW_MS)' },
  { key: 'flushBytes', flag: 'flush-bytes', kind: 'number', unit: 'B', help: 'push batching: or as soon as this many bytes wait' },
  { key: 'antiEntropy', flag: 'anti-entropy', kind: 'number', unit: 'ms', help: 'pull from each connected peer about this often, jittered ±25 % (the node\'s META_CORE_ANTI_ENTROPY_MS)' },
  { key: 'requestTimeout', flag: 'request-timeout', kind: 'number', unit: 'ms', help: 'deadline of one pull request' },
  { key: 'cpuFactor', flag: 'cpu-factor', kind: 'number', help: 'scales every CPU cost of the virtual CPU (0: processing takes no virtual time; 2: a machine half as fast as the calibration\'s)' },
  { key: 'cpuShared', flag: 'cpu-shared', kind: 'boolean', help: 'every node on one virtual CPU, as the real-stack mode\'s nodes share one thread (its comparison run sets it)' },
  { key: 'cpuMessageMs', flag: 'cpu-message-ms', kind: 'number', unit: 'ms',
    help: 'virtual CPU: cost of handling one message (libp2p decryption, muxing, protobuf, signature)' },
  { key: 'cpuKibMs', flag: 'cpu-kib-ms', kind: 'number', unit: 'ms',
    help: 'virtual CPU: cost per KiB of a message, on the receiving side and on the side serving a page' },
  { key: 'cpuEntryMs', flag: 'cpu-entry-ms', kind: 'number', unit: 'ms',
    help: 'virtual CPU: cost per key committed to a store (a local write or an applied entry)' },
  { key: 'partitionEvery', flag: 'partition-every', kind: 'number', unit: 's', help: 'toggle a network partition on and off this often (0: never)' },
  { key: 'partitionKind', flag: 'partition-kind', kind: 'string', choices: ['halves', 'isolate'],
    help: 'halves: two random halves; isolate: one random node alone' },
  { key: 'absent', flag: 'absent', kind: 'number', unit: 's', help: 'return-after-absence: how long the node is down' },
  { key: 'joinAt', flag: 'join-at', kind: 'number', unit: 's', help: 'fresh-join: when (into the load) the new node starts' },
  { key: 'skew', flag: 'skew', kind: 'number', unit: 'ms',
    help: 'clock-skew: the largest clock offset; nodes get offsets spread over ±skew, node 0 gets +skew' },
  { key: 'clockStep', flag: 'clock-step', kind: 'number', unit: 'ms', help: 'clock-step: how far node 0\'s wall clock jumps ahead, 5 s into the load' },
  { key: 'clockStepFor', flag: 'clock-step-for', kind: 'number', unit: 's', help: 'clock-step: how long until it jumps back' },
  { key: 'badPeers', flag: 'bad-peers', kind: 'number', help: 'bad-peer: misbehaving nodes' },
  { key: 'badRate', flag: 'bad-rate', kind: 'number', unit: 'frames/s', help: 'bad-peer: bad frames each bad node publishes per second' },
  { key: 'real', flag: 'real', kind: 'boolean', help: 'also run the scenario on real libp2p nodes (in-memory transport, real time) and compare' },
  { key: 'realNodes', flag: 'real-nodes', kind: 'number', help: 'node count of the real-stack comparison (at most about 30)' },
  { key: 'realRate', flag: 'real-rate', kind: 'number', unit: 'ops/s',
    help: 'operations per second of the real-stack comparison (and of the model run it is compared with)' }
]

export const BASE_DEFAULTS: SimOptions = {
  scenario: 'baseline',
  profile: 'library',
  nodes: [25],
  seed: '1',
  warmup: 5,
  duration: 20,
  tail: 10,
  rate: 100,
  writes: 0.5,
  newRecords: 0.5,
  valueBytes: 24,
  recordShape: 'small',
  preload: 0,
  preloadNodes: 0,
  scan: 0,
  latency: '100',
  link: 'pipelined',
  jitter: 0,
  loss: 0,
  lossBetweenRegions: 0,
  lossMode: 'drop',
  bandwidth: 0,
  downlink: 0,
  targetPeers: DEFAULT_TARGET_PEERS,
  dial: 'random',
  crossRegionPeers: 2,
  D: DEFAULT_GOSSIP_DEGREE.D,
  Dlo: DEFAULT_GOSSIP_DEGREE.Dlo,
  Dhi: DEFAULT_GOSSIP_DEGREE.Dhi,
  Dout: gossipDout(DEFAULT_GOSSIP_DEGREE),
  Dlazy: 6,
  heartbeat: 1000,
  floodPublish: true,
  idontwantMin: 512,
  flushMs: 50,
  flushBytes: 65_536,
  antiEntropy: 15_000,
  requestTimeout: 15_000,
  cpuFactor: 1,
  cpuShared: false,
  cpuMessageMs: DEFAULT_CPU_COSTS.messageMs,
  cpuKibMs: DEFAULT_CPU_COSTS.kibMs,
  cpuEntryMs: DEFAULT_CPU_COSTS.entryMs,
  partitionEvery: 0,
  partitionKind: 'halves',
  absent: 0,
  joinAt: 0,
  skew: 0,
  clockStep: 0,
  clockStepFor: 10,
  badPeers: 0,
  badRate: 0,
  real: false,
  realNodes: 25,
  realRate: 20
}

export class UsageError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** Parses `--flag value` pairs (and `--flag=value`, and bare boolean flags) into overrides. */
export function parseArgs (argv: readonly string[]): { overrides: Partial<SimOptions>, out: string | undefined, help: boolean, quiet: boolean } {
  const overrides: Partial<SimOptions> = {}
  let out: string | undefined
  let help = false
  let quiet = false
  const byFlag = new Map(OPTION_SPECS.map(s => [s.flag, s]))
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--help' || arg === '-h') { help = true; continue }
    if (arg === '--quiet') { quiet = true; continue }
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(arg)} (options start with --)`)
    let name = arg.slice(2)
    let value: string | undefined
    const eq = name.indexOf('=')
    if (eq >= 0) { value = name.slice(eq + 1); name = name.slice(0, eq) }
    if (name === 'out') {
      out = value ?? argv[++i]
      if (out === undefined || out === '') throw new UsageError('--out needs a directory')
      continue
    }
    const spec = byFlag.get(name)
    if (spec === undefined) throw new UsageError(`unknown option --${name} (see --help)`)
    if (spec.kind === 'boolean' && value === undefined && (argv[i + 1] === undefined || argv[i + 1].startsWith('--'))) value = 'true'
    value ??= argv[++i]
    if (value === undefined) throw new UsageError(`--${name} needs a value`)
    ;(overrides as Record<string, OptionValue>)[spec.key] = parseValue(spec, value)
  }
  return { overrides, out, help, quiet }
}

function parseValue (spec: OptionSpec, v: string): OptionValue {
  const bad = (what: string): never => { throw new UsageError(`--${spec.flag}: ${what}, got ${JSON.stringify(v)}`) }
  switch (spec.kind) {
    case 'string':
      if (spec.choices !== undefined && !spec.choices.includes(v)) bad(`expected one of ${spec.choices.join(', ')}`)
      return v
    case 'number': {
      const n = Number(v)
      if (v.trim() === '' || !Number.isFinite(n) || n < 0) bad('expected a number >= 0')
      return n
    }
    case 'boolean':
      if (v === 'true' || v === '1' || v === 'yes') return true
      if (v === 'false' || v === '0' || v === 'no') return false
      return bad('expected true or false')
    case 'list': {
      const xs = v.split(',').map(x => Number(x.trim()))
      if (xs.length === 0 || xs.some(x => !Number.isInteger(x) || x < 1)) bad('expected positive integers separated by commas')
      return xs
    }
  }
}

/** Checks the combined options (scenario defaults plus flags). */
export function checkOptions (o: SimOptions): SimOptions {
  const fail = (why: string): never => { throw new UsageError(why) }
  if (o.nodes.some(n => n < 2 || n > 5000)) fail('--nodes: each count must be between 2 and 5000')
  if (o.writes > 1) fail('--writes is a fraction between 0 and 1')
  if (o.newRecords > 1) fail('--new-records is a fraction between 0 and 1')
  if (o.loss >= 1) fail('--loss must be below 1')
  if (o.lossBetweenRegions >= 1) fail('--loss-between-regions must be below 1')
  if (o.duration <= 0) fail('--duration must be > 0')
  if (o.heartbeat <= 0) fail('--heartbeat must be > 0')
  if (o.flushMs < 1) fail('--flush-ms must be >= 1')
  if (o.antiEntropy < 100) fail('--anti-entropy must be >= 100 ms')
  if (o.valueBytes < 1 || o.valueBytes > 200_000) fail('--value-bytes must be between 1 and 200000')
  if (!Number.isInteger(o.preload) || o.preload > 2_000_000) fail('--preload must be a whole number of records up to 2000000')
  if (!Number.isInteger(o.preloadNodes)) fail('--preload-nodes must be a whole number')
  if (!Number.isInteger(o.scan) || o.scan > 1_000_000) fail('--scan must be a whole number of records up to 1000000')
  if (o.realNodes < 2 || o.realNodes > 60) fail('--real-nodes must be between 2 and 60')
  if (!(o.Dlo <= o.D && o.D <= o.Dhi)) fail(`gossipsub needs Dlo <= D <= Dhi, got ${o.Dlo}, ${o.D}, ${o.Dhi}`)
  try {
    parseLatency(o.latency, o.jitter)
  } catch (err) {
    fail((err as Error).message)
  }
  if (o.dial === 'regions' && parseLatency(o.latency).regionOf === undefined) fail('--dial regions needs a latency with regions (--latency regions:…)')
  if (!Number.isInteger(o.crossRegionPeers)) fail('--cross-region-peers must be a whole number')
  if ((o.Dout >= o.Dlo && o.Dlo > 0) || o.Dout > o.D / 2) fail(`gossipsub needs Dout < Dlo and Dout <= D/2, got Dout=${o.Dout}`)
  return o
}

/** The help text: usage, every option with its default, and the scenarios. */
export function helpText (scenarios: ReadonlyArray<{ name: string, summary: string }>, profiles: Record<string, Partial<SimOptions>> = {}): string {
  const lines = [
    'Usage: npm run sim -- [--scenario NAME] [options] [--out DIR]',
    '',
    'Runs a simulated mesh of nodes (the real replication core over real SQLite stores, on virtual time)',
    'and writes report.json and report.html to --out (default sim-out/<scenario>-<seed>).',
    '',
    'Scenarios:'
  ]
  for (const s of scenarios) lines.push(`  ${s.name.padEnd(22)} ${s.summary}`)
  if (Object.keys(profiles).length > 0) {
    lines.push('', 'Profiles (--profile; each sets these options):')
    for (const [name, p] of Object.entries(profiles)) {
      const set = Object.entries(p).map(([k, v]) => `${OPTION_SPECS.find(o => o.key === k)?.flag ?? k}=${String(v)}`).join(' ')
      lines.push(`  ${name.padEnd(22)} ${set === '' ? 'nothing: a node with default options' : set}`)
    }
  }
  lines.push('', 'Options, with their base defaults (a scenario and its profile change some; the command line wins):')
  for (const s of OPTION_SPECS) {
    const d = BASE_DEFAULTS[s.key]
    const def = Array.isArray(d) ? d.join(',') : String(d)
    const flag = `--${s.flag} ${s.kind === 'boolean' ? '[true|false]' : s.kind === 'list' ? 'N[,N…]' : s.kind === 'number' ? 'N' : 'S'}`
    lines.push(`  ${flag.padEnd(30)} ${s.help}${s.unit !== undefined ? ` (${s.unit})` : ''} [${def}]`)
  }
  lines.push(`  ${'--out DIR'.padEnd(30)} where to write report.json, report.html and timing.json`)
  lines.push(`  ${'--quiet'.padEnd(30)} no progress lines on stderr`)
  lines.push(`  ${'--help'.padEnd(30)} this text`)
  return lines.join('\n')
}
