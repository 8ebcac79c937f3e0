/**
 * Keeps the node in the mesh beyond its bootstrap list: learns the members
 * (identify gives a connected peer's listen addresses, and identify push
 * their changes; the member exchange asks each new peer, and one random
 * peer a minute (with `quickExchange`, every 10 s while a member cannot be
 * reached), whom it is connected to), keeps them in the member book (member-book.ts, saved in the store's
 * node-local keys), and dials members until the node has `target`
 * connections, picked at random among the members it is not connected to,
 * so connections spread over the mesh instead of all meeting at the
 * bootstrap node. A dropped connection is replaced within about a second.
 * A member that cannot be reached is retried with backoff (2 s doubling to
 * 5 min) and forgotten after a week unseen.
 *
 * Members behind NAT are known by relayed addresses too (a reachable
 * member relays for them: relay-server.ts): a member is dialed at its direct
 * addresses first and through a relay only when none answers within
 * DIRECT_FIRST_MS. A member connected only through a relay is tried directly
 * now and then (30 s doubling to 5 min), and once a direct connection is up
 * the node starts over on it alone (direct-upgrade.ts). When a relay comes back,
 * the members behind it are tried again at once instead of at their backoff. A member's last-seen time is
 * current while it is connected and kept when its connection drops; the
 * adapter adds the frames it signed (`book.seen`).
 *
 * `target` 0 dials only the bootstrap list (peer-dialer.ts), as the
 * simulator's fixed topologies need; members are still learned and kept.
 *
 * With `crossRegionPeers` > 0 the dialing is region-aware
 * (../peer-distance.ts): each new connection's round trip is measured, and
 * the node keeps that many connections to far members and dials near ones
 * for the rest, so most traffic stays inside a region and every region
 * keeps links to the others. A far connection given up is not dialed
 * again for PARK_MS.
 */
import { RELAY_V2_HOP_CODEC } from '@libp2p/circuit-relay-v2'
import { peerIdFromString } from '@libp2p/peer-id'
import type { Connection, Libp2p, PeerId } from '@libp2p/interface'
import type { Logger } from '../../common/index.js'
import type { MeshMemberView } from '../service.js'
import { MemberBook, type LocalKeys, type Member } from './member-book.js'
import { handleMemberRequests, requestMembers, type ListedMember } from './member-exchange.js'
import { PeerDistance } from '../peer-distance.js'
import { relayOf } from './addresses.js'
import { DIRECT_FIRST_MS, DirectUpgrades, split } from './direct-upgrade.js'

const TICK_MS = 3_000
const SOON_MS = 250
const EXCHANGE_MS = 60_000
/** The exchange's interval while a member this node knows cannot be reached (its new addresses, a relayed one, may be about). */
const EXCHANGE_SOON_MS = 10_000
const SAVE_MS = 5_000
const FIRST_RETRY_MS = 2_000
const MAX_RETRY_MS = 5 * 60_000
/** A member known only by relayed addresses through this node itself is looked at again after this (it dials in). */
const OWN_RELAY_ONLY_MS = 30_000
/** Dials under way at once: enough to refill a node's connections in one tick, few enough not to storm a mesh that restarts together. */
const MAX_PARALLEL = 4
/** A far member whose connection was given up for a near one is not dialed again for this long (ms). */
const PARK_MS = 10 * 60_000

interface MembershipInit {
  selfId: string
  target: number
  blocked: ReadonlySet<string>
  /** Which learned addresses this node can dial (its transport's). */
  accept: (addr: string) => boolean
  keys: LocalKeys
  log: Logger
  /** Region-aware dialing: connections kept to far members (by RTT), the rest near; 0 or absent: members at random. */
  crossRegionPeers?: number
  /** Measures the round trip to a connected peer (ms): libp2p's ping service. Needed with `crossRegionPeers`. */
  ping?: (peer: PeerId) => Promise<number>
  /** Peers whose connection is never given up (the bootstrap list, which peer-dialer.ts keeps connected). */
  keep?: (peer: string) => boolean
  /** Ask the exchange every EXCHANGE_SOON_MS while a member cannot be reached (members behind NAT, whose relayed addresses come later). */
  quickExchange?: boolean
}

interface DialState { failures: number, nextTryAt: number, dialing: boolean }

