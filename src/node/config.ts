/**
 * Node configuration: every option is an environment variable and a
 * matching `--flag` (flags win), validated once at start. All problems are
 * reported together, each naming both spellings, so an operator fixes a bad
 * deployment in one round. The parser itself is options.ts.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { FULL_HASH_ALGORITHMS, type FullHashAlgorithm } from '../cid/index.js'
import { MetaCoreError, type LogLevel } from '../common/index.js'
import { gossipDegreeProblem } from '../mesh/gossip-degree.js'
import { decodeInvite, type Invite } from './invite.js'
import { meshFiles, readBootstrapFile } from './mesh-folder.js'
import { isLoopback, loadAddressChecks, optionLines, optionName, parseChecked, type OptionSpec } from './options.js'
import { parseSwarmKey } from '../mesh/libp2p/swarm-key.js'

export { isLoopback } from './options.js'

export interface NodeConfig {
  dbPath: string
  httpHost: string
  httpPort: number
  apiToken: string | undefined
  filesPath: string
  enableFileWatcher: boolean
  rescanIntervalMs: number
  settleMs: number
  hashConcurrency: number
  /** Full-content CIDs the watcher computes in the background for every file it records (empty: none). */
  fullHash: FullHashAlgorithm[]
  /** The background full hash reads at most this many bytes per second. */
  fullHashBytesPerSecond: number
  indexExcludePrefixes: string[]
  logLevel: LogLevel
  /** pnet swarm key file; unset: standalone (no p2p port). */
  swarmKeyPath: string | undefined
  /** The node's identity key file (defaults beside the store: `<db folder>/<db name>.key`). */
  keyPath: string
  p2pListen: string[]
  bootstrap: string[]
  blockedPeers: string[]
  /** Connections the mesh keeps, dialing the members it learned (0: only the bootstrap list). */
  targetPeers: number
  /** Region-aware dialing: connections kept to far members by round-trip time, the rest near (0: members at random). */
  crossRegionPeers: number
  antiEntropyMs: number
  /** Gossipsub mesh degree D, Dlo, Dhi (gossip-degree.ts; Dout follows). */
  gossipD: number
  gossipDlo: number
  gossipDhi: number
  /** A push frame leaves this long after the first change it carries (the core's flushMs). */
  pushWindowMs: number
  maxClockDriftMs: number
  /** File bytes sent to one peer per second (the byte protocol's per-peer rate). */
  peerBytesPerSecond: number
  /** File transfers one peer may run from this node at once; beyond it the peer is answered busy. */
  peerMaxTransfers: number
  /** Files fetched whole from peers are kept here; unset: no cache. */
  cachePath: string | undefined
  cacheMaxBytes: number
  /** SIGTERM/SIGINT: everything stopped within this long, or the process exits 1 naming what it still waited for. */
  shutdownTimeoutMs: number
  /** `/health` says degraded once a node with a swarm key has had no reachable peer for this long. */
  healthNoPeerMs: number
  /** `/metrics` answers without the API token. */
  metricsPublic: boolean
  /** This node's name for people (peers, status, the page); the host name unless set. */
  nodeName: string
  /** Options of older versions this configuration still sets, which no longer do anything: said as warnings at start. */
  retired?: string[]
  /** Find members on the LAN by mDNS (default: on with a swarm key, unless the node listens on loopback addresses only). */
  mdns: boolean
  /** Relay for members behind NAT: `auto` (when others can dial this node), `on`, `off`. */
  relay: 'auto' | 'on' | 'off'
  /** Relays to keep reservations on (multiaddrs ending in /p2p/<peerId>); empty: any member that relays. */
  relayVia: string[]
  /** Addresses others can dial this node at that it cannot see itself (a forwarded port, a DNS name). */
  announce: string[]
  /** Ask the home router for a port mapping (UPnP, NAT-PMP). */
  upnp: boolean
  /** What a relay relays at once and per second, in all and per member. */
  relayMaxCircuits: number
  relayPeerCircuits: number
  relayBytesPerSecond: number
  relayPeerBytesPerSecond: number
  /** An invite to join a mesh (meta-core invite): its key and addresses are written to the node's folder at start. */
  invite: Invite | undefined
}

