/**
 * A TCP relay on 127.0.0.1 that counts the bytes of every connection
 * through it, each way: put between two nodes (one bootstraps to the relay's
 * port with the other's peer id), it measures what they exchange on the wire
 * (private network, noise, yamux, gossipsub, identify and the mesh's own
 * protocols), whatever the nodes themselves count.
 *
 * While closed, the relay accepts connections and holds them, keeping what
 * they send; `open` connects them to the target then (what they sent goes
 * first), so the moment two nodes meet is the bench's to choose. A node's
 * dial waits up to 6 s for its handshake; past that it gives up (the relay
 * drops the connection) and dials again, and the relay holds the new one.
 */
import net from 'node:net'

export class TcpMeter {
  /** Bytes from the connecting side to the target, and back. */
  toTarget = 0
  fromTarget = 0
  connections = 0
  /** performance.now() when the first connection after `open` (or the last `reset`) reached the target. */
  firstConnectedAt: number | null = null
  private gated = true
  /** Connections held while closed, with what they sent meanwhile. */
  private readonly held = new Map<net.Socket, Buffer[]>()
  private readonly live = new Set<net.Socket>()
  private readonly server = net.createServer(s => { this.accept(s) })

  constructor (private target: number) {}

  /** Listens on 127.0.0.1 (a free port) and returns the port. */
  async listen (): Promise<number> {
    await new Promise<void>(resolve => { this.server.listen(0, '127.0.0.1', resolve) })
    return (this.server.address() as net.AddressInfo).port
  }

  /** The port connections go to from now on (a restarted node listens on a new one). */
  retarget (port: number): void { this.target = port }

  open (): void {
    this.gated = false
    const held = [...this.held]
    this.held.clear()
    for (const [s, sent] of held) this.relay(s, sent)
  }

  close (): void { this.gated = true }

  /** Counters to zero and every connection through the relay cut. */
  reset (): void {
    for (const s of [...this.held.keys(), ...this.live]) s.destroy()
    this.held.clear()
    this.live.clear()
    this.toTarget = 0
    this.fromTarget = 0
    this.connections = 0
    this.firstConnectedAt = null
  }

  async stop (): Promise<void> {
    this.reset()
    await new Promise<void>(resolve => { this.server.close(() => { resolve() }) })
  }

  get bytes (): number { return this.toTarget + this.fromTarget }

  /** Bytes the connections held while closed have sent, kept until `open` relays them. */
  get heldBytes (): number {
    let n = 0
    for (const sent of this.held.values()) for (const b of sent) n += b.length
    return n
  }

  private accept (s: net.Socket): void {
    s.on('error', () => { s.destroy() })
    s.once('close', () => { this.held.delete(s) })
    if (!this.gated) {
      this.relay(s, [])
      return
    }
    const sent: Buffer[] = []
    const keep = (b: Buffer): void => { sent.push(b) }
    s.on('data', keep)
    // The node gave up on this connection while it was held: nothing to relay.
    s.once('end', () => { if (this.held.delete(s)) s.destroy() })
    this.held.set(s, sent)
    // Relayed, the connection's data goes through pipe() instead.
    s.once('relayed', () => { s.off('data', keep) })
  }

  private relay (s: net.Socket, sent: Buffer[]): void {
    if (s.destroyed) return
    s.emit('relayed')
    s.pause()
    const up = net.connect(this.target, '127.0.0.1')
    this.live.add(s)
    this.live.add(up)
    const done = (): void => {
      s.destroy()
      up.destroy()
      this.live.delete(s)
      this.live.delete(up)
    }
    up.on('error', done)
    up.once('close', done)
    s.once('close', done)
    up.once('connect', () => {
      this.connections++
      this.firstConnectedAt ??= performance.now()
      for (const b of sent) {
        this.toTarget += b.length
        up.write(b)
      }
      pipe(s, up, n => { this.toTarget += n })
      pipe(up, s, n => { this.fromTarget += n })
    })
  }
}

/** Copies `from` into `to`, counting, with backpressure. */
function pipe (from: net.Socket, to: net.Socket, count: (n: number) => void): void {
  from.on('data', (b: Buffer) => {
    count(b.length)
    if (!to.write(b)) from.pause()
  })
  to.on('drain', () => { from.resume() })
  from.once('end', () => { to.end() })
  from.resume()
}