export class Membership {
  readonly book: MemberBook
  private readonly dials = new Map<string, DialState>()
  /** Members connected through a relay only: tried directly now and then (direct-upgrade.ts). */
  private readonly upgrades: DirectUpgrades
  private timer: NodeJS.Timeout | undefined
  private exchangeTimer: NodeJS.Timeout | undefined
  private saveTimer: NodeJS.Timeout | undefined
  private saving: Promise<void> = Promise.resolve()
  private stopped = true
  private readonly distance: PeerDistance | undefined
  private readonly onIdentify = (evt: CustomEvent<{ peerId: PeerId, listenAddrs: Array<{ toString: () => string }>, protocols?: string[],
    connection?: { remoteAddr: { toString: () => string } } }>): void => {
    const id = evt.detail.peerId.toString()
    if (evt.detail.protocols?.includes(RELAY_V2_HOP_CODEC) === true) this.relayUp(id)
    let addrs = evt.detail.listenAddrs.map(a => stripPeer(a.toString()))
    // A peer on another host that listens on every interface announces its loopback address too: useless to anyone but itself.
    const remote = evt.detail.connection?.remoteAddr.toString()
    if (remote !== undefined && !isLoopbackAddr(remote)) addrs = addrs.filter(a => !isLoopbackAddr(a))
    this.book.connected(id, addrs, Date.now())
    this.saveSoon()
    this.ask(evt.detail.peerId)
  }

  private readonly onConnect = (evt: CustomEvent<PeerId>): void => {
    this.dials.delete(evt.detail.toString())
    this.book.connected(evt.detail.toString(), [], Date.now())
    this.measure(evt.detail)
  }

  private readonly onDisconnect = (evt: CustomEvent<PeerId>): void => {
    // Up until now: "last seen" is when the connection dropped, not when it opened.
    this.book.left(evt.detail.toString(), Date.now())
    this.upgrades.left(evt.detail.toString())
    this.saveSoon()
    this.tickIn(SOON_MS)
  }

  constructor (private readonly node: Libp2p, private readonly init: MembershipInit) {
    this.book = new MemberBook(init.selfId, init.accept)
    this.upgrades = new DirectUpgrades(node, init.selfId, (id) => this.book.get(id)?.addrs ?? [], init.log)
    const cross = init.crossRegionPeers ?? 0
    this.distance = cross > 0 && init.ping !== undefined ? new PeerDistance(cross) : undefined
  }

