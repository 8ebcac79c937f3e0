/**
 * Members connected through a relay only (membership.ts): dialed at their
 * direct addresses now and then (FIRST_DIRECT_RETRY_MS doubling to
 * MAX_RETRY_MS, again at once after they left and came back), and moved to
 * a direct connection once one is up. Also the split of a member's
 * addresses into direct and relayed ones that every dial uses.
 */
import { peerIdFromString } from '@libp2p/peer-id'
import type { Connection, Libp2p, PeerId } from '@libp2p/interface'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../common/index.js'
import { relayOf } from './addresses.js'

/** Direct addresses get this long before a member's relayed ones are tried (another home's LAN addresses may never answer). */
export const DIRECT_FIRST_MS = 3_000
/** A member connected only through a relay is dialed directly again after this (doubling to MAX_RETRY_MS). */
const FIRST_DIRECT_RETRY_MS = 30_000
const MAX_RETRY_MS = 5 * 60_000
/** A member moved to a direct connection is not moved again within this long (two nodes dialing each other at once). */
const MOVE_QUIET_MS = 5 * 60_000

interface DirectState { failures: number, nextTryAt: number, dialing: boolean, movedAt: number }

export class DirectUpgrades {
  private readonly state = new Map<string, DirectState>()

  constructor (
    private readonly node: Libp2p,
    private readonly selfId: string,
    /** A member's addresses as the member book keeps them. */
    private readonly addrsOf: (id: string) => readonly string[],
    private readonly log: Logger
  ) {}

  /** A member's connections all dropped: a relayed one that comes back is tried directly at once. */
  left (id: string): void {
    const d = this.state.get(id)
    if (d !== undefined && !d.dialing) { d.failures = 0; d.nextTryAt = 0 }
  }

  /**
   * Members connected only through a relay: dialed at their direct addresses
   * now and then; one with a direct connection beside a relayed one is
   * moved to the direct one alone.
   */
  tick (connected: ReadonlySet<string>): void {
    const now = Date.now()
    for (const id of connected) {
      let peer: PeerId
      try {
        peer = peerIdFromString(id)
      } catch {
        continue
      }
      const conns = this.node.getConnections(peer)
      if (conns.every(c => c.direct)) continue
      const d = this.state.get(id) ?? { failures: 0, nextTryAt: 0, dialing: false, movedAt: 0 }
      this.state.set(id, d)
      if (d.dialing) continue
      if (conns.some(c => c.direct)) {
        this.moveToDirect(id, peer, conns, d)
        continue
      }
      const addrs = split(this.selfId, id, this.addrsOf(id)).direct
      if (addrs.length === 0 || d.nextTryAt > now) continue
      d.dialing = true
      this.node.dial(addrs, { signal: AbortSignal.timeout(DIRECT_FIRST_MS) }).then((conn) => {
        d.failures = 0
        if (conn.direct) this.moveToDirect(id, peer, this.node.getConnections(peer), d)
      }, (err: unknown) => {
        d.failures++
        d.nextTryAt = Date.now() + Math.min(MAX_RETRY_MS, FIRST_DIRECT_RETRY_MS * 2 ** Math.min(d.failures - 1, 10))
        this.log.debug('member still reachable through a relay only', { peer: id, err })
      }).finally(() => { d.dialing = false })
    }
  }

  /**
   * A direct connection beside a relayed one: gossipsub keeps its streams on
   * the connection it met the peer on and drops the peer when that one
   * closes (while libp2p still counts it connected), so the node hangs up
   * both and dials the direct address again. Done by the side that dialed
   * the direct connection (the other may not be able to), the smaller peer
   * id when both did, and once per MOVE_QUIET_MS for a peer.
   */
  private moveToDirect (id: string, peer: PeerId, conns: Connection[], d: DirectState): void {
    const mine = conns.find(c => c.direct && c.direction === 'outbound')
    const theirs = conns.some(c => c.direct && c.direction === 'inbound')
    const now = Date.now()
    if (mine === undefined || (theirs && this.selfId > id) || now - d.movedAt < MOVE_QUIET_MS) return
    d.movedAt = now
    d.dialing = true
    const addr = mine.remoteAddr
    this.node.hangUp(peer)
      .then(async () => await this.node.dial(addr))
      .then(() => { this.log.info('moved to a direct connection', { peer: id, addr: addr.toString() }) },
        (err: unknown) => { this.log.info('could not move to a direct connection', { peer: id, err }) })
      .finally(() => { d.dialing = false })
  }
}

/**
 * A member's addresses to dial, direct ones and relayed ones apart. Relayed
 * addresses through this node itself are kept in the book (the members it
 * tells about that member need them) but never dialed from here.
 */
export function split (self: string, id: string, addrs: readonly string[]): { direct: Multiaddr[], relayed: Multiaddr[] } {
  const direct: Multiaddr[] = []
  const relayed: Multiaddr[] = []
  for (const a of addrs) {
    if (!a.includes('/p2p-circuit')) direct.push(multiaddr(`${a}/p2p/${id}`))
    else if (relayOf(a)?.peerId !== self) relayed.push(multiaddr(`${a}/p2p/${id}`))
  }
  return { direct, relayed }
}