/** The configuration cannot be used; the message says what to change. */
export class ConfigError extends MetaCoreError {
  constructor (message: string) {
    super('invalid_config', message)
  }
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
/** The multiaddr the mesh listens on when a swarm key is set and META_CORE_P2P_LISTEN is not. */
const DEFAULT_P2P_LISTEN = '/ip4/0.0.0.0/tcp/4001'

/** The agreed option table; the order is the order of `--help`. */
export const OPTIONS: ReadonlyArray<OptionSpec<keyof NodeConfig>> = [
  { key: 'dbPath', env: 'META_CORE_DB_PATH', flag: 'db-path', kind: { type: 'path' }, def: './data/meta-core.db',
    help: 'SQLite store file (created with its folder if missing)' },
  { key: 'httpHost', env: 'META_CORE_HTTP_HOST', flag: 'http-host', aliases: ['host'], kind: { type: 'host' }, def: '127.0.0.1',
    help: 'address the API listens on; a non-loopback address needs META_CORE_API_TOKEN' },
  { key: 'httpPort', env: 'META_CORE_HTTP_PORT', flag: 'http-port', aliases: ['port'], kind: { type: 'int', min: 0, max: 65535 }, def: '9000',
    help: 'API port (0 picks a free one; the real port is printed)' },
  { key: 'apiToken', env: 'META_CORE_API_TOKEN', flag: 'api-token', kind: { type: 'secret' }, def: undefined,
    help: 'bearer token every write and internal read needs (unset: no auth, loopback only)' },
  { key: 'filesPath', env: 'FILES_PATH', flag: 'files-path', kind: { type: 'path' }, def: './files',
    help: 'library folder: watched, and the only place file bytes are served from' },
  { key: 'enableFileWatcher', env: 'ENABLE_FILE_WATCHER', flag: 'enable-file-watcher', kind: { type: 'bool' }, def: 'true',
    help: 'watch FILES_PATH for changes (false: only POST /api/files/register records files)' },
  { key: 'rescanIntervalMs', env: 'META_CORE_RESCAN_INTERVAL_MS', flag: 'rescan-interval-ms',
    kind: { type: 'int', min: 1000, max: 7 * 24 * 3_600_000 }, def: '300000',
    help: 'periodic safety-net rescan of FILES_PATH, in ms' },
  { key: 'settleMs', env: 'META_CORE_SETTLE_MS', flag: 'settle-ms', kind: { type: 'int', min: 0, max: 3_600_000 }, def: '2000',
    help: 'a file is hashed once its size and mtime held still this long, in ms' },
  { key: 'hashConcurrency', env: 'META_CORE_HASH_CONCURRENCY', flag: 'hash-concurrency', kind: { type: 'int', min: 1, max: 64 }, def: '4',
    help: 'files hashed at once' },
  { key: 'fullHash', env: 'META_CORE_FULL_HASH', flag: 'full-hash', kind: { type: 'subset', values: FULL_HASH_ALGORITHMS }, def: 'sha2-256,ipfs', help: 'full-content CIDs the watcher adds to each file\'s record in the background, after its midhash: sha2-256 (raw codec, bafkrei…), ipfs (kubo\'s CIDv1, raw leaves, 256 KiB chunks); none: off' },
  { key: 'fullHashBytesPerSecond', env: 'META_CORE_FULL_HASH_BYTES_PER_SECOND', flag: 'full-hash-bytes-per-second',
    kind: { type: 'int', min: 65_536, max: 17_179_869_184 }, def: '67108864',
    help: 'the background full hash reads at most this many bytes per second, one file at a time, and waits while the watcher scans or midhashes' },
  { key: 'indexExcludePrefixes', env: 'META_CORE_INDEX_EXCLUDE_PREFIXES', flag: 'index-exclude-prefixes', kind: { type: 'list' }, def: 'categories/newznab/',
    help: 'comma-separated field prefixes left out of search (explicit empty: exclude nothing)' },
  { key: 'logLevel', env: 'META_CORE_LOG_LEVEL', flag: 'log-level', kind: { type: 'enum', values: LOG_LEVELS }, def: 'info',
    help: `one of ${LOG_LEVELS.join(', ')}` },
  { key: 'swarmKeyPath', env: 'META_CORE_SWARM_KEY', flag: 'swarm-key', kind: { type: 'swarmkey' }, def: undefined,
    help: 'swarm key file of the private mesh to join (unset: standalone, no p2p port; meta-core keygen <path> writes one)' },
  { key: 'keyPath', env: 'META_CORE_KEY_PATH', flag: 'key-path', kind: { type: 'optpath' }, def: undefined, help: 'this node\'s identity key file, created on first start with mode 0600 (default beside the store: <db folder>/<db name>.key)' },
  { key: 'p2pListen', env: 'META_CORE_P2P_LISTEN', flag: 'p2p-listen', kind: { type: 'multiaddrs', dial: false }, def: DEFAULT_P2P_LISTEN,
    help: 'comma-separated multiaddrs the mesh listens on (port 0 binds a free port; GET /api/mesh shows it)' },
  { key: 'bootstrap', env: 'META_CORE_BOOTSTRAP', flag: 'bootstrap', kind: { type: 'multiaddrs', dial: true }, def: '',
    help: 'comma-separated multiaddrs of peers to keep connected (/ip4/10.0.0.2/tcp/4001/p2p/<peerId>, or /dns4/peer2/tcp/4001 without a peer id: learned when connecting)' },
  { key: 'blockedPeers', env: 'META_CORE_BLOCKED_PEERS', flag: 'blocked-peers', kind: { type: 'peerids' }, def: '',
    help: 'comma-separated peer ids whose connections, frames and pulls are refused' },
  { key: 'targetPeers', env: 'META_CORE_TARGET_PEERS', flag: 'target-peers', kind: { type: 'int', min: 0, max: 100 }, def: '8',
    help: 'connections the mesh keeps, dialing members it learned from its peers (kept across restarts) at random; 0 dials only META_CORE_BOOTSTRAP' },
  { key: 'crossRegionPeers', env: 'META_CORE_CROSS_REGION_PEERS', flag: 'cross-region-peers', kind: { type: 'int', min: 0, max: 16 }, def: '0', help: 'region-aware dialing: of META_CORE_TARGET_PEERS, keep this many connections to far members (round trip over twice the nearest member\'s) and dial near ones for the rest; 0 dials members at random' },
  { key: 'antiEntropyMs', env: 'META_CORE_ANTI_ENTROPY_MS', flag: 'anti-entropy-ms', kind: { type: 'int', min: 100, max: 3_600_000 }, def: '15000',
    help: 'each peer is pulled from about this often (jittered), in ms' },
  { key: 'gossipD', env: 'META_CORE_GOSSIP_D', flag: 'gossip-d', kind: { type: 'int', min: 0, max: 100 }, def: '6', help: 'gossipsub mesh degree: peers each frame is relayed to; 0: no relaying mesh, a frame reaches only the publisher\'s connections and pulls do the rest' },
  { key: 'gossipDlo', env: 'META_CORE_GOSSIP_DLO', flag: 'gossip-dlo', kind: { type: 'int', min: 0, max: 100 }, def: '4',
    help: 'gossipsub grafts mesh peers below this many (at most META_CORE_GOSSIP_D)' },
  { key: 'gossipDhi', env: 'META_CORE_GOSSIP_DHI', flag: 'gossip-dhi', kind: { type: 'int', min: 0, max: 100 }, def: '12',
    help: 'gossipsub prunes mesh peers above this many (at least META_CORE_GOSSIP_D)' },
  { key: 'pushWindowMs', env: 'META_CORE_PUSH_WINDOW_MS', flag: 'push-window-ms', kind: { type: 'int', min: 1, max: 60_000 }, def: '50',
    help: 'local changes are pushed in one frame this long after the first of them, in ms (longer: fewer, larger frames)' },
  { key: 'maxClockDriftMs', env: 'META_CORE_MAX_CLOCK_DRIFT_MS', flag: 'max-clock-drift-ms', kind: { type: 'int', min: 0, max: 3_600_000 }, def: '10000', help: 'remote versions further ahead of this node\'s clock are refused, in ms' },
  { key: 'peerBytesPerSecond', env: 'META_CORE_PEER_BYTES_PER_SECOND', flag: 'peer-bytes-per-second', kind: { type: 'int', min: 65_536, max: 17_179_869_184 }, def: '536870912', help: 'file bytes sent to one peer per second at most (peers playing this node\'s files)' },
  { key: 'peerMaxTransfers', env: 'META_CORE_PEER_MAX_TRANSFERS', flag: 'peer-max-transfers', kind: { type: 'int', min: 1, max: 1024 }, def: '8',
    help: 'file transfers one peer may run from this node at once; beyond it the peer is told busy' },
  { key: 'cachePath', env: 'META_CORE_CACHE_PATH', flag: 'cache-path', kind: { type: 'optpath' }, def: undefined,
    help: 'folder where files fetched whole from peers are kept to serve again (unset: no cache)' },
  { key: 'cacheMaxBytes', env: 'META_CORE_CACHE_MAX_BYTES', flag: 'cache-max-bytes', kind: { type: 'int', min: 1_048_576, max: 2 ** 50 }, def: '10737418240',
    help: 'size cap of the cache; the least recently served files go first' },
  { key: 'shutdownTimeoutMs', env: 'META_CORE_SHUTDOWN_TIMEOUT_MS', flag: 'shutdown-timeout-ms', kind: { type: 'int', min: 1000, max: 600_000 }, def: '5000',
    help: 'on SIGTERM/SIGINT everything stops within this long (HTTP requests get half of it), else exit 1, in ms' },
  { key: 'healthNoPeerMs', env: 'META_CORE_HEALTH_NO_PEER_MS', flag: 'health-no-peer-ms', kind: { type: 'int', min: 0, max: 86_400_000 }, def: '60000',
    help: 'GET /health says degraded once a node with a swarm key has reached no peer for this long, in ms' },
  { key: 'nodeName', env: 'META_CORE_NODE_NAME', flag: 'node-name', kind: { type: 'label', max: 64 }, def: undefined, help: 'this node\'s name, shown beside its peer id in status, /api/mesh, its peers and the page (default: the host name)' },
  { key: 'metricsPublic', env: 'META_CORE_METRICS_PUBLIC', flag: 'metrics-public', kind: { type: 'bool' }, def: 'false',
    help: 'GET /metrics answers without the API token (for a scraper inside a private network)' },
  { key: 'invite', env: 'META_CORE_INVITE', flag: 'invite', kind: { type: 'invite' }, def: undefined, help: 'an invite from a node of a mesh (meta-core invite): its swarm key and addresses are written beside the store and the node joins that mesh (a secret: it holds the mesh\'s key)' },
  { key: 'mdns', env: 'META_CORE_MDNS', flag: 'mdns', kind: { type: 'bool' }, def: undefined,
    help: 'find members on the LAN by mDNS, with no address given (default: on with a swarm key, unless the node listens on loopback addresses only)' },
  { key: 'announce', env: 'META_CORE_ANNOUNCE', flag: 'announce', kind: { type: 'multiaddrs', dial: false }, def: '',
    help: 'comma-separated addresses others can dial this node at that it cannot see itself (a forwarded port: /ip4/203.0.113.5/tcp/4001, /dns4/home.example.org/tcp/4001), told to members and put in invites' },
  { key: 'upnp', env: 'META_CORE_UPNP', flag: 'upnp', kind: { type: 'bool' }, def: 'false',
    help: 'ask the home router to forward the p2p port (UPnP, NAT-PMP) and announce the mapping; a router that cannot is said in the log and status' },
  { key: 'relay', env: 'META_CORE_RELAY', flag: 'relay', kind: { type: 'enum', values: ['auto', 'on', 'off'] }, def: 'auto',
    help: 'relay for members behind NAT: auto (when others can dial this node: META_CORE_ANNOUNCE, a UPnP mapping, a public address), on, off' },
  { key: 'relayVia', env: 'META_CORE_RELAY_VIA', flag: 'relay-via', kind: { type: 'multiaddrs', dial: true }, def: '',
    help: 'comma-separated relays to be reachable through (…/tcp/4001/p2p/<peerId>); empty: any member that relays, when this node has no address others can dial' },
  { key: 'relayMaxCircuits', env: 'META_CORE_RELAY_MAX_CIRCUITS', flag: 'relay-max-circuits', kind: { type: 'int', min: 1, max: 10_000 }, def: '128',
    help: 'a relay: connections it relays at once, in all (and members it keeps reservations for)' },
  { key: 'relayPeerCircuits', env: 'META_CORE_RELAY_PEER_CIRCUITS', flag: 'relay-peer-circuits', kind: { type: 'int', min: 1, max: 10_000 }, def: '16',
    help: 'a relay: connections it relays at once for one member' },
  { key: 'relayBytesPerSecond', env: 'META_CORE_RELAY_BYTES_PER_SECOND', flag: 'relay-bytes-per-second',
    kind: { type: 'int', min: 65_536, max: 17_179_869_184 }, def: '134217728',
    help: 'a relay: bytes per second it relays, in all' },
  { key: 'relayPeerBytesPerSecond', env: 'META_CORE_RELAY_PEER_BYTES_PER_SECOND', flag: 'relay-peer-bytes-per-second',
    kind: { type: 'int', min: 65_536, max: 17_179_869_184 }, def: '67108864',
    help: 'a relay: bytes per second it takes in from one member for relaying' }
]

/**
 * Options older versions had that no longer do anything. A configuration
 * that still sets one starts as if it did not, with a warning saying why
 * (an upgrade must not stop a node over a setting it can drop later).
 */
export const RETIRED_OPTIONS: ReadonlyArray<{ env: string, flag: string, why: string }> = [
  {
    env: 'META_CORE_TOMBSTONE_RETENTION_MS',
    flag: 'tombstone-retention-ms',
    why: 'deletions are never forgotten any more, so there is no tombstone horizon to set (docs/mesh.md, "Deletes are never forgotten")'
  }
]

/** `argv` without the retired options (and their values), and a warning for each retired option set there or in `env`. */
function withoutRetired (argv: readonly string[], env: Readonly<Record<string, string | undefined>>): { argv: string[], retired: string[] } {
  const out: string[] = []
  const set = new Set<(typeof RETIRED_OPTIONS)[number]>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const o = RETIRED_OPTIONS.find(x => arg === `--${x.flag}` || arg.startsWith(`--${x.flag}=`))
    if (o === undefined) { out.push(arg); continue }
    set.add(o)
    if (!arg.includes('=') && i + 1 < argv.length && !argv[i + 1].startsWith('--')) i++
  }
  for (const o of RETIRED_OPTIONS) if (env[o.env] !== undefined && env[o.env] !== '') set.add(o)
  const retired = [...set].map(o => `${o.env} (--${o.flag}) is set but no longer does anything: ${o.why}; remove it from the configuration`)
  return { argv: out, retired }
}
/** The mesh options that mean nothing without a swarm key (or an invite). */
const MESH_ONLY = ['p2pListen', 'bootstrap', 'blockedPeers', 'announce', 'relayVia'] as const