  async start (): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    this.book.load(this.init.keys, Date.now())
    await handleMemberRequests(this.node, () => this.listed(), this.init.log)
    this.node.addEventListener('peer:identify', this.onIdentify)
    this.node.addEventListener('peer:connect', this.onConnect)
    this.node.addEventListener('peer:disconnect', this.onDisconnect)
    if (this.book.size > 0) this.init.log.info('known members loaded', { members: this.book.size })
    this.tickIn(0)
    let last = Date.now()
    this.exchangeTimer = setInterval(() => {
      const stuck = this.init.quickExchange === true && [...this.dials.values()].some(d => d.failures > 0)
      if (Date.now() - last < (stuck ? EXCHANGE_SOON_MS : EXCHANGE_MS) - 500) return
      const peers = this.node.getPeers()
      if (peers.length === 0) return
      last = Date.now()
      this.ask(peers[Math.floor(Math.random() * peers.length)])
    }, EXCHANGE_SOON_MS)
    this.exchangeTimer.unref()
  }

  /** Stops dialing and asking, and saves the book (the store must still be open). */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.node.removeEventListener('peer:identify', this.onIdentify)
    this.node.removeEventListener('peer:connect', this.onConnect)
    this.node.removeEventListener('peer:disconnect', this.onDisconnect)
    clearTimeout(this.timer)
    clearInterval(this.exchangeTimer)
    clearTimeout(this.saveTimer)
    const now = Date.now()
    this.markConnected(now)
    this.book.touch()
    await this.saving
    await this.book.save(this.init.keys, now).catch((err: unknown) => { this.init.log.warn('could not save the known members', { err }) })
  }

  /** The members, a connected one seen and connected now (its entry's times move when the connection drops or at a save). */
  members (): MeshMemberView[] {
    const connected = new Set(this.node.getPeers().map(String))
    const now = Date.now()
    return this.book.entries().sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([peerId, m]) => {
      const up = connected.has(peerId)
      const lastConnected = up ? now : m.lastConnected
      return {
        peerId,
        addrs: m.addrs,
        connected: up,
        lastSeenAt: new Date(up ? now : m.lastSeen).toISOString(),
        lastConnectedAt: lastConnected === null ? null : new Date(lastConnected).toISOString(),
        dialFailures: this.dials.get(peerId)?.failures ?? 0
      }
    })
  }

  /** The relays named in members' relayed addresses (each once): the ones a member behind NAT keeps a reservation on. */
  relays (): Array<{ addr: string, peerId: string }> {
    const out = new Map<string, string>()
    for (const [, m] of this.book.entries()) {
      for (const a of m.addrs) {
        const r = relayOf(a)
        if (r !== undefined && !out.has(r.peerId)) out.set(r.peerId, r.addr)
      }
    }
    return [...out].map(([peerId, addr]) => ({ peerId, addr }))
  }

  /** The connected members were up until now (before a save: a node that dies keeps times close to its end). */
  private markConnected (now: number): void {
    for (const p of this.node.getPeers()) this.book.connected(p.toString(), [], now)
  }

  /** What we tell a peer that asks: the members we are connected to now, with their announced addresses. */
  private listed (): ListedMember[] {
    const out: ListedMember[] = []
    for (const p of this.node.getPeers()) {
      const m = this.book.get(p.toString())
      if (m !== undefined) out.push({ id: p.toString(), addrs: m.addrs })
    }
    return out
  }

  private ask (peer: PeerId): void {
    if (this.stopped || this.init.target === 0) return
    requestMembers(this.node, peer).then((list) => {
      if (this.stopped) return
      const now = Date.now()
      const before = this.book.size
      let learned = false
      for (const m of list) learned = this.book.heard(m.id, m.addrs.map(stripPeer), now) || learned
      if (this.book.size > before) this.init.log.debug('learned members', { from: peer.toString(), members: this.book.size - before })
      // Nothing new to dial: the regular tick is enough (an early one would only stir region-aware dialing).
      if (learned) {
        this.saveSoon()
        this.tickIn(0)
      }
    }, (err: unknown) => {
      // A peer of an older version has no exchange; what it announces in identify is still learned.
      this.init.log.debug('member exchange failed', { peer: peer.toString(), err })
    })
  }

  private tickIn (ms: number): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => { this.tick() }, ms)
    this.timer.unref()
  }

  /** Dials members until `target` connections (counting dials under way), then looks again in TICK_MS. */
  private tick (): void {
    if (this.stopped) return
    try {
      const connected = new Set(this.node.getPeers().map(String))
      this.upgrades.tick(connected)
      const dialing = [...this.dials.values()].filter(d => d.dialing).length
      let wanted = Math.min(this.init.target - connected.size - dialing, MAX_PARALLEL - dialing)
      if (wanted <= 0 && this.distance === undefined) return
      const now = Date.now()
      const candidates = this.book.entries().filter(([id]) => {
        const d = this.dials.get(id)
        return !connected.has(id) && !this.init.blocked.has(id) && (d === undefined || (!d.dialing && d.nextTryAt <= now))
      })
      // At random, members that answered last time first: spread, and not stuck on the dead.
      shuffle(candidates)
      candidates.sort((a, b) => (this.dials.get(a[0])?.failures ?? 0) - (this.dials.get(b[0])?.failures ?? 0))
      if (this.distance !== undefined && this.init.target > 0) wanted = this.byDistance(this.distance, candidates, connected, wanted, dialing)
      for (const [id, m] of candidates) {
        if (wanted-- <= 0) break
        this.dial(id, m)
      }
    } finally {
      this.tickIn(Math.round(TICK_MS * (0.8 + 0.4 * Math.random())))
    }
  }

  /**
   * Region-aware dialing (../peer-distance.ts): orders the candidates by what
   * the node needs, and dials one over the target or gives a connection up
   * as the distances say. Returns how many to dial.
   */
  private byDistance (d: PeerDistance, candidates: Array<[string, Member]>, connected: ReadonlySet<string>, wanted: number, dialing: number): number {
    const now = Date.now()
    for (const c of this.node.getConnections()) if (c.rtt !== undefined) d.record(c.remotePeer.toString(), c.rtt, now)
    d.order(candidates, connected)
    if (dialing > 0) return wanted
    const keep = this.init.keep ?? (() => false)
    const conns = [...connected].map(peer => ({ peer, keep: keep(peer),
      outbound: this.node.getConnections(peerIdFromString(peer)).some(c => c.direction === 'outbound') }))
    const step = d.step(conns, candidates.map(([id]) => id), this.init.target)
    if (step.drop !== undefined) {
      const { peer, park } = step.drop
      if (park) this.dials.set(peer, { failures: 0, nextTryAt: Date.now() + PARK_MS, dialing: false })
      this.init.log.debug(park ? 'giving up a far connection for a nearer member' : 'giving up a near connection to try for a far one', { peer, rttMs: d.rtt(peer) })
      this.node.hangUp(peerIdFromString(peer)).catch((err: unknown) => { this.init.log.debug('closing a connection failed', { peer, err }) })
    }
    return step.extra ? Math.max(wanted, 1) : wanted
  }

  /** Region-aware dialing: the round trip to a new peer, once, then a look at the dialing. */
  private measure (peer: PeerId): void {
    const d = this.distance
    if (d === undefined || this.init.ping === undefined) return
    this.init.ping(peer).then((ms) => {
      d.record(peer.toString(), ms, Date.now())
      this.tickIn(SOON_MS)
    }, (err: unknown) => { this.init.log.debug('could not measure the round trip to a peer', { peer: peer.toString(), err }) })
  }

  private dial (id: string, m: Readonly<Member>): void {
    const d = this.dials.get(id) ?? { failures: 0, nextTryAt: 0, dialing: false }
    this.dials.set(id, d)
    d.dialing = true
    let peer: PeerId
    try {
      peer = peerIdFromString(id)
    } catch {
      d.dialing = false
      return
    }
    const { direct, relayed } = split(this.init.selfId, id, m.addrs)
    if (direct.length === 0 && relayed.length === 0) {
      // Known only through this node's own relay: it dials in, this node never needs to dial out.
      d.dialing = false
      d.nextTryAt = Date.now() + OWN_RELAY_ONLY_MS
      return
    }
    const attempt = async (): Promise<Connection> => {
      if (direct.length > 0) {
        try {
          return await this.node.dial(direct, relayed.length > 0 ? { signal: AbortSignal.timeout(DIRECT_FIRST_MS) } : {})
        } catch (err) {
          if (relayed.length === 0) throw err
        }
      }
      return await this.node.dial(relayed)
    }
    attempt().then(() => {
      this.dials.delete(id)
    }, (err: unknown) => {
      d.failures++
      const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(d.failures - 1, 10))
      d.nextTryAt = Date.now() + Math.round(delay * (0.8 + 0.4 * Math.random()))
      // Members come and go: said once per streak at info, the retries at debug.
      const log = d.failures === 1 ? this.init.log.info : this.init.log.debug
      log('cannot reach member', { peer: peer.toString(), addrs: m.addrs, attempt: d.failures, retryInMs: delay, err })
    }).finally(() => {
      d.dialing = false
    })
  }

  /** A relay is up (again): the members behind it are worth a try now, not at the end of their backoff. */
  private relayUp (relay: string): void {
    let any = false
    for (const [id, m] of this.book.entries()) {
      const d = this.dials.get(id)
      if (d === undefined || d.dialing || !m.addrs.some(a => relayOf(a)?.peerId === relay)) continue
      d.failures = 0
      d.nextTryAt = 0
      any = true
    }
    if (any) this.tickIn(SOON_MS)
  }

  private saveSoon (): void {
    if (this.stopped || this.saveTimer !== undefined) return
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined
      if (this.stopped) return
      this.saving = this.saving.then(async () => {
        const now = Date.now()
        this.markConnected(now)
        await this.book.save(this.init.keys, now)
      })
        .catch((err: unknown) => { this.init.log.warn('could not save the known members', { err }) })
    }, SAVE_MS)
    this.saveTimer.unref()
  }
}

/** The address without the member's own trailing `/p2p/<peerId>` (a relayed address keeps its relay's). */
function stripPeer (addr: string): string {
  return addr.replace(/\/p2p\/[^/]+$/, '')
}

function isLoopbackAddr (addr: string): boolean {
  return /^\/ip4\/127\.|^\/ip6\/::1\/|^\/dns[46]?\/localhost\//.test(addr)
}

function shuffle<T> (a: T[]): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[a[i], a[j]] = [a[j], a[i]]
  }
}
