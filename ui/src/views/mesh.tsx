/**
 * The mesh part of the node panel. A node started without a swarm key has
 * no mesh (`/api/mesh` says `enabled: false`; a node without the route
 * answers 404, one without the component 503) and the panel says so. With a
 * mesh: this node's peer id, addresses and digest, and per peer the
 * connection state (connected; last seen; or, for one whose frames still
 * reach the node through other peers, last heard), catch-up lag (from the
 * node's `lagMs`, worded as `meta-core status` words it, with the last sync
 * and, in its title, when the node last caught up), frames received and
 * rejected, clock-drift refusals, and whether its digest agrees with ours.
 * How members reach the node and what it relays for them (reach.tsx), and
 * per peer whether it runs through a relay or was found on the LAN.
 * A join under way shows as a progress bar with the share done and the
 * time left (join.tsx).
 *
 * The node asks each connected peer for its digest over the mesh
 * (`/api/mesh/digests`) and the row says whether it agrees. For a node it
 * is not connected to, the person may name its HTTP address (kept in this
 * browser): the page asks it for `/api/mesh` and `/api/mesh/digest`, and the
 * compare list says what it is to this node (another mesh, a stranger, a
 * peer whose digest agrees or differs).
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiFailure, call, errorText } from '../api.js'
import { formatAgo, formatCount, formatPeerConnection, formatPeerLag, formatTime, heardSinceLeft, shortId } from '../format.js'
import type { MeshDigest, MeshDigests, MeshPeer, MeshStatus, PeerDigest } from '../wire.js'
import { ErrorNote, useInterval } from './common.js'
import { JoinProgress } from './join.js'
import { peerLabel, ReachRows } from './reach.js'
import { Transfers } from './transfers.js'

const POLL_MS = 3000
const COMPARE_KEY = 'meta-core-compare-nodes'

interface Remote { url: string, peerId?: string, name?: string, meshId?: string | null, digest?: MeshDigest, error?: string }

type MeshState =
  | { kind: 'loading' }
  | { kind: 'none', reason: string }
  | { kind: 'error', error: unknown }
  | { kind: 'mesh', mesh: MeshStatus, digest?: MeshDigest, digestError?: string, peerDigests?: Map<string, PeerDigest> }

function loadUrls (): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(COMPARE_KEY) ?? '[]') as unknown
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
  } catch {
    return []
  }
}

function saveUrls (urls: string[]): void {
  try { localStorage.setItem(COMPARE_KEY, JSON.stringify(urls)) } catch { /* not kept across reloads; still used now */ }
}

async function meshState (): Promise<MeshState> {
  let mesh: MeshStatus
  try {
    mesh = await call<MeshStatus>('GET', '/api/mesh', { quiet: true })
  } catch (err) {
    // No mesh route (404), or a node built with the mesh but started without a swarm key (503).
    if (err instanceof ApiFailure && (err.status === 404 || err.status === 503)) return { kind: 'none', reason: err.message }
    return { kind: 'error', error: err }
  }
  if (mesh.enabled === false) return { kind: 'none', reason: 'standalone: started without a swarm key' }
  // The node asks its peers for their digests itself (if that fails, the rows need an address).
  const peerDigests = call<MeshDigests>('GET', '/api/mesh/digests', { quiet: true })
    .then(d => new Map(d.peers.map(p => [p.peerId, p])), () => undefined)
  try {
    return { kind: 'mesh', mesh, digest: await call<MeshDigest>('GET', '/api/mesh/digest', { quiet: true }), peerDigests: await peerDigests }
  } catch (err) {
    return { kind: 'mesh', mesh, digestError: errorText(err), peerDigests: await peerDigests }
  }
}

async function remoteState (url: string): Promise<Remote> {
  try {
    const [m, d] = await Promise.all([
      call<MeshStatus>('GET', '/api/mesh', { origin: url }),
      call<MeshDigest>('GET', '/api/mesh/digest', { origin: url })
    ])
    return { url, peerId: m.self.peerId, name: m.self.name ?? undefined, meshId: m.enabled ? m.meshId : null, digest: d }
  } catch (err) {
    return { url, error: errorText(err) }
  }
}

export function MeshPanel () {
  const [state, setState] = useState<MeshState>({ kind: 'loading' })
  const [urls, setUrls] = useState<string[]>(loadUrls)
  const [remotes, setRemotes] = useState<Remote[]>([])
  const inFlight = useRef(false)

  const refresh = (): void => {
    if (inFlight.current) return
    inFlight.current = true
    void Promise.all([meshState(), Promise.all(urls.map(remoteState))]).then(([s, r]) => {
      setState(s)
      setRemotes(r)
    }).finally(() => { inFlight.current = false })
  }
  useEffect(refresh, [urls.join(' ')])
  useInterval(refresh, POLL_MS)

  const setAndSave = (next: string[]): void => { saveUrls(next); setUrls(next) }

  return (
    <section class="mesh" aria-labelledby="mesh-title">
      <h2 id="mesh-title">Mesh</h2>
      {state.kind === 'loading' && <p class="muted">Loading…</p>}
      {state.kind === 'none' && (
        <p data-testid="no-mesh">
          This node runs without a mesh: it replicates with no peer (start it with a swarm key to join one).
          <span class="muted"> ({state.reason})</span>
        </p>
      )}
      {state.kind === 'error' && <ErrorNote error={state.error} />}
      {state.kind === 'mesh' && <MeshView s={state} remotes={remotes} />}
      {state.kind === 'mesh' && <Transfers names={new Map(state.mesh.peers.map(p => [p.peerId, p.name]))} />}
      {state.kind === 'mesh' && <CompareForm urls={urls} onChange={setAndSave} remotes={remotes} own={state} />}
    </section>
  )
}

