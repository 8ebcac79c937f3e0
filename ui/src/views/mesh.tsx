/**
 * The mesh part of the node panel. A node started without a swarm key has
 * no mesh (`/api/mesh` says `enabled: false`; a node without the route
 * answers 404, one without the component 503) and the panel says so. With a
 * mesh: this node's peer id, addresses and digest, and per peer the
 * connection state, catch-up lag (from the node's `lagMs`, worded as
 * `meta-core status` words it, with the last sync and, in its title, when
 * the node last caught up), frames received and rejected, clock-drift
 * refusals, and whether its digest agrees with ours.
 *
 * A peer's digest is only known to this page if the page can reach that
 * peer's HTTP API: the person names other nodes' addresses (kept in this
 * browser), the page asks each for `/api/mesh` (to learn its peer id) and
 * `/api/mesh/digest`, and compares. Peers it cannot reach say so.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiFailure, call, errorText } from '../api.js'
import { formatAgo, formatCount, formatPeerLag, formatTime, shortId } from '../format.js'
import type { MeshDigest, MeshPeer, MeshStatus } from '../wire.js'
import { ErrorNote, useInterval } from './common.js'
import { Transfers } from './transfers.js'

const POLL_MS = 3000
const COMPARE_KEY = 'meta-core-compare-nodes'

interface Remote { url: string, peerId?: string, digest?: MeshDigest, error?: string }

type MeshState =
  | { kind: 'loading' }
  | { kind: 'none', reason: string }
  | { kind: 'error', error: unknown }
  | { kind: 'mesh', mesh: MeshStatus, digest?: MeshDigest, digestError?: string }

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
  try {
    return { kind: 'mesh', mesh, digest: await call<MeshDigest>('GET', '/api/mesh/digest', { quiet: true }) }
  } catch (err) {
    return { kind: 'mesh', mesh, digestError: errorText(err) }
  }
}

async function remoteState (url: string): Promise<Remote> {
  try {
    const [m, d] = await Promise.all([
      call<MeshStatus>('GET', '/api/mesh', { origin: url }),
      call<MeshDigest>('GET', '/api/mesh/digest', { origin: url })
    ])
    return { url, peerId: m.self.peerId, digest: d }
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
      {state.kind === 'mesh' && <Transfers />}
      {state.kind === 'mesh' && <CompareForm urls={urls} onChange={setAndSave} remotes={remotes} />}
    </section>
  )
}

function MeshView ({ s, remotes }: { s: Extract<MeshState, { kind: 'mesh' }>, remotes: Remote[] }) {
  const { mesh, digest } = s
  const byPeer = new Map(remotes.filter(r => r.peerId !== undefined).map(r => [r.peerId!, r]))
  const connected = mesh.peers.filter(p => p.connected).length
  return (
    <>
      <dl class="kv">
        {mesh.meshId != null && <><dt>Mesh</dt><dd><code>{mesh.meshId}</code></dd></>}
        <dt>Peer id</dt><dd><code class="wrap">{mesh.self.peerId}</code></dd>
        <dt>Listening on</dt><dd>{(mesh.self.addrs ?? []).length === 0 ? <span class="muted">no address</span> : mesh.self.addrs!.map(a => <code class="wrap block" key={a}>{a}</code>)}</dd>
        <dt>Clock</dt><dd><code>{mesh.self.hlc ?? '—'}</code></dd>
        <dt>Digest</dt>
        <dd data-testid="own-digest">{digest === undefined ? <span class="muted">{s.digestError ?? '—'}</span> : <><code title={digest.digest}>{shortId(digest.digest, 8)}</code> over {formatCount(digest.keys)} keys</>}</dd>
        <dt>Peers</dt><dd>{connected} connected of {mesh.peers.length} known</dd>
      </dl>
      {mesh.peers.length === 0
        ? <p class="muted">No peer known yet.</p>
        : (
          <div class="table-wrap">
            <table class="peers">
              <thead>
                <tr>
                  <th scope="col">Peer</th><th scope="col">Connection</th><th scope="col">Lag</th>
                  <th scope="col" class="num">Frames in</th><th scope="col" class="num">Rejected</th><th scope="col" class="num">Drift refusals</th><th scope="col">Digest</th>
                </tr>
              </thead>
              <tbody>
                {mesh.peers.map(p => <PeerRow key={p.peerId} p={p} own={digest} remote={byPeer.get(p.peerId)} />)}
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

function PeerRow ({ p, own, remote }: { p: MeshPeer, own: MeshDigest | undefined, remote: Remote | undefined }) {
  let digestCell
  if (remote?.digest === undefined || own === undefined) {
    digestCell = <span class="muted">not reachable from this page</span>
  } else if (remote.digest.digest === own.digest) {
    digestCell = <span class="state ok">agrees</span>
  } else {
    digestCell = <span class="state warn">differs ({formatCount(remote.digest.keys)} keys there, {formatCount(own.keys)} here)</span>
  }
  return (
    <tr data-peer={p.peerId}>
      <td><code title={p.peerId}>{shortId(p.peerId, 8)}</code></td>
      <td><span class={`state ${p.connected ? 'ok' : 'off'}`}>{p.connected ? 'connected' : 'disconnected'}</span></td>
      <td data-testid="peer-lag" title={caughtUpTitle(p)}>{formatPeerLag(p)}{p.lastSyncAt !== null && <span class="muted">, synced {formatAgo(p.lastSyncAt)}</span>}</td>
      <td class="num">{formatCount(p.framesIn)}</td>
      <td class="num">{formatCount(p.framesRejected)}</td>
      <td class="num">{formatCount(p.driftRefusals)}</td>
      <td data-testid="peer-digest">{digestCell}</td>
    </tr>
  )
}

function CompareForm ({ urls, onChange, remotes }: { urls: string[], onChange: (u: string[]) => void, remotes: Remote[] }) {
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
      <p class="muted">Name another node's HTTP address; the page asks it for its digest and marks its row. Kept in this browser.</p>
      {urls.length > 0 && (
        <ul>
          {urls.map(u => {
            const r = remotes.find(x => x.url === u)
            return (
              <li key={u}>
                <code>{u}</code> {r?.error !== undefined ? <span class="error-inline">{r.error}</span> : r?.peerId !== undefined ? <span class="muted">peer {shortId(r.peerId, 6)}</span> : null}{' '}
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