type ParseResult = { kind: 'config', config: NodeConfig } | { kind: 'help', text: string }

/**
 * Parses `argv` (without node, the script and the subcommand) over `env`.
 * Throws ConfigError listing every problem. `--help` returns the usage text
 * instead.
 */
export async function parseConfig (argv: readonly string[], env: Readonly<Record<string, string | undefined>>, cwd = process.cwd()): Promise<ParseResult> {
  const r = await parseNodeOptions([], argv, env, cwd)
  if (r.help) return { kind: 'help', text: usage() }
  if (r.problems.length > 0) throw new ConfigError(r.problems.join('\n'))
  return { kind: 'config', config: r.config }
}

/**
 * The node's options plus a subcommand's own (`extra`), with the checks
 * that span options. `config` is complete only when `problems` is empty.
 */
export async function parseNodeOptions<E extends string> (extra: ReadonlyArray<OptionSpec<E>>, argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>, cwd: string): Promise<{
  config: NodeConfig
  extra: Partial<Record<E, unknown>>
  problems: string[]
  help: boolean
}> {
  const specs: Array<OptionSpec<keyof NodeConfig | E>> = [...OPTIONS, ...extra]
  const current = withoutRetired(argv, env)
  const { values, explicit, problems, help } = await parseChecked(specs, current.argv, env, cwd)
  const out = values as Partial<Record<keyof NodeConfig, unknown>>
  const host = out.httpHost as string | undefined
  if (host !== undefined && !isLoopback(host) && out.apiToken === undefined) {
    problems.push(`META_CORE_HTTP_HOST (--http-host) ${host} is not a loopback address: set META_CORE_API_TOKEN (--api-token) to listen on it, or use 127.0.0.1`)
  }
  await meshFromFolder(out, explicit, problems)
  if (out.swarmKeyPath === undefined && out.invite === undefined) {
    for (const k of MESH_ONLY) {
      const o = OPTIONS.find(x => x.key === k)!
      if (explicit.has(k) && (out[k] as string[] | undefined)?.length !== 0) problems.push(`${optionName(o)} needs META_CORE_SWARM_KEY (--swarm-key): without a swarm key the node runs standalone`)
    }
  }
  for (const a of (out.relayVia as string[] | undefined) ?? []) {
    if (!/\/p2p\/[^/]+$/.test(a)) problems.push(`META_CORE_RELAY_VIA (--relay-via) ${JSON.stringify(a)} names no relay: end it in /p2p/<the relay's peer id> (meta-core id on the relay prints its addresses)`)
  }
  if (!explicit.has('mdns')) {
    // A node that listens on loopback only has no LAN to find anyone on (and tests on 127.0.0.1 never multicast).
    const listen = (out.p2pListen as string[] | undefined) ?? []
    out.mdns = (out.swarmKeyPath !== undefined || out.invite !== undefined) && listen.some(a => !/^\/ip4\/127\.|^\/ip6\/::1\/|^\/dns[46]?\/localhost\//.test(a))
  }
  const degree = { D: out.gossipD as number, Dlo: out.gossipDlo as number, Dhi: out.gossipDhi as number }
  if ([degree.D, degree.Dlo, degree.Dhi].every(x => typeof x === 'number')) {
    const why = gossipDegreeProblem(degree)
    if (why !== undefined) problems.push(`META_CORE_GOSSIP_DLO (--gossip-dlo), META_CORE_GOSSIP_D (--gossip-d), META_CORE_GOSSIP_DHI (--gossip-dhi): ${why}`)
  }
  // The host name tells a household's machines apart; cut to the option's own limit.
  if (out.nodeName === undefined) out.nodeName = os.hostname().slice(0, 64) || 'meta-core'
  if (out.keyPath === undefined && typeof out.dbPath === 'string') {
    out.keyPath = path.join(path.dirname(out.dbPath), path.basename(out.dbPath, path.extname(out.dbPath)) + '.key')
  }
  if (current.retired.length > 0) out.retired = current.retired
  const extraValues: Partial<Record<E, unknown>> = {}
  for (const o of extra) extraValues[o.key] = (values as Partial<Record<E, unknown>>)[o.key]
  return { config: out as unknown as NodeConfig, extra: extraValues, problems, help }
}

/**
 * The node's folder (mesh-folder.ts): an invite given is decoded; without a
 * configured swarm key, the key an invite left beside the store is used,
 * and its bootstrap list is added to the configured one.
 */
async function meshFromFolder (out: Partial<Record<keyof NodeConfig, unknown>>, explicit: ReadonlySet<string>, problems: string[]): Promise<void> {
  const invite = OPTIONS.find(o => o.key === 'invite')!
  if (typeof out.invite === 'string') {
    const checks = await loadAddressChecks()
    try {
      out.invite = decodeInvite(out.invite, a => checks.multiaddrProblem(a, true))
    } catch (err) {
      problems.push(`invalid ${optionName(invite)} (value hidden: it holds the mesh's key): ${(err as Error).message}`)
      out.invite = undefined
    }
  }
  if (typeof out.dbPath !== 'string') return
  const files = meshFiles(out.dbPath)
  if (out.swarmKeyPath === undefined && out.invite === undefined && fs.existsSync(files.swarmKey)) {
    let text = ''
    try {
      text = fs.readFileSync(files.swarmKey, 'utf8')
    } catch (err) {
      problems.push(`the swarm key ${files.swarmKey} beside the store cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
    }
    if (text !== '' && parseSwarmKey(text) === undefined) problems.push(`${files.swarmKey} beside the store is not a swarm key: move it away, or set META_CORE_SWARM_KEY`)
    else if (text !== '') out.swarmKeyPath = files.swarmKey
  }
  if (out.swarmKeyPath === undefined || explicit.has('invite')) return
  const listed = readBootstrapFile(files.bootstrap)
  if (listed.length === 0) return
  const checks = await loadAddressChecks()
  for (const a of listed) {
    const why = checks.multiaddrProblem(a, true)
    if (why !== undefined) problems.push(`the bootstrap list ${files.bootstrap} beside the store: ${why}`)
  }
  out.bootstrap = [...new Set([...((out.bootstrap as string[] | undefined) ?? []), ...listed])]
}

export function usage (): string {
  return [
    'Usage: meta-core [start] [options]      (npm start -- [options] from a clone)',
    '',
    'Runs a meta-core node: the store, search, the file watcher, the mesh and the HTTP API.',
    'Every option is an environment variable and a flag; flags win. Values are checked at start.',
    '',
    ...optionLines(OPTIONS),
    '  -h, --help',
    '      this text'
  ].join('\n')
}

/**
 * What the file system says about the configured paths, checked at start
 * before anything is created: FILES_PATH must be a folder (or not exist
 * yet), the store path must not be a folder, and the folders on the way to
 * either must not be files. Returns the problems, each naming the option;
 * empty when both can be used.
 */
export function pathProblems (config: Pick<NodeConfig, 'filesPath' | 'dbPath'>): string[] {
  const problems: string[] = []
  const kind = (p: string): 'dir' | 'file' | 'none' | 'blocked' => {
    try {
      return fs.statSync(p).isDirectory() ? 'dir' : 'file'
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOTDIR' ? 'blocked' : 'none'
    }
  }
  /** The nearest existing ancestor of `p`, when it is a file: then `p` can never be created. */
  const fileAbove = (p: string): string | undefined => {
    for (let d = path.dirname(p); d !== path.dirname(d); d = path.dirname(d)) {
      const k = kind(d)
      if (k === 'file') return d
      if (k === 'dir') return undefined
    }
    return undefined
  }
  const files = kind(config.filesPath)
  if (files === 'file') problems.push(`FILES_PATH (--files-path) ${config.filesPath} is a file, not a folder: name the library folder (it is created if missing)`)
  else if (files !== 'dir') {
    const above = fileAbove(config.filesPath)
    if (above !== undefined) problems.push(`FILES_PATH (--files-path) ${config.filesPath} cannot be created: ${above} is a file, not a folder`)
  }
  const db = kind(config.dbPath)
  if (db === 'dir') problems.push(`META_CORE_DB_PATH (--db-path) ${config.dbPath} is a folder: name the store file (for example ${path.join(config.dbPath, 'meta-core.db')})`)
  else if (db !== 'file') {
    const above = fileAbove(config.dbPath)
    if (above !== undefined) problems.push(`META_CORE_DB_PATH (--db-path) ${config.dbPath} cannot be created: ${above} is a file, not a folder`)
  }
  return problems
}
