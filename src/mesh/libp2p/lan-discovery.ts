/**
 * Members on the same LAN find each other with no address typed: mDNS
 * (`@libp2p/mdns`) under a service name derived from the mesh id
 * (`_mc-<12 hex digits of it>._udp.local`: the id, never the key, and
 * within DNS-SD's 15 characters), so nodes of other meshes on the LAN ask
 * and answer under other names. libp2p 3 does not dial what discovery finds:
 * this handler does, at the LAN addresses the peer announced.
 *
 * A peer that answers under our name but fails the private network (another
 * swarm key behind a colliding name, or something that is no member) fails
 * the dial; it is tried again with backoff (10 s doubling to 10 min), not at
 * every announcement (every 10 s), and said once at `info`. A member found
 * this way is marked as found on the LAN (`lan` on `/api/mesh`).
 */
import type { Libp2p, PeerId, PeerInfo } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../common/index.js'

const FIRST_RETRY_MS = 10_000
const MAX_RETRY_MS = 10 * 60_000

/** The mDNS service name of a mesh. */
export function mdnsServiceName (meshId: string): string {
  return `_mc-${meshId.slice(0, 12)}._udp.local`
}

interface Found { failures: number, nextTryAt: number, dialing: boolean, seenAt: number }

interface LanDiscoveryOptions {
  /** The first retry of a peer that could not be reached (ms; doubles to MAX_RETRY_MS). */
  firstRetryMs?: number
  /** Whether an address the peer announced is worth dialing (default: not loopback, which from here reaches this host). */
  dialable?: (addr: string) => boolean
  /** The clock the backoff is timed by (ms; default Date.now). */
  now?: () => number
}

const notLoopback = (a: string): boolean => !/^\/ip4\/127\.|^\/ip6\/::1\//.test(a)

export class LanDiscovery {
  private readonly found = new Map<string, Found>()
  private stopped = false
  private readonly onPeer = (evt: CustomEvent<PeerInfo>): void => { this.discovered(evt.detail.id, evt.detail.multiaddrs) }

  constructor (
    private readonly node: Libp2p,
    private readonly source: { addEventListener: (type: 'peer', fn: (evt: CustomEvent<PeerInfo>) => void) => void,
      removeEventListener: (type: 'peer', fn: (evt: CustomEvent<PeerInfo>) => void) => void },
    private readonly blocked: ReadonlySet<string>,
    private readonly log: Logger,
    private readonly opts: LanDiscoveryOptions = {}
  ) {}

  start (): void {
    this.source.addEventListener('peer', this.onPeer)
  }

  stop (): void {
    this.stopped = true
    this.source.removeEventListener('peer', this.onPeer)
  }

  /** Whether the peer was found on the LAN (it answered this node's mDNS queries). */
  onLan (peer: string): boolean {
    return this.found.has(peer)
  }

  private discovered (peer: PeerId, addrs: Multiaddr[]): void {
    const id = peer.toString()
    if (this.stopped || id === this.node.peerId.toString() || this.blocked.has(id)) return
    const now = (this.opts.now ?? Date.now)()
    const f = this.found.get(id) ?? { failures: 0, nextTryAt: 0, dialing: false, seenAt: now }
    this.found.set(id, f)
    f.seenAt = now
    if (f.dialing || f.nextTryAt > now || this.node.getConnections(peer).some(c => c.direct)) return
    const dialable = this.opts.dialable ?? notLoopback
    const lan = addrs.filter(a => dialable(a.toString()) && !a.toString().includes('/p2p-circuit'))
    if (lan.length === 0) return
    f.dialing = true
    this.node.dial(lan.map(a => a.encapsulate(`/p2p/${id}`))).then(() => {
      if (f.failures > 0) this.log.info('reached the member found on the LAN', { peer: id })
      f.failures = 0
    }, (err: unknown) => {
      f.failures++
      const delay = Math.min(MAX_RETRY_MS, (this.opts.firstRetryMs ?? FIRST_RETRY_MS) * 2 ** Math.min(f.failures - 1, 10))
      f.nextTryAt = (this.opts.now ?? Date.now)() + delay
      ;(f.failures === 1 ? this.log.info : this.log.debug)('cannot connect to a node found on the LAN: not in this mesh (another swarm key) or unreachable', {
        peer: id, addrs: lan.map(String), attempt: f.failures, retryInMs: delay, err
      })
    }).finally(() => { f.dialing = false })
  }
}
