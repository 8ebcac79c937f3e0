/**
 * Digests between peers: a node asks each connected peer for the digest of
 * its replicated range over a stream of its own (one length-prefixed JSON
 * reply, then close), so `GET /api/mesh/digests` and the page compare
 * every peer with this node without anyone typing addresses, and a peer
 * that differs is seen even when its HTTP API is out of reach. The
 * noise-authenticated connection says who answered; only nodes holding the
 * swarm key can connect at all.
 *
 * A digest is a read of the range fingerprints the store keeps as changes
 * commit (records' fingerprints.ts), and the one served to peers is still
 * reused while the store's clock has not moved (every write and every
 * applied remote change moves it), so an answer is never older than the
 * store.
 */
import { lpStream } from '@libp2p/utils'
import type { Libp2p, PeerId } from '@libp2p/interface'
import type { Logger } from '../../common/index.js'
import type { StoreDigest } from '../protocol/index.js'

const DIGEST_PROTOCOL = '/meta-core/digest/1.0.0'
/** A reply is a small JSON object; anything longer is not one. */
const MAX_REPLY_BYTES = 512

/** A peer's answer, or why there is none. */
export type PeerDigestResult = { digest: string, keys: number } | { error: string }

/** Serves this node's digest; `clock` is the store's clock, which moves with every change the digest covers. */
export async function handleDigests (node: Libp2p, digest: () => StoreDigest, clock: () => string, log: Logger, timeoutMs: number): Promise<void> {
  let last: { clock: string, d: StoreDigest } | undefined
  await node.handle(DIGEST_PROTOCOL, async (stream, connection) => {
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      const now = clock()
      if (last === undefined || last.clock !== now) last = { clock: now, d: digest() }
      const lp = lpStream(stream, { maxDataLength: MAX_REPLY_BYTES })
      await lp.write(new TextEncoder().encode(JSON.stringify({ digest: last.d.digest, keys: last.d.keys })), { signal })
      await stream.close({ signal })
    } catch (err) {
      // Costs this stream only: the asking peer shows "no answer" for us.
      log.debug('digest stream failed', { peer: connection.remotePeer.toString(), err })
      stream.abort(err instanceof Error ? err : new Error(String(err)))
    }
  }, { maxInboundStreams: 2, maxOutboundStreams: 2 })
}

/** Asks `peer` for its digest within `timeoutMs`; never throws. */
export async function requestDigest (node: Libp2p, peer: PeerId, timeoutMs: number): Promise<PeerDigestResult> {
  const signal = AbortSignal.timeout(timeoutMs)
  let stream
  try {
    stream = await node.dialProtocol(peer, DIGEST_PROTOCOL, { signal })
  } catch (err) {
    return { error: `no answer (${err instanceof Error ? err.name : String(err)})` }
  }
  try {
    const lp = lpStream(stream, { maxDataLength: MAX_REPLY_BYTES })
    const reply = JSON.parse(new TextDecoder().decode((await lp.read({ signal })).subarray())) as { digest?: unknown, keys?: unknown }
    await stream.close({ signal })
    if (typeof reply.digest !== 'string' || !/^[0-9a-f]{64}$/.test(reply.digest) || !Number.isSafeInteger(reply.keys)) return { error: 'a malformed answer' }
    return { digest: reply.digest, keys: reply.keys as number }
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)))
    return { error: `no answer (${err instanceof Error ? err.name : String(err)})` }
  }
}
