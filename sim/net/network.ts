/**
 * The simulated network: nodes that are up or down, connections between
 * them, and messages that cross those connections with a delay.
 *
 * Model (what a libp2p TCP connection looks like from above):
 * - A message's delay, loss and bandwidth are the link model's
 *   (src/mesh/testing/link-model.ts, shared with the virtual mesh): uplink
 *   queue, one latency sample, loss (`drop` loses it, Maelstrom's lossy
 *   network; `retransmit` delays it one retransmission timeout per lost
 *   try), downlink queue. Each direction of a connection is one of its
 *   lanes, first-in first-out as one TCP stream is: a message never
 *   overtakes an earlier one on the same connection.
 * - A partition splits the nodes into groups; a message between groups is
 *   lost. A connection across a partition that lasts `deadAfterMs` is closed,
 *   as libp2p's connection monitor closes a connection whose pings fail
 *   (ping every 10 s, then an adaptive timeout).
 * - A connection is usable `handshakeRtts` round trips after the dial
 *   (TCP, pnet nonces, noise XX, muxer negotiation, identify). A message in
 *   flight on a connection that closes is lost.
 * - Links listed with `want` are redialled with exponential backoff while
 *   both ends are up, as the node redials its bootstrap peers.
 */
import { DEFAULT_LINK, LinkModel, type Cancel, type LinkConfig, type LinkMode, type LossMode, type Prng, type Scheduler,
  type Lane } from '../../src/mesh/testing/index.js'

export type { LinkMode, LossMode }

export interface NetConfig extends LinkConfig {
  /** Round trips from dial to a connection that carries protocol messages. */
  handshakeRtts: number
  /** A connection across a partition is closed after this long. */
  deadAfterMs: number
  /** Redial backoff: first wait and cap, doubling in between. */
  redialMinMs: number
  redialMaxMs: number
}

export const DEFAULT_NET: Omit<NetConfig, 'latency'> = {
  ...DEFAULT_LINK,
  handshakeRtts: 4,
  deadAfterMs: 15_000,
  redialMinMs: 1_000,
  redialMaxMs: 30_000
}

type Direction = 'inbound' | 'outbound'

/** What the network tells the nodes. */
interface NetEvents {
  connected: (node: number, peer: number, direction: Direction) => void
  disconnected: (node: number, peer: number) => void
}

/** What the network tells the metrics. */
export interface NetStats {
  sent: (from: number, to: number, kind: string, bytes: number) => void
  lost: (from: number, to: number, kind: string, bytes: number, why: 'loss' | 'partition' | 'closed' | 'down') => void
}

interface Conn {
  /** Bumped on every (re)connect, so deliveries of an older connection are dropped. */
  gen: number
  state: 'dialing' | 'open' | 'closed'
  /** Each direction's lane (the link model keeps it first-in first-out): [lo→hi, hi→lo]. */
  lanes: [Lane, Lane]
  deadTimer?: Cancel
}

const key = (a: number, b: number): string => a < b ? `${a}-${b}` : `${b}-${a}`

export class Network {
  private readonly conns = new Map<string, Conn>()
  private readonly adj = new Map<number, Set<number>>()
  private readonly up = new Set<number>()
  private readonly links: LinkModel
  private group = new Map<number, number>()
  private readonly wants = new Map<number, Set<number>>()
  private readonly redialWait = new Map<string, number>()
  private readonly redialPending = new Set<string>()
  private events: NetEvents | undefined

  constructor (
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    readonly cfg: NetConfig,
    private readonly stats: NetStats
  ) {
    this.links = new LinkModel(rng, cfg)
  }

  /** Wires the node-facing callbacks (set once the nodes exist). */
  attach (events: NetEvents): void {
    this.events = events
  }

  isUp (n: number): boolean {
    return this.up.has(n)
  }

  /** Marks a node up (it may dial and be dialled) and dials the links it wants. */
  start (n: number): void {
    this.up.add(n)
    for (const p of this.wants.get(n) ?? []) this.dial(n, p)
    // Others that want a link to n redial at their next backoff step, as real peers do.
  }

  /** Marks a node down: its connections close; peers notice after one link delay (the TCP reset). */
  stop (n: number): void {
    if (!this.up.has(n)) return
    this.up.delete(n)
    // Dials in progress fail at the end of their handshake, which checks both ends.
    for (const p of [...(this.adj.get(n) ?? [])]) this.closeConn(n, p, this.cfg.latency.mean(n, p))
  }

  /** Keeps a connection from `a` to `b` open: dial now, redial with backoff after it closes. */
  want (a: number, b: number): void {
    if (a === b) return
    let s = this.wants.get(a)
    if (s === undefined) this.wants.set(a, s = new Set())
    s.add(b)
    if (this.up.has(a)) this.dial(a, b)
  }

  /** Forgets every link a node wanted (a fresh node with a new bootstrap list). */
  unwantAll (a: number): void {
    this.wants.delete(a)
  }

  connected (a: number, b: number): boolean {
    return this.conns.get(key(a, b))?.state === 'open'
  }

  /** The nodes `n` has an open connection to, ascending. */
  peersOf (n: number): number[] {
    return [...(this.adj.get(n) ?? [])].sort((x, y) => x - y)
  }

