/**
 * The private network (libp2p "pnet", swarm key `/key/swarm/psk/1.0.0/`):
 * each side sends a random 24-byte nonce, then every byte it sends is XORed
 * with the XSalsa20 keystream of (swarm key, its own nonce), and every byte
 * it receives with that of (swarm key, the peer's nonce). A peer without the
 * key reads noise and fails the noise handshake that follows. The same wire
 * protocol as `@libp2p/pnet` (and go-libp2p's pnet): nodes with this
 * protector and nodes with the stock one form one mesh.
 *
 * Why not `@libp2p/pnet` itself: it ciphers with the `xsalsa20` package and
 * never releases its instances, which leak in one shared WebAssembly memory
 * until any peer that can open TCP connections to the p2p port, key or no
 * key, makes the process throw `Maximum memory size exceeded` and exit
 * (docs/mesh.md, "Trust"). Here the cipher (xsalsa20.ts) is owned by the
 * connection and collected with it; its SIMD kernel is one fixed page for
 * the whole process. Received bytes are deciphered in place (the
 * transport's buffers are this layer's alone); sent ones are ciphered
 * straight into the one buffer written, so neither way copies or allocates
 * more than that.
 */
import { InvalidParametersError } from '@libp2p/interface'
import { AbstractMultiaddrConnection, byteStream } from '@libp2p/utils'
import type { AbortOptions, ConnectionProtector, MessageStream, MultiaddrConnection } from '@libp2p/interface'
import type { SendResult } from '@libp2p/utils'
import type { Uint8ArrayList } from 'uint8arraylist'
import { XSALSA20_KEY_BYTES, XSALSA20_NONCE_BYTES, XSalsa20 } from './xsalsa20.js'

interface PrivateNetworkInit {
  /** The swarm key's 32 secret bytes. */
  secret: Uint8Array
  /** Deadline of the nonce exchange when the caller gives no abort signal (ms; pnet's default, 1 s). */
  timeoutMs?: number
}

/** A connection protector factory for libp2p's `connectionProtector` option. */
export function privateNetwork (init: PrivateNetworkInit): () => ConnectionProtector {
  if (init.secret.length !== XSALSA20_KEY_BYTES) throw new InvalidParametersError(`a swarm key holds ${XSALSA20_KEY_BYTES} bytes, got ${init.secret.length}`)
  const secret = init.secret.slice()
  const timeoutMs = init.timeoutMs ?? 1000
  return () => ({
    [Symbol.toStringTag]: 'meta-core/pnet',
    async protect (connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
      const log = connection.log.newScope('pnet')
      const localNonce = crypto.getRandomValues(new Uint8Array(XSALSA20_NONCE_BYTES))
      const signal = options?.signal ?? AbortSignal.timeout(timeoutMs)
      const bytes = byteStream(connection)
      const [remote] = await Promise.all([
        bytes.read({ bytes: XSALSA20_NONCE_BYTES, signal }),
        bytes.write(localNonce, { signal })
      ])
      log('exchanged nonces')
      // The upgrader protects the transport's connection, which has an address (as @libp2p/pnet assumes too).
      const raw = bytes.unwrap() as MultiaddrConnection
      return new PrivateConnection(raw, new XSalsa20(secret, remote.subarray()), new XSalsa20(secret, localNonce))
    }
  })
}

/** The connection above the nonce exchange: XSalsa20 both ways, everything else passed through. */
class PrivateConnection extends AbstractMultiaddrConnection {
  constructor (private readonly raw: MultiaddrConnection, inbound: XSalsa20, private readonly outbound: XSalsa20) {
    super({ remoteAddr: raw.remoteAddr, direction: raw.direction, log: raw.log.newScope('pnet') })
    raw.addEventListener('message', (evt) => {
      // Deciphering cannot fail on bytes, but a throw here would escape to the process (an event
      // listener): whatever goes wrong ends this connection, never the node.
      try {
        // In place: the transport's buffers are handed to this listener alone, and read only through it.
        const data = evt.data
        if (data instanceof Uint8Array) {
          inbound.xorInto(data, data, 0)
        } else {
          for (const buf of data) inbound.xorInto(buf, buf, 0)
        }
        this.onData(data)
      } catch (err) {
        this.abort(err as Error)
      }
    })
    raw.addEventListener('drain', () => { this.onMuxerDrain() })
    raw.addEventListener('close', (evt) => {
      if (evt.error == null) this.onTransportClosed()
      else if (evt.local) this.abort(evt.error)
      else this.onRemoteReset()
    })
  }

  sendData (data: Uint8ArrayList): SendResult {
    // One write of the joined buffers (a header and its payload go out together, as with @libp2p/pnet),
    // ciphered straight into the buffer written: the parts are the layer above's, left as they are.
    const out = Buffer.allocUnsafe(data.byteLength)
    let at = 0
    for (const part of data) {
      this.outbound.xorInto(part, out, at)
      at += part.byteLength
    }
    return { sentBytes: data.byteLength, canSendMore: this.raw.send(out) }
  }

  sendReset (err: Error): void {
    this.raw.abort(err)
  }

  sendPause (): void {
    this.raw.pause()
  }

  sendResume (): void {
    this.raw.resume()
  }

  async sendClose (options?: AbortOptions): Promise<void> {
    await this.raw.close(options)
  }
}