function MeshView ({ s, remotes }: { s: Extract<MeshState, { kind: 'mesh' }>, remotes: Remote[] }) {
  const { mesh, digest } = s
  const byPeer = new Map(remotes.filter(r => r.peerId !== undefined).map(r => [r.peerId!, r]))
  const connected = mesh.peers.filter(p => p.connected).length
  const gossip = mesh.peers.filter(p => p.via === 'gossip').length
  const seen = new Map(mesh.members.map(m => [m.peerId, m.lastSeenAt]))
  return (
    <>
      <dl class="kv">
        {mesh.meshId != null && <><dt>Mesh</dt><dd><code>{mesh.meshId}</code></dd></>}
        {mesh.self.name != null && <><dt>Name</dt><dd data-testid="self-name">{mesh.self.name}</dd></>}
        <dt>Peer id</dt><dd><code class="wrap">{mesh.self.peerId}</code></dd>
        <dt>Listening on</dt><dd>{mesh.self.addrs.length === 0 ? <span class="muted">no address</span>
          : mesh.self.addrs.map(a => <code class="wrap block" key={a}>{a}</code>)}</dd>
        <ReachRows reach={mesh.reach} peers={mesh.peers} />
        <dt>Clock</dt><dd><code>{mesh.self.hlc}</code></dd>
        <dt>Digest</dt>
        <dd data-testid="own-digest">{digest === undefined ? <span class="muted">{s.digestError ?? '—'}</span>
          : <><code title={digest.digest}>{shortId(digest.digest, 8)}</code> over {formatCount(digest.keys)} keys</>}</dd>
        <dt>Peers</dt><dd data-testid="peer-summary">{connected} connected of {mesh.peers.length - gossip} known{gossip > 0 &&
          `, ${gossip} heard via gossip`}</dd>
      </dl>
      <JoinProgress join={mesh.join} />
      {mesh.peers.length === 0
        ? <p class="muted">No peer known yet.</p>
        : (
          <div class="table-wrap">
            <table class="peers">
              <thead>
                <tr>
                  <th scope="col">Name</th><th scope="col">Peer</th><th scope="col">Connection</th><th scope="col">Lag</th>
                  <th scope="col" class="num">Frames in</th><th scope="col" class="num">Rejected</th><th scope="col" class="num">Drift refusals</th><th
                    scope="col">Digest</th>
                </tr>
              </thead>
              <tbody>
                {mesh.peers.map(p => <PeerRow key={p.peerId} p={p} relayName={peerLabel(mesh.peers, p.relay)} memberSeenAt={seen.get(p.peerId)} own={digest}
                  remote={byPeer.get(p.peerId)} asked={s.peerDigests?.get(p.peerId)} />)}
              </tbody>
            </table>
          </div>
          )}
    </>
  )
}

/** When the node last caught up with the peer, for the lag cell's title. */
function caughtUpTitle (p: MeshPeer): string {
  return p.caughtUpAt === null ? 'never caught up with this peer' : `last caught up ${formatTime(p.caughtUpAt)}`
}

const GOSSIP_TITLE = 'known only as the signer of frames other peers relayed: its changes reach this node through them, so there is no connection to it and nothing to catch up with'

/** The connection cell's title: what the short words stand for, with full times. */
function connectionTitle (p: MeshPeer, gossip: boolean, relayed: boolean, memberSeenAt: string | undefined): string | undefined {
  const heard = p.lastHeardAt == null ? '' : `; the last frame it signed came ${formatTime(p.lastHeardAt)}`
  if (gossip) return GOSSIP_TITLE + heard
  if (relayed) return `not connected to this node since ${formatTime(p.lastConnectedAt)}, but frames it signed still reach this node through other peers${heard}`
  const seen = p.lastSeenAt ?? memberSeenAt
  return p.connected || seen === undefined ? undefined : `last seen ${formatTime(seen)}`
}

