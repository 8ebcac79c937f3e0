/**
 * `meta-core status`: asks a running node over HTTP for its health
 * (`/health`), its counts (`/status`) and its place in the mesh
 * (`/api/mesh`), and prints them as a table, every peer with its
 * connection, catch-up lag and refusals; `--json` prints the three answers
 * as they came, for scripts. Exit 0 when the node answers and is healthy,
 * 1 when it cannot be reached, refuses the token, reports degraded, or is
 * in a mesh and reaches none of its peers. Peers known only as signers of
 * gossip relayed by others are shown as such, not as disconnected; a peer
 * that left, with when it was last seen, or, when its frames still reach
 * the node through other peers, with when it was last heard; its lag as of
 * its last sync. A join under way shows as a progress bar with the share
 * done and the time left. How other homes reach the node (announced,
 * mapped, relayed only, LAN only), what it relays for members, and for each
 * connected peer whether it runs through a relay (and which) or was found
 * on the LAN.
 */
import type { MeshJoinView, MeshPeerView, MeshReachView, MeshView } from '../mesh/index.js'
import type { FullHashStatus } from '../watcher/index.js'
import { optionLines, type OptionSpec } from './options.js'

export const STATUS_OPTIONS: ReadonlyArray<OptionSpec<'url' | 'httpHost' | 'httpPort' | 'apiToken' | 'json' | 'timeoutMs'>> = [
  { key: 'url', env: 'META_CORE_URL', flag: 'url', kind: { type: 'url' }, def: undefined,
    help: 'the node to ask (default: http://<http-host>:<http-port>, a wildcard host read as loopback)' },
  // The same flags and variables `start` listens by, so the command that started a node finds it.
  { key: 'httpHost', env: 'META_CORE_HTTP_HOST', flag: 'http-host', aliases: ['host'], kind: { type: 'host' }, def: '127.0.0.1', help: 'the node\'s API address, when no --url is given' },
  { key: 'httpPort', env: 'META_CORE_HTTP_PORT', flag: 'http-port', aliases: ['port'], kind: { type: 'int', min: 1, max: 65535 }, def: '9000', help: 'the node\'s API port, when no --url is given' },
  { key: 'apiToken', env: 'META_CORE_API_TOKEN', flag: 'api-token', kind: { type: 'secret' }, def: undefined, help: 'the node\'s API token, when it has one (/status and /api/mesh need it)' },
  { key: 'timeoutMs', env: 'META_CORE_STATUS_TIMEOUT_MS', flag: 'timeout-ms', kind: { type: 'int', min: 100, max: 600_000 }, def: '5000',
    help: 'how long to wait for each answer, in ms' },
  { key: 'json', flag: 'json', kind: { type: 'bool' }, def: 'false', help: 'print the answers as one JSON object instead of a table' }
]

export function statusUsage (): string {
  return [
    'Usage: meta-core status [options]',
    '',
    'Asks a running node for its health, record count and mesh state (a join under way as a',
    'progress bar), and prints every peer with its connection and catch-up lag. Exit 0 when the node is healthy (and, in a mesh,',
    'connected to at least one peer), 1 otherwise.',
    '',
    ...optionLines(STATUS_OPTIONS),
    '  -h, --help',
    '      this text'
  ].join('\n')
}

