/**
 * How members reach this node (announced, mapped by the router, relayed
 * only, LAN only), the relays it is reachable through, its router's port
 * mapping, and what it relays for others: the mesh panel's rows for
 * `/api/mesh`'s `reach`, in the words `meta-core status` uses.
 */
import { formatBytes, formatCount, shortId } from '../format.js'
import type { MeshPeer, MeshReach } from '../wire.js'

const LAN_ONLY = 'LAN only: members outside this LAN (or VPN) cannot reach it; set META_CORE_ANNOUNCE or META_CORE_UPNP, or let a reachable member relay (see operations, "A mesh across homes")'

/** A peer as people read it: its name, else the start of its id. */
export function peerLabel (peers: readonly MeshPeer[], id: string | null | undefined): string | undefined {
  if (id == null) return undefined
  return peers.find(p => p.peerId === id)?.name ?? `${id.slice(0, 12)}…`
}

export function ReachRows ({ reach, peers }: { reach: MeshReach | null, peers: readonly MeshPeer[] }) {
  if (reach === null) return null
  const relays = reach.relays.map(id => peerLabel(peers, id) ?? id).join(', ')
  const how = {
    announced: `announced at ${reach.announced.join(' ')}`,
    mapped: `mapped by the router at ${reach.upnp?.mappings.map(m => m.external).join(' ') ?? '?'}`,
    public: 'at a public address of its own',
    'relayed-only': `relayed only, through ${relays}`,
    'lan-only': LAN_ONLY
  }[reach.reachability]
  const r = reach.relay
  return (
    <>
      <dt>Reached</dt>
      <dd data-testid="reachability">
        <span class={`state ${reach.reachability === 'lan-only' ? 'warn' : 'ok'}`}>{how}</span>
        {reach.reachability !== 'relayed-only' && reach.relays.length > 0 && <span class="muted">; also through {relays}</span>}
        {reach.mdns && <span class="muted">, LAN discovery (mDNS) on</span>}
      </dd>
      {r !== null && (
        <>
          <dt>Relay</dt>
          <dd data-testid="relay">
            {!r.serving
              ? <span class="muted">{reach.relayMode}: not serving until the node has an address others can dial</span>
              : <>serving {formatCount(r.reservations)} member{r.reservations === 1 ? '' : 's'}: {formatCount(r.circuits)} relayed connection{r.circuits === 1 ? '' : 's'}, {formatBytes(r.bytesPerSecond)}/s, {formatBytes(r.bytesRelayed)} since start{r.refusedCircuits > 0 && `, ${formatCount(r.refusedCircuits)} refused`}
                <span class="muted"> (limits {r.limits.maxCircuitsPerPeer} connections and {formatBytes(r.limits.bytesPerSecondPerPeer)}/s per member,
                  {' '}{r.limits.maxCircuits} and {formatBytes(r.limits.bytesPerSecond)}/s in all)</span>
                {r.peers.filter(p => p.circuits > 0 || p.bytesIn > 0).map(p => (
                  <span class="block" key={p.peerId}><code title={p.peerId}>{peerLabel(peers, p.peerId) ??
                    shortId(p.peerId, 6)}</code>: {formatCount(p.circuits)} relayed, {formatBytes(p.bytesIn)} in, {formatBytes(p.bytesOut)} out</span>
                ))}
              </>}
          </dd>
        </>
      )}
      {reach.upnp !== null && (
        <>
          <dt>Router (UPnP)</dt>
          <dd data-testid="upnp">
            {reach.upnp.state === 'mapped'
              ? reach.upnp.mappings.map(m => `mapped ${m.internal} as ${m.external}`).join(', ')
              : reach.upnp.state === 'failed' ? <span class="state warn">failed: {reach.upnp.problem ?? 'no mapping'}</span>
                : <span class="muted">looking for the router</span>}
          </dd>
        </>
      )}
    </>
  )
}
