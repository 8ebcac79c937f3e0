/**
 * Link latency for nodes on libp2p's in-memory transport: every buffer a
 * connection receives is handed on after a delay, buffers in flight
 * overlapping as on a real link, never out of order. It wraps the
 * connection below the swarm-key protection (pnet), so handshakes and all
 * traffic above pay it, once per direction.
 *
 * The delay is `latencyMs` for every buffer, or what a `LinkControl` says
 * for each one (the simulator's real-stack mode: a region matrix, jitter,
 * loss as retransmission delays, bandwidth, partitions). While the control
 * says a buffer cannot cross (a partition), it and every buffer behind it
 * on that connection wait, as TCP holds a stream across a cut and resends
 * once it heals; libp2p's connection monitor closes a connection whose
 * pings stay unanswered, as it would on a real network.
 *
 * Why not the transport's own `latency` option: it delays each buffer
 * after the previous one was handed on, so a connection carries at most
 * 1000 / latency buffers per second each way (10 at 100 ms), far below what
 * a mesh under load sends; queues then grow without bound and the delay
 * measured is that queue, not the link. For tests and the simulator's
 * real-stack mode only; a node never uses it.
 */
import { AbstractMultiaddrConnection } from '@libp2p/utils'
import type { AbortOptions, ConnectionProtector, MessageStream, MultiaddrConnection } from '@libp2p/interface'
import type { SendResult } from '@libp2p/utils'
import type { Uint8ArrayList } from 'uint8arraylist'

/** Decides each buffer's delay between two nodes (by peer id); the simulator's real-stack mode gives one. */
export interface LinkControl {
  /** The delay (ms) of one buffer of `bytes` from `from` to `to` sent now, or null while it cannot cross (it waits, and is asked again after a change). */
  delayMs: (from: string, to: string, bytes: number) => number | null
  /** Calls `listener` when buffers that could not cross may now (a partition healed); returns the unsubscribe function. */
  onChange: (listener: () => void) => () => void
}

type Item = { data: Uint8Array | Uint8ArrayList, at?: number } | { close: () => void, at?: number }

class DelayedConnection extends AbstractMultiaddrConnection {
  /** Buffers and the close, in arrival order; `at` is when each is handed on (unset: waiting for the link). */
  private readonly queue: Item[] = []
  private last = 0
  /** Items in the queue still waiting for the link to let them cross. */
  private waiting = 0
  private timer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined

  constructor (private readonly maConn: MultiaddrConnection, private readonly delay: (bytes: number) => number | null, control?: LinkControl) {
    super({ remoteAddr: maConn.remoteAddr, direction: maConn.direction, log: maConn.log.newScope('delay') })
    maConn.addEventListener('message', (evt) => { this.enqueue({ data: evt.data }, evt.data.byteLength) })
    maConn.addEventListener('drain', () => { this.onMuxerDrain() })
    maConn.addEventListener('close', (evt) => {
      // The close travels like the data before it: it must not overtake it.
      this.enqueue({
        close: () => {
          this.unsubscribe?.()
          if (evt.error == null) this.onTransportClosed()
          else if (evt.local) this.abort(evt.error)
          else this.onRemoteReset()
        }
      }, 0)
    })
    this.unsubscribe = control?.onChange(() => { this.schedule() })
  }

  private enqueue (item: Item, bytes: number): void {
    // Behind a waiting buffer everything waits: the link is first in, first out.
    if (this.waiting > 0 || !this.place(item, bytes)) this.waiting++
    this.queue.push(item)
    this.pump()
  }

  /** Sets when `item` is handed on, if the link lets it cross now. */
  private place (item: Item, bytes: number): boolean {
    const d = this.delay(bytes)
    if (d === null) return false
    item.at = Math.max(performance.now() + d, this.last)
    this.last = item.at
    return true
  }

  /** After a change of the link: the waiting buffers that may cross now get their times. */
  private schedule (): void {
    if (this.waiting === 0) return
    for (const item of this.queue) {
      if (item.at !== undefined) continue
      if (!this.place(item, 'data' in item ? item.data.byteLength : 0)) break
      this.waiting--
    }
    this.pump()
  }

  private pump (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    const now = performance.now()
    while (this.queue.length > 0) {
      const head = this.queue[0]
      if (head.at === undefined) return
      if (head.at > now) {
        this.timer = setTimeout(() => { this.pump() }, head.at - now)
        return
      }
      this.queue.shift()
      if ('data' in head) this.onData(head.data)
      else head.close()
    }
  }

  sendData (data: Uint8ArrayList): SendResult {
    return { sentBytes: data.byteLength, canSendMore: this.maConn.send(data) }
  }

  sendReset (err: Error): void {
    this.maConn.abort(err)
  }

  sendPause (): void {
    this.maConn.pause()
  }

  sendResume (): void {
    this.maConn.resume()
  }

  async sendClose (options?: AbortOptions): Promise<void> {
    await this.maConn.close(options)
  }
}

/** The peer id at the far end of an in-memory connection (its remote address ends in /p2p/<id> either way round). */
function remotePeer (maConn: MultiaddrConnection): string {
  const a = maConn.remoteAddr.toString()
  const i = a.lastIndexOf('/p2p/')
  return i < 0 ? a : a.slice(i + 5)
}

/**
 * A connection protector that delays the raw connection, then hands it to
 * `inner` (pnet): by `latencyMs`, or by what `control` says for buffers from
 * the remote peer to `self`.
 */
export function delayedLink<C> (inner: (components: C) => ConnectionProtector, latencyMs: number,
  control?: { self: string, link: LinkControl }): (components: C) => ConnectionProtector {
  return (components) => {
    const protector = inner(components)
    return {
      async protect (connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
        // The upgrader protects the transport's raw connection, which has an address.
        if (!('remoteAddr' in connection)) throw new Error('delayed link: expected a transport connection')
        const maConn = connection as MultiaddrConnection
        const from = remotePeer(maConn)
        const delay = control === undefined ? () => latencyMs : (bytes: number) => control.link.delayMs(from, control.self, bytes)
        return await protector.protect(new DelayedConnection(maConn, delay, control?.link), options)
      }
    }
  }
}
