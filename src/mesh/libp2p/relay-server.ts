/**
 * The relay a reachable member runs for the others (circuit relay v2,
 * `@libp2p/circuit-relay-v2`'s server), with the bounds a shared uplink
 * needs. The stock server either cuts every relayed connection at 128 KiB
 * and two minutes (its default limits: a mesh's pulls and file bytes would
 * never get through) or, with `applyDefaultLimit: false`, relays anything
 * at any rate. Members relay for members without a per-connection cap, and
 * this module bounds the relay as a whole instead:
 *
 * - relayed connections (circuits) at once: `maxCircuits` in all and
 *   `maxCircuitsPerPeer` for any member, as either end (refused through the
 *   connection gater's `denyOutboundRelayedConnection`, so the member is told
 *   `PERMISSION_DENIED` and dials another way);
 * - bytes per second taken in for relaying: `bytesPerSecondPerPeer` from any
 *   one member and `bytesPerSecond` in all (token buckets holding a
 *   second's worth; a stream over its budget is paused, which stops yamux's
 *   window updates, so the sender slows down instead of the relay
 *   buffering: the rate holds over time, after what the window had already
 *   granted, up to 16 MiB a stream on a fast link, has passed);
 * - what waits in the relay: a circuit whose far side is slower than its
 *   near side pauses the near side past HIGH_WATER bytes in flight (the
 *   stock pipe reads on regardless), so the relay holds at most that much
 *   per circuit and direction.
 *
 * Reservations are taken only while the node `serves()` (a member behind
 * NAT that runs the server for an address it may get later, a UPnP mapping,
 * refuses them meanwhile). Only members reach the relay at all: every
 * connection to it is behind the swarm key, and a relayed connection runs
 * the private network end to end on top (docs/mesh.md).
 *
 * How the two streams of a circuit are found: the server is given a facade
 * of libp2p's components whose registrar wraps the hop handler (the source
 * member's stream) in an AsyncLocalStorage context, and whose connection
 * manager wraps the connection the server opens the stop stream on (the
 * destination's stream); the gater's check and that stream are then seen in
 * the context of the hop stream they belong to. No libp2p internals are
 * changed.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { circuitRelayServer, RELAY_V2_HOP_CODEC, RELAY_V2_STOP_CODEC, type CircuitRelayService } from '@libp2p/circuit-relay-v2'
import type { Connection, PeerId, Stream } from '@libp2p/interface'
import type { Logger } from '../../common/index.js'
import type { MeshRelayView } from '../service.js'
import { TokenBucket } from './token-bucket.js'

/** The bounds of a relay (`META_CORE_RELAY_*`). */
export type RelayLimits = MeshRelayView['limits']

export const DEFAULT_RELAY_LIMITS: RelayLimits = {
  maxCircuits: 128,
  maxCircuitsPerPeer: 16,
  bytesPerSecond: 128 * 1024 * 1024,
  bytesPerSecondPerPeer: 64 * 1024 * 1024
}

/** Bytes relayed but not yet sent on, per circuit and direction, before the sending side is paused. */
const HIGH_WATER = 1024 * 1024
/** A paused side resumes once the bytes in flight fell below this. */
const LOW_WATER = 256 * 1024
/**
 * A stream paused by the relay keeps receiving what the sender's yamux
 * window already allowed (up to 16 MiB): it must not be aborted for holding
 * that (libp2p's default read buffer limit is 4 MiB).
 */
const PAUSED_READ_BUFFER = 24 * 1024 * 1024
/** How long a reservation lasts before the member renews it (libp2p's default is 2 h). */
const RESERVATION_TTL_MS = 30 * 60_000

interface HopContext { src: string, stream: Stream, admitted: boolean, circuit: Circuit | undefined }

/** One relayed connection: the source member's hop stream and the destination's stop stream. */
interface Circuit { src: Side, dst: Side }

/** One end of a circuit: the stream the relay reads that end's bytes from. */
interface Side {
  peer: string
  stream: Stream
  /** The other end (set once both exist). */
  other: Side | undefined
  /** Bytes read from this stream, and bytes of them handed to the other end's stream. */
  read: number
  forwarded: number
  throttledUntil: number
  backpressured: boolean
  timer: NodeJS.Timeout | undefined
}

interface PeerState { bucket: TokenBucket, circuits: number, bytesIn: number, bytesOut: number, rate: RateWindow }

export class RelayLimiter {
  private readonly ctx = new AsyncLocalStorage<HopContext>()
  private readonly peers = new Map<string, PeerState>()
  private readonly total: TokenBucket
  private readonly rate = new RateWindow()
  private circuits = 0
  private pending = 0
  private bytesRelayed = 0
  private refusedReservations = 0
  private refusedCircuits = 0
  private throttled = 0
  private service: CircuitRelayService | undefined