  reachable (a: number, b: number): boolean {
    return (this.group.get(a) ?? 0) === (this.group.get(b) ?? 0)
  }

  /** `a` dials `b`: open after the handshake if both are up and reachable, else a redial is scheduled. */
  dial (a: number, b: number): void {
    if (a === b || !this.up.has(a)) return
    const k = key(a, b)
    const c = this.conns.get(k)
    if (c !== undefined && c.state !== 'closed') return
    const conn: Conn = { gen: (c?.gen ?? 0) + 1, state: 'dialing', lanes: [{ last: 0 }, { last: 0 }] }
    this.conns.set(k, conn)
    const rtt = 2 * this.cfg.latency.mean(a, b)
    const gen = conn.gen
    this.sched.after(this.cfg.handshakeRtts * rtt, () => {
      if (conn.gen !== gen || conn.state !== 'dialing') return
      if (!this.up.has(a) || !this.up.has(b) || !this.reachable(a, b)) {
        conn.state = 'closed'
        this.scheduleRedial(a, b)
        return
      }
      conn.state = 'open'
      this.redialWait.delete(k)
      this.link(a, b)
      this.events?.connected(a, b, 'outbound')
      this.events?.connected(b, a, 'inbound')
      if (!this.reachable(a, b)) this.armDead(a, b, conn)
    })
  }

  /**
   * Sends one message; `deliver` runs at the receiver when it arrives. Returns
   * false when there is no open connection (nothing is sent or counted).
   */
  send (from: number, to: number, kind: string, bytes: number, deliver: () => void): boolean {
    const conn = this.conns.get(key(from, to))
    if (conn === undefined || conn.state !== 'open' || !this.up.has(from)) return false
    this.stats.sent(from, to, kind, bytes)
    const t = this.links.transit(this.sched.now, from, to, kind, bytes, { reachable: this.reachable(from, to), lane: conn.lanes[from < to ? 0 : 1] })
    if (t.lost !== undefined) {
      this.stats.lost(from, to, kind, bytes, t.lost)
      return true
    }
    const arrive = t.arrive
    const gen = conn.gen
    this.sched.at(arrive, () => {
      if (conn.gen !== gen || conn.state !== 'open') return this.stats.lost(from, to, kind, bytes, 'closed')
      if (!this.up.has(to)) return this.stats.lost(from, to, kind, bytes, 'down')
      deliver()
    })
    return true
  }

  /** Splits the nodes into groups (each node in at most one; unlisted nodes form group 0). */
  partition (groups: number[][]): void {
    this.group = new Map()
    groups.forEach((g, i) => { for (const n of g) this.group.set(n, i + 1) })
    for (const [k, c] of this.conns) {
      if (c.state !== 'open') continue
      const [a, b] = k.split('-').map(Number)
      if (!this.reachable(a, b)) this.armDead(a, b, c)
    }
  }

  heal (): void {
    this.group = new Map()
    for (const c of this.conns.values()) {
      c.deadTimer?.()
      c.deadTimer = undefined
    }
    // Closed links redial at their next backoff step.
  }

  private armDead (a: number, b: number, c: Conn): void {
    if (c.deadTimer !== undefined) return
    const gen = c.gen
    c.deadTimer = this.sched.after(this.cfg.deadAfterMs, () => {
      c.deadTimer = undefined
      if (c.gen === gen && c.state === 'open' && !this.reachable(a, b)) this.closeConn(a, b, 0)
    })
  }

  private closeConn (a: number, b: number, noticeDelayMs: number): void {
    const k = key(a, b)
    const c = this.conns.get(k)
    if (c === undefined || c.state === 'closed') return
    const wasOpen = c.state === 'open'
    c.state = 'closed'
    c.deadTimer?.()
    c.deadTimer = undefined
    this.unlink(a, b)
    if (wasOpen) {
      // Each side learns of the close: the local side at once, the other after the reset crosses the link.
      for (const [n, p, d] of [[a, b, 0], [b, a, noticeDelayMs]] as const) {
        if (!this.up.has(n)) continue
        this.sched.after(d, () => { if (this.up.has(n)) this.events?.disconnected(n, p) })
      }
    }
    this.scheduleRedial(a, b)
    this.scheduleRedial(b, a)
  }

  private scheduleRedial (a: number, b: number): void {
    if (this.wants.get(a)?.has(b) !== true) return
    const k = `${a}>${b}`
    if (this.redialPending.has(k)) return
    const wait = this.redialWait.get(key(a, b)) ?? this.cfg.redialMinMs
    this.redialWait.set(key(a, b), Math.min(wait * 2, this.cfg.redialMaxMs))
    this.redialPending.add(k)
    this.sched.after(wait * (0.5 + this.rng.next()), () => {
      this.redialPending.delete(k)
      if (this.up.has(a) && this.wants.get(a)?.has(b) === true) {
        if (this.up.has(b)) this.dial(a, b)
        else this.scheduleRedial(a, b)
      }
    })
  }

  private link (a: number, b: number): void {
    for (const [x, y] of [[a, b], [b, a]]) {
      let s = this.adj.get(x)
      if (s === undefined) this.adj.set(x, s = new Set())
      s.add(y)
    }
  }

  private unlink (a: number, b: number): void {
    this.adj.get(a)?.delete(b)
    this.adj.get(b)?.delete(a)
  }
}
