/**
 * The pull request/response protocol over libp2p streams: one stream per
 * request, one length-prefixed request in, one length-prefixed reply out,
 * then both sides close. Messages are at most MAX_MESSAGE_BYTES (1 MiB):
 * larger ones are refused by the length-prefix reader before they are read
 * (and libp2p aborts a stream whose reader falls 4 MiB behind).
 *
 * lpStream's `read()` throws at end of stream rather than returning null,
 * and iterating a stream hangs when the other side closed first, so each
 * side reads exactly one message with a deadline.
 */
import { lpStream } from '@libp2p/utils'
import type { Libp2p, PeerId, Stream, Connection } from '@libp2p/interface'
import { MAX_MESSAGE_BYTES } from '../messages.js'
import type { Logger } from '../../common/index.js'

export const PULL_PROTOCOL = '/meta-core/pull/1.0.0'
/** Concurrent pull streams per connection, each way: pulls are sequential per peer, so a few is plenty. */
const MAX_STREAMS = 8

type RequestHandler = (peer: string, body: Uint8Array) => Promise<Uint8Array>

/** Serves pulls: every request goes to `handler` with the authenticated remote peer id. */
export async function handlePulls (node: Libp2p, handler: RequestHandler, log: Logger, timeoutMs: number): Promise<void> {
  await node.handle(PULL_PROTOCOL, async (stream: Stream, connection: Connection) => {
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
      const req = await lp.read({ signal })
      const reply = await handler(connection.remotePeer.toString(), req.subarray())
      await lp.write(reply, { signal })
      await stream.close({ signal })
    } catch (err) {
      // A broken or oversized request costs that stream only; the peer's pull times out and retries.
      log.debug('pull stream failed', { peer: connection.remotePeer.toString(), err })
      stream.abort(err instanceof Error ? err : new Error(String(err)))
    }
  }, { maxInboundStreams: MAX_STREAMS, maxOutboundStreams: MAX_STREAMS })
}

/** Sends one pull request to `peer` and reads its reply, within `timeoutMs`. */
export async function requestPull (node: Libp2p, peer: PeerId, body: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
  const signal = AbortSignal.timeout(timeoutMs)
  const stream = await node.dialProtocol(peer, PULL_PROTOCOL, { signal })
  try {
    const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
    await lp.write(body, { signal })
    const reply = await lp.read({ signal })
    await stream.close({ signal })
    return reply.subarray()
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)))
    throw err
  }
}