function PeerRow ({ p, relayName, memberSeenAt, own, remote, asked }: { p: MeshPeer, relayName: string | undefined, memberSeenAt: string | undefined,
  own: MeshDigest | undefined, remote: Remote | undefined, asked: PeerDigest | undefined }) {
  const gossip = !p.connected && p.via === 'gossip'
  const relayed = heardSinceLeft(p)
  // The peer's digest as the node asked it over the mesh, else as this page asked the address it was given.
  const theirs = asked?.digest != null && asked.keys != null ? { digest: asked.digest, keys: asked.keys } : remote?.digest
  let digestCell
  if (theirs === undefined || own === undefined) {
    digestCell = <span class="muted">{asked?.error ?? (p.connected ? 'not answered yet' : gossip || relayed ? 'not connected: its changes come through other peers' : 'not connected: give its address below to compare')}</span>
  } else if (theirs.digest === own.digest) {
    digestCell = <span class="state ok">agrees</span>
  } else {
    digestCell = <span class="state warn">differs ({formatCount(theirs.keys)} keys there, {formatCount(own.keys)} here)</span>
  }
  return (
    <tr data-peer={p.peerId}>
      <td data-label="Name" data-testid="peer-name">{p.name ?? <span class="muted">not heard</span>}</td>
      <td data-label="Peer"><code title={p.peerId}>{shortId(p.peerId, 8)}</code></td>
      <td data-label="Connection" data-testid="peer-connection" title={connectionTitle(p, gossip, relayed, memberSeenAt)}>
        <span class={`state ${p.connected ? 'ok' : 'off'}`}>{formatPeerConnection(p, memberSeenAt, Date.now(), relayName)}</span>
      </td>
      {gossip
        ? <td data-label="Lag" data-testid="peer-lag" title={GOSSIP_TITLE}><span class="muted">—</span></td>
        : <td data-label="Lag" data-testid="peer-lag" title={caughtUpTitle(p)}>{formatPeerLag(p)}{p.lastSyncAt !== null &&
          <span class="muted">{p.connected ? ', synced' : ''} {formatAgo(p.lastSyncAt)}</span>}</td>}
      <td data-label="Frames in" class="num">{formatCount(p.framesIn)}</td>
      <td data-label="Rejected" class="num">{formatCount(p.framesRejected)}</td>
      <td data-label="Drift refusals" class="num">{formatCount(p.driftRefusals)}</td>
      <td data-label="Digest" data-testid="peer-digest">{digestCell}</td>
    </tr>
  )
}

/** What a node named in the compare list is to this one: another mesh, this node itself, a stranger, or a peer whose digest agrees or differs. */
function remoteVerdict (r: Remote, own: Extract<MeshState, { kind: 'mesh' }>): { text: string, cls: string } {
  if (r.meshId !== own.mesh.meshId) return { text: r.meshId == null ? 'not in a mesh (standalone)' : `another mesh (${r.meshId}): it never replicates with this node`, cls: 'warn' }
  if (r.peerId === own.mesh.self.peerId) return { text: 'this node itself', cls: 'off' }
  const digest = r.digest === undefined || own.digest === undefined ? undefined : r.digest.digest === own.digest.digest
  const known = own.mesh.peers.some(p => p.peerId === r.peerId)
  const d = digest === undefined ? '' : digest ? ', digest agrees' : `, digest differs (${formatCount(r.digest!.keys)} keys there, ${formatCount(own.digest!.keys)} here)`
  return { text: `${known ? 'a peer' : 'same mesh, not a peer of this node yet'}${d}`, cls: digest === false || !known ? 'warn' : 'ok' }
}

function CompareForm ({ urls, onChange, remotes, own }: { urls: string[], onChange: (u: string[]) => void, remotes: Remote[],
  own: Extract<MeshState, { kind: 'mesh' }> }) {
  const [draft, setDraft] = useState('')
  const [error, setError] = useState<string | undefined>(undefined)
  const add = (e: Event): void => {
    e.preventDefault()
    let url: URL
    try {
      url = new URL(draft.trim())
    } catch {
      setError('not an address: write it as http://host:port')
      return
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') { setError('only http and https addresses'); return }
    setError(undefined)
    setDraft('')
    if (!urls.includes(url.origin)) onChange([...urls, url.origin])
  }
  return (
    <form class="add inline" onSubmit={add}>
      <h3>Compare digests with other nodes</h3>
      <p class="muted">
        The node compares its connected peers itself (above). For another node, name its HTTP address: the page asks it for its digest and says
        what it is to this node (a peer, a node of another mesh, a digest that differs). Kept in this browser.
      </p>
      {urls.length > 0 && (
        <ul>
          {urls.map(u => {
            const r = remotes.find(x => x.url === u)
            return (
              <li key={u}>
                <code>{u}</code> {r?.error !== undefined
                  ? <span class="error-inline">{r.error}</span>
                  : r?.peerId !== undefined
                    ? <><span class="muted">{r.name ?? 'peer'} {shortId(r.peerId, 6)}</span> <span class={`state ${remoteVerdict(r, own).cls}`}
                      data-testid="compare-verdict">{remoteVerdict(r, own).text}</span></>
                    : null}{' '}
                <button type="button" class="small secondary" aria-label={`Remove ${u}`} onClick={() => { onChange(urls.filter(x => x !== u)) }}>Remove</button>
              </li>
            )
          })}
        </ul>
      )}
      <label for="compare-url">Node address</label>
      <input id="compare-url" placeholder="http://127.0.0.1:9001" value={draft} onInput={e => { setDraft(e.currentTarget.value) }} />
      <button type="submit">Compare</button>
      {error !== undefined && <p class="error" role="alert">{error}</p>}
    </form>
  )
}
