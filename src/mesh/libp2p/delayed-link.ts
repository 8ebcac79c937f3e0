/**
 * Link latency for nodes on libp2p's in-memory transport: every buffer a
 * connection receives is handed on `latencyMs` after it arrived, buffers in
 * flight overlapping as on a real link, in order. It wraps the connection
 * below the swarm-key protection (pnet), so handshakes and all traffic
 * above pay it, once per direction.
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

class DelayedConnection extends AbstractMultiaddrConnection {
  constructor (private readonly maConn: MultiaddrConnection, delayMs: number) {
    super({ remoteAddr: maConn.remoteAddr, direction: maConn.direction, log: maConn.log.newScope('delay') })
    // Equal delays keep arrival order: Node runs timers of the same duration first in, first out.
    maConn.addEventListener('message', (evt) => {
      const data = evt.data
      setTimeout(() => { this.onData(data) }, delayMs)
    })
    maConn.addEventListener('drain', () => { this.onMuxerDrain() })
    maConn.addEventListener('close', (evt) => {
      // The close travels like the data before it: it must not overtake it.
      setTimeout(() => {
        if (evt.error == null) this.onTransportClosed()
        else if (evt.local) this.abort(evt.error)
        else this.onRemoteReset()
      }, delayMs)
    })
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

/** A connection protector that delays the raw connection, then hands it to `inner` (pnet). */
export function delayedLink<C> (inner: (components: C) => ConnectionProtector, latencyMs: number): (components: C) => ConnectionProtector {
  return (components) => {
    const protector = inner(components)
    return {
      async protect (connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
        // The upgrader protects the transport's raw connection, which has an address.
        if (!('remoteAddr' in connection)) throw new Error('delayed link: expected a transport connection')
        return await protector.protect(new DelayedConnection(connection as MultiaddrConnection, latencyMs), options)
      }
    }
  }
}