  constructor (readonly limits: RelayLimits, private readonly serves: () => boolean, private readonly log: Logger) {
    this.total = new TokenBucket(limits.bytesPerSecond)
  }

  /** The server for libp2p's `services`, bounded by this limiter. */
  server (): (components: Parameters<ReturnType<typeof circuitRelayServer>>[0]) => CircuitRelayService {
    return (components) => {
      const registrar = {
        handle: async (protocol: string, handler: (s: Stream, c: Connection) => void | Promise<void>, opts?: object) => {
          await components.registrar.handle(protocol, async (stream, connection) => {
            await (protocol === RELAY_V2_HOP_CODEC ? this.onHop(stream, connection, handler) : handler(stream, connection))
          }, opts)
        },
        unhandle: async (protocol: string) => { await components.registrar.unhandle(protocol) }
      }
      const connectionManager = {
        getConnections: (peer?: PeerId) => components.connectionManager.getConnections(peer).map(c => this.watchStops(c))
      }
      const connectionGater = {
        denyInboundRelayReservation: (peer: PeerId) => this.denyReservation(peer),
        denyOutboundRelayedConnection: (src: PeerId, dst: PeerId) => this.denyCircuit(src, dst)
      }
      const facade = new Proxy(components, {
        get: (target, p) => p === 'registrar' ? registrar : p === 'connectionManager' ? connectionManager
          : p === 'connectionGater' ? connectionGater : Reflect.get(target, p)
      })
      this.service = circuitRelayServer({
        reservations: { applyDefaultLimit: false, maxReservations: this.limits.maxCircuits, reservationTtl: RESERVATION_TTL_MS },
        maxInboundHopStreams: this.limits.maxCircuitsPerPeer + 4,
        maxOutboundStopStreams: this.limits.maxCircuits
      })(facade)
      return this.service
    }
  }

  view (): MeshRelayView {
    const reserved = new Set<string>()
    this.service?.reservations.forEach((_r, peer) => { reserved.add(peer.toString()) })
    const ids = new Set([...this.peers.keys(), ...reserved])
    const now = Date.now()
    return {
      serving: this.serves(),
      limits: { ...this.limits },
      reservations: reserved.size,
      circuits: this.circuits,
      bytesRelayed: this.bytesRelayed,
      bytesPerSecond: this.rate.perSecond(now),
      refusedReservations: this.refusedReservations,
      refusedCircuits: this.refusedCircuits,
      throttled: this.throttled,
      peers: [...ids].sort().map(peerId => {
        const p = this.peers.get(peerId)
        return { peerId, reserved: reserved.has(peerId), circuits: p?.circuits ?? 0, bytesIn: p?.bytesIn ?? 0, bytesOut: p?.bytesOut ?? 0,
          bytesInPerSecond: p?.rate.perSecond(now) ?? 0 }
      })
    }
  }

  private async onHop (stream: Stream, connection: Connection, handler: (s: Stream, c: Connection) => void | Promise<void>): Promise<void> {
    const ctx: HopContext = { src: connection.remotePeer.toString(), stream, admitted: false, circuit: undefined }
    try {
      await this.ctx.run(ctx, async () => { await handler(stream, connection) })
    } finally {
      // Admitted, and no stop stream came of it (the destination was gone or refused): its place is free again.
      if (ctx.admitted && ctx.circuit === undefined) this.pending--
    }
  }

  private denyReservation (peer: PeerId): boolean {
    if (this.serves()) return false
    this.refusedReservations++
    this.log.debug('relay reservation refused: this node has no address others can dial yet', { peer: peer.toString() })
    return true
  }

  private denyCircuit (src: PeerId, dst: PeerId): boolean {
    const ctx = this.ctx.getStore()
    const [s, d] = [src.toString(), dst.toString()]
    const why = this.circuits + this.pending >= this.limits.maxCircuits
      ? `${this.limits.maxCircuits} relayed connections at once in all`
      : (this.peers.get(s)?.circuits ?? 0) >= this.limits.maxCircuitsPerPeer || (this.peers.get(d)?.circuits ?? 0) >= this.limits.maxCircuitsPerPeer
          ? `${this.limits.maxCircuitsPerPeer} relayed connections at once per member`
          : undefined
    if (why !== undefined || ctx === undefined) {
      this.refusedCircuits++
      this.log.debug('relayed connection refused', { from: s, to: d, why: why ?? 'outside a hop request' })
      return true
    }
    ctx.admitted = true
    this.pending++
    return false
  }

