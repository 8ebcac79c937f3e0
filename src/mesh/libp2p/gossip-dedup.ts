/**
 * Gossipsub's fast message id for the mesh topic: what lets a node drop a
 * copy of a frame it already has before checking the copy's signature.
 *
 * Gossipsub checks a message's signature before it looks the message up in
 * its seen cache (the message id is computed from the validated message), so
 * without a fast id every copy is verified. In a mesh of degree D a frame
 * reaches a node up to D times; with five nodes about three copies in four
 * were verified for nothing, and an Ed25519 verification (about 130 µs,
 * most of it importing the key) was the largest single cost of a loaded
 * node's main thread.
 *
 * The fast id is a SHA-256 over every field of the message as it came off the
 * wire (signer, sequence number, topic, data, signature, key), each with its
 * length, and gossipsub caches one only after the message's signature proved
 * valid. So only a byte-identical copy of a message already verified skips
 * verification; a copy that differs anywhere (the same signer and sequence
 * number with other data or another signature) is verified as before,
 * refused, and costs the peer that sent it its score (gossip-scoring.ts).
 */
import { createHash } from 'node:crypto'
import type { RPC } from '@libp2p/gossipsub/message'

const ABSENT = Buffer.from([0xff, 0xff, 0xff, 0xff])

function field (h: ReturnType<typeof createHash>, bytes: Uint8Array | undefined): void {
  if (bytes === undefined) {
    h.update(ABSENT)
    return
  }
  const len = Buffer.allocUnsafe(4)
  len.writeUInt32BE(bytes.byteLength)
  h.update(len)
  h.update(bytes)
}

/** The fast id of a received message: equal for byte-identical messages only. */
export function fastFrameId (msg: RPC.Message): string {
  const h = createHash('sha256')
  field(h, msg.from)
  field(h, msg.seqno)
  field(h, Buffer.from(msg.topic, 'utf8'))
  field(h, msg.data)
  field(h, msg.signature)
  field(h, msg.key)
  return h.digest('base64')
}