/** The node's own address when no --url is given: where --http-host/--http-port (or their variables) say it listens. */
export function defaultNodeUrl (httpHost: string, port: number): string {
  let host = httpHost
  if (host === '0.0.0.0') host = '127.0.0.1'
  if (host === '::' || host === '[::]') host = '::1'
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`
}

interface Health { status: string, storage: boolean, reasons?: Array<{ reason: string, message: string }> }
/** The figures of `/status`'s watcher's background full hash this command prints (absent from an older node). */
type FullHashFigures = Pick<FullHashStatus,
  'state' | 'algorithms' | 'filesHashed' | 'bytesHashed' | 'filesKnown' | 'filesPending' | 'bytesPending' | 'mbPerSecond' | 'etaSeconds'>
interface NodeStatus {
  status: string
  version: string
  nodeId: string
  uptimeSeconds: number
  fileCount: number
  eventStreams: number
  watcher: { enabled: boolean, isScanning: boolean, fileCount: number, progress?: { filesPending?: number }, fullHash?: FullHashFigures } | null
}

export interface StatusReport { url: string, health: Health, status: NodeStatus, mesh: MeshView }

/** Why a status could not be had, in a sentence for the operator. */
export class StatusError extends Error {}

export async function fetchStatus (url: string, token: string | undefined, timeoutMs: number): Promise<StatusReport> {
  const get = async <T>(path: string): Promise<T> => {
    let res: Response
    try {
      res = await fetch(url + path, {
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(timeoutMs)
      })
    } catch (err) {
      const why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : causeOf(err)
      throw new StatusError(`cannot reach ${url}: ${why}`)
    }
    const text = await res.text()
    if (res.status === 401) throw new StatusError(`${url} wants its API token${token === undefined ? ': pass --api-token or set META_CORE_API_TOKEN' : ', and refused this one'}`)
    if (!res.ok) throw new StatusError(`${url}${path} answered ${res.status}: ${text.slice(0, 200)}`)
    try {
      return JSON.parse(text) as T
    } catch {
      throw new StatusError(`${url}${path} did not answer JSON: is it a meta-core node?`)
    }
  }
  const health = await get<Health>('/health')
  const [status, mesh] = await Promise.all([get<NodeStatus>('/status'), get<MeshView>('/api/mesh')])
  return { url, health, status, mesh }
}

function causeOf (err: unknown): string {
  const cause = (err as { cause?: { code?: string, message?: string } }).cause
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
}

/** The report as a readable table. */
export function formatStatus (r: StatusReport): string {
  const s = r.status
  const w = s.watcher
  const m = r.mesh
  const connected = m.peers.filter(p => p.connected).length
  const gossipOnly = m.peers.filter(p => viaGossip(p)).length
  const members = m.members ?? []
  const now = Date.now()
  const join = joinLine(m.join, now)
  const lines = [
    ...aligned([
      ['node', `${r.url}  ${r.health.status}${r.health.storage ? '' : ' (storage unavailable)'}, meta-core ${s.version}, up ${duration(s.uptimeSeconds * 1000)}`],
      ['node id', m.self.name === null || m.self.name === undefined ? s.nodeId : `${s.nodeId}  (${m.self.name})`],
      ['records', count(s.fileCount)],
      ...(r.health.reasons ?? []).map(x => ['health', x.message] as [string, string]),
      ['watcher', w === null ? 'none' : !w.enabled ? `off, ${count(w.fileCount)} files` : `${w.isScanning ? 'scanning' : 'idle'}, ${count(w.fileCount)} files, ${count(w.progress?.filesPending ?? 0)} pending`],
      ...(w?.fullHash === undefined ? [] : [['hashes', fullHashLine(w.fullHash)] as [string, string]]),
      ['streams', `${count(s.eventStreams)} open SSE`],
      ['mesh', m.enabled ? `${m.meshId ?? '?'}, ${m.peers.length - gossipOnly} peers (${connected} connected)${gossipOnly > 0 ? `, ${gossipOnly} heard via gossip` : ''}, ${count(members.length)} members known, frames out ${count(m.self.framesOut)}` : 'standalone (no swarm key)'],
      ...(m.enabled ? [['p2p', m.self.addrs.join(' ') || 'no address'] as [string, string]] : []),
      ...reachLines(m.reach ?? null, m.peers),
      ...(join === undefined ? [] : [['join', join] as [string, string]])
    ], '  ')
  ]
  if (m.enabled) {
    lines.push('')
    if (m.peers.length === 0) {
      lines.push('no peers yet')
    } else {
      const rows = [['NAME', 'PEER', 'CONNECTION', 'LAG', 'LAST SYNC', 'FRAMES IN', 'REJECTED', 'PAGES IN', 'PAGES OUT']]
      const seen = new Map(members.map(x => [x.peerId, x.lastSeenAt]))
      for (const p of m.peers) {
        const gossip = viaGossip(p)
        rows.push([p.name ?? '-', p.peerId, peerConnection(p, seen.get(p.peerId), now, peerLabel(m.peers, p.relay ?? null)), gossip ? '-' : peerLag(p),
          gossip ? '-' : lastSync(p, now), count(p.framesIn), count(p.framesRejected), count(p.pagesIn), count(p.pagesServed)])
      }
      lines.push(...table(rows))
      if (gossipOnly > 0) lines.push('', GOSSIP_NOTE)
    }
    const problem = meshProblem(r)
    if (problem !== undefined) lines.push('', problem)
  }
  return lines.join('\n')
}

/** A peer known only as the signer of frames other peers relayed (older nodes do not say: taken as direct). */
function viaGossip (p: MeshPeerView): boolean {
  return p.via === 'gossip'
}

/** Said under the table when a peer is known only through relayed gossip (the page says it in the cell's title). */
export const GOSSIP_NOTE = 'via gossip: known only as the signer of frames other peers relayed; its changes reach this node through them (no connection to it, nothing to catch up with)'

/** What the connection wording reads of a peer; the times and the route are absent from an older node. */
type PeerConnectionFields = Pick<MeshPeerView, 'connected' | 'via'> & Partial<Pick<MeshPeerView,
  'lastSeenAt' | 'lastHeardAt' | 'lastConnectedAt' | 'route' | 'relay' | 'lan'>>

/**
 * True when the peer is not connected and a frame it signed reached the
 * node after its connection to it dropped (or it never had one): its
 * changes come through other peers. The page decides with the same rule
 * (`heardSinceLeft` in ui/src/format.ts).
 */
export function heardSinceLeft (p: Omit<PeerConnectionFields, 'via' | 'lastSeenAt'>): boolean {
  if (p.connected || p.lastHeardAt == null) return false
  return p.lastConnectedAt == null || Date.parse(p.lastHeardAt) > Date.parse(p.lastConnectedAt)
}

/**
 * How a peer reaches the node: `connected`; `via gossip` for a signer known
 * only through frames other peers relayed (with when one last came); for
 * one that was connected and is not, `disconnected, its changes reach us
 * via gossip (last heard …)` when its frames reached the node since it
 * left, else `disconnected, last seen …` (the peer's `lastSeenAt`: when
 * the connection dropped, a frame it signed came, or a peer named it; from
 * an older node, its member entry's, `memberSeenAt`). The web page says the
 * same (`formatPeerConnection` in ui/src/format.ts, its times in its own
 * rounding).
 */
export function peerConnection (p: PeerConnectionFields, memberSeenAt: string | undefined, now: number, relayName?: string): string {
  if (p.connected) return `connected${p.route === 'relayed' ? ` via relay ${relayName ?? p.relay ?? '?'}` : ''}${p.lan === true ? ' (LAN)' : ''}`
  const heard = p.lastHeardAt ?? null
  if (p.via === 'gossip') return heard === null ? 'via gossip' : `via gossip, last heard ${ago(heard, now)}`
  if (heardSinceLeft(p)) return `disconnected, its changes reach us via gossip (last heard ${ago(heard, now)})`
  const seen = p.lastSeenAt ?? memberSeenAt
  return seen === undefined ? 'disconnected' : `disconnected, last seen ${ago(seen, now)}`
}

/** A peer as people read it: its name, else the start of its id. */
function peerLabel (peers: readonly MeshPeerView[], id: string | null): string | undefined {
  if (id === null) return undefined
  return peers.find(p => p.peerId === id)?.name ?? `${id.slice(0, 12)}…`
}

/**
 * How members reach the node (`reach`), what it relays for them (`relay`)
 * and its router's port mapping (`upnp`), in lines under `p2p`; none from
 * an older node or a standalone one.
 */
export function reachLines (r: MeshReachView | null, peers: readonly MeshPeerView[]): Array<[string, string]> {
  if (r === null) return []
  const relays = r.relays.map(id => peerLabel(peers, id) ?? id).join(', ')
  const how = {
    announced: `announced at ${r.announced.join(' ')}`,
    mapped: `mapped by the router at ${r.upnp?.mappings.map(m => m.external).join(' ') ?? '?'}`,
    public: 'at a public address of its own',
    'relayed-only': `relayed only, through ${relays}`,
    'lan-only': 'LAN only: members outside this LAN (or VPN) cannot reach it; set META_CORE_ANNOUNCE or META_CORE_UPNP, or let a reachable member relay (docs/operations.md)'
  }[r.reachability]
  const out: Array<[string, string]> = [['reach', `${how}${r.reachability !== 'relayed-only' && r.relays.length > 0 ? `; also through ${relays}` : ''}${r.mdns ? ', LAN discovery (mDNS) on' : ''}`]]
  const v = r.relay
  if (v !== null) {
    const l = v.limits
    out.push(['relay', !v.serving
      ? `${r.relayMode}: not serving until the node has an address others can dial`
      : `serving ${count(v.reservations)} member${v.reservations === 1 ? '' : 's'}: ${count(v.circuits)} relayed connection${v.circuits === 1 ? '' : 's'}, ` +
        `${mb(v.bytesPerSecond)}/s, ${mb(v.bytesRelayed)} since start${v.refusedCircuits > 0 ? `, ${count(v.refusedCircuits)} refused` : ''}; ` +
        `limits ${l.maxCircuitsPerPeer} connections and ${mb(l.bytesPerSecondPerPeer)}/s per member, ${l.maxCircuits} and ${mb(l.bytesPerSecond)}/s in all`])
  }
  const u = r.upnp
  if (u !== null) {
    out.push(['upnp', u.state === 'mapped'
      ? u.mappings.map(m => `mapped ${m.internal} as ${m.external} (${m.protocol})`).join(', ')
      : u.state === 'failed' ? `failed: ${u.problem ?? 'no mapping'}` : 'looking for the router'])
  }
  return out
}

function mb (bytes: number): string {
  return bytes < 1e6 ? `${(bytes / 1e3).toFixed(bytes < 1e4 ? 1 : 0)} kB` : `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`
}

/** LAST SYNC: when a pull from the peer last applied a page; `before start` for one synced only in an earlier run (it has a cursor). */
function lastSync (p: Pick<MeshPeerView, 'cursor' | 'lastSyncAt'>, now: number): string {
  return p.lastSyncAt === null && p.cursor !== null ? 'before start' : ago(p.lastSyncAt, now)
}

/**
 * The join (`join` of `/api/mesh`: a full resync on the bulk path) in one
 * line. Under way: a bar, the share of the peer's records taken, the rate
 * and the time left at it (`/api/mesh`'s own figures); without the peer's
 * count, the records so far. Over: how many records it brought, how long it
 * took and when it ended. None since the node started (or an older node
 * that does not say): undefined.
 */
export function joinLine (j: MeshJoinView | undefined, now: number): string | undefined {
  if (j === undefined || j.startedAt === null) return undefined
  const rate = `${count(j.recordsPerSecond)} records/s`
  if (!j.active) {
    const took = j.endedAt === null ? '' : ` in ${duration(Date.parse(j.endedAt) - Date.parse(j.startedAt))}, ended ${ago(j.endedAt, now)}`
    return `done: ${count(j.records)} records${took} (${rate})`
  }
  if (j.expectedRecords === null || j.expectedRecords <= 0) return `${count(j.records)} records so far, ${rate} (the peer did not say how many it holds)`
  const share = Math.min(1, j.records / j.expectedRecords)
  const left = j.secondsLeft === null ? 'time left unknown' : j.secondsLeft < 1 ? 'under a second left' : `about ${duration(j.secondsLeft * 1000)} left`
  return `${progressBar(share)} ${Math.floor(share * 100)} %  ${count(j.records)} of ${count(j.expectedRecords)} records, ${rate}, ${left}`
}

/**
 * The background full hash in one line: off; up to date, with what it did
 * since start; or under way (or paused behind the watcher), with the files
 * and bytes done and left, the rate and the time left at it.
 */
export function fullHashLine (f: FullHashFigures): string {
  if (f.state === 'off') return 'off (META_CORE_FULL_HASH=none)'
  const done = `${count(f.filesHashed)} files (${bytes(f.bytesHashed)}) hashed since start, ${count(f.filesKnown)} had their CIDs already`
  if (f.state === 'idle') return `${f.algorithms.join(', ')}: up to date; ${done}`
  const left = f.etaSeconds === undefined ? '' : `, about ${duration(f.etaSeconds * 1000)} left`
  const state = f.state === 'paused' ? 'paused while the watcher scans or hashes' : f.state === 'checking' ? 'checking records' : `${f.mbPerSecond} MB/s`
  return `${f.algorithms.join(', ')}: ${count(f.filesPending)} files (${bytes(f.bytesPending)}) to go, ${state}${left}; ${done}`
}

/** 950 B, 4.2 kB, 3.1 MB, 12.5 GB (decimal units, as the page's). */
function bytes (n: number): string {
  if (n < 1000) return `${n} B`
  const units = ['kB', 'MB', 'GB', 'TB', 'PB']
  let v = n / 1000
  let i = 0
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++ }
  return `${v.toFixed(1)} ${units[i]}`
}

/** `[#########...............]`: a share of 0 to 1 in 24 characters of plain ASCII (any terminal, any log). */
function progressBar (share: number, width = 24): string {
  const full = Math.round(Math.max(0, Math.min(1, share)) * width)
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`
}

/** Why the node's place in the mesh makes the status a failure, or undefined: a node in a mesh that reaches no peer is cut off. */
export function meshProblem (r: StatusReport): string | undefined {
  const m = r.mesh
  if (!m.enabled || m.peers.some(p => p.connected)) return undefined
  const known = (m.members ?? []).length
  return `no peer reachable: this node is cut off from the mesh (${known} members known${known > 0 ? ', none connected' : ''}; check META_CORE_BOOTSTRAP, the swarm key and the network)`
}

/**
 * A peer's catch-up lag in words. A peer that is not connected is not
 * pulled from: its lag is said as of its last sync (`was caught up when
 * last synced`), or that there was none (`never synced`; `not synced since
 * start` for one synced only in an earlier run). The web page words it the
 * same way (`formatPeerLag` in ui/src/format.ts, which cannot import this
 * file; a test holds the two equal): change one, change both.
 */
export function peerLag (p: Pick<MeshPeerView, 'connected' | 'cursor' | 'behind' | 'resyncing' | 'lastSyncAt' | 'lagMs'>): string {
  if (p.resyncing) return `full resync, ${duration(p.lagMs)}`
  if (!p.connected) {
    if (p.lastSyncAt === null) return p.cursor === null ? 'never synced' : 'not synced since start'
    return p.behind ? 'was behind when last synced' : 'was caught up when last synced'
  }
  if (p.cursor === null && p.lastSyncAt === null) return `first sync, ${duration(p.lagMs)}`
  if (!p.behind) return 'caught up'
  return `behind ${duration(p.lagMs)}`
}

function ago (iso: string | null, now: number): string {
  if (iso === null) return 'never'
  return `${duration(Math.max(0, now - Date.parse(iso)))} ago`
}

/** 950 ms, 4.2 s, 3 min 5 s, 2 h 10 min, 3 d 4 h (mirrored by `formatMs` in ui/src/format.ts) */
export function duration (ms: number): string {
  if (!Number.isFinite(ms)) return '?'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.floor(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`
}

function count (n: number): string {
  return n.toLocaleString('en-US')
}

function aligned (pairs: Array<[string, string]>, gap: string): string[] {
  const width = Math.max(...pairs.map(p => p[0].length))
  return pairs.map(([k, v]) => `${k.padEnd(width)}${gap}${v}`)
}

function table (rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map(r => r[i].length)))
  return rows.map(r => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  '))
}