  /** The connection the server opens the destination's stop stream on: that stream is the circuit's other half. */
  private watchStops (conn: Connection): Connection {
    return new Proxy(conn, {
      get: (target, p) => {
        if (p === 'newStream') {
          return async (protocols: string | string[], options?: object) => {
            const stream = await target.newStream(protocols, options)
            const ctx = this.ctx.getStore()
            if (ctx?.admitted === true && ctx.circuit === undefined && stream.protocol === RELAY_V2_STOP_CODEC) {
              ctx.circuit = this.open(ctx.src, ctx.stream, target.remotePeer.toString(), stream)
            }
            return stream
          }
        }
        const v = Reflect.get(target, p, target) as unknown
        return typeof v === 'function' ? v.bind(target) : v
      }
    })
  }

  private open (src: string, srcStream: Stream, dst: string, dstStream: Stream): Circuit {
    this.pending--
    this.circuits++
    const a = this.side(src, srcStream)
    const b = this.side(dst, dstStream)
    a.other = b
    b.other = a
    const c: Circuit = { src: a, dst: b }
    for (const p of [src, dst]) this.peer(p).circuits++
    let closed = false
    const close = (): void => {
      if (closed) return
      closed = true
      this.circuits--
      for (const side of [a, b]) {
        clearTimeout(side.timer)
        const p = this.peers.get(side.peer)
        if (p !== undefined) p.circuits--
      }
    }
    srcStream.addEventListener('close', close)
    dstStream.addEventListener('close', close)
    this.log.debug('relaying', { from: src, to: dst })
    return c
  }

  private side (peer: string, stream: Stream): Side {
    const side: Side = { peer, stream, other: undefined, read: 0, forwarded: 0, throttledUntil: 0, backpressured: false, timer: undefined }
    stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, PAUSED_READ_BUFFER)
    // What this side's stream is given to send is what the other side read and the pipe passed on.
    const send = stream.send.bind(stream)
    stream.send = (data) => {
      const other = side.other
      if (other !== undefined) {
        other.forwarded += data.byteLength
        this.peer(peer).bytesOut += data.byteLength
        if (other.backpressured && other.read - other.forwarded < LOW_WATER) {
          other.backpressured = false
          this.apply(other)
        }
      }
      return send(data)
    }
    stream.addEventListener('message', (evt) => {
      const n = evt.data.byteLength
      const p = this.peer(peer)
      side.read += n
      p.bytesIn += n
      this.bytesRelayed += n
      const now = Date.now()
      p.rate.add(now, n)
      this.rate.add(now, n)
      const wait = Math.max(p.bucket.take(n, now), this.total.take(n, now))
      if (wait > 0) {
        this.throttled++
        side.throttledUntil = Math.max(side.throttledUntil, now + wait)
      }
      if (side.read - side.forwarded > HIGH_WATER) side.backpressured = true
      this.apply(side)
    })
    return side
  }

  /** Pauses a side while it is over its byte budget or its far end lags; resumes it when neither holds. */
  private apply (side: Side): void {
    const s = side.stream
    if (s.readStatus === 'closed' || s.readStatus === 'closing') return
    const now = Date.now()
    const hold = side.backpressured || side.throttledUntil > now
    if (hold && s.readStatus !== 'paused') s.pause()
    else if (!hold && s.readStatus === 'paused') s.resume()
    clearTimeout(side.timer)
    side.timer = undefined
    if (side.throttledUntil > now) {
      side.timer = setTimeout(() => { this.apply(side) }, side.throttledUntil - now)
      side.timer.unref()
    }
  }

  private peer (id: string): PeerState {
    let p = this.peers.get(id)
    if (p === undefined) {
      p = { bucket: new TokenBucket(this.limits.bytesPerSecondPerPeer), circuits: 0, bytesIn: 0, bytesOut: 0, rate: new RateWindow() }
      this.peers.set(id, p)
    }
    return p
  }
}

/** Bytes per second over the last few seconds, in one-second slots. */
class RateWindow {
  private readonly slots = new Map<number, number>()

  add (now: number, n: number): void {
    const s = Math.floor(now / 1000)
    this.slots.set(s, (this.slots.get(s) ?? 0) + n)
    for (const k of this.slots.keys()) if (k < s - 5) this.slots.delete(k)
  }

  /** The mean over the last three whole seconds. */
  perSecond (now: number): number {
    const s = Math.floor(now / 1000)
    let sum = 0
    for (let k = s - 3; k < s; k++) sum += this.slots.get(k) ?? 0
    return Math.round(sum / 3)
  }
}
