/**
 * Bytes on the wire of the messages the model sends, so `bytesPerWrite`
 * compares with the real stack. Sizes follow the protobuf encodings of
 * gossipsub's `rpc.proto` (@libp2p/gossipsub 17.1.1, src/message/rpc.proto)
 * and the framing below it:
 * - each gossipsub RPC is varint-length-prefixed on its stream;
 * - yamux puts a 12-byte header on each data frame;
 * - noise adds a 2-byte length and a 16-byte MAC to each transport message;
 * - pnet's XSalsa20 adds nothing per message (its 24-byte nonce is per connection).
 * TCP/IP headers are not counted. A new request stream adds a yamux SYN and
 * FIN, and multistream-select's header and protocol line each way.
 */

/** An Ed25519 peer id as a multihash (identity hash of the protobuf public key). */
const PEER_ID_BYTES = 38
/** StrictSign message ids are `from` multihash ‖ 8-byte seqno. */
export const MSG_ID_BYTES = PEER_ID_BYTES + 8
const SEQNO_BYTES = 8
const SIGNATURE_BYTES = 64
const YAMUX_HEADER = 12
const NOISE_OVERHEAD = 2 + 16

function varintLen (n: number): number {
  let len = 1
  while (n >= 0x80) {
    n = Math.floor(n / 128)
    len++
  }
  return len
}

/** A length-delimited protobuf field: tag, length, body. */
function ld (bodyLen: number): number {
  return 1 + varintLen(bodyLen) + bodyLen
}

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8')

/** One signed message (from, data, seqno, topic, signature; the Ed25519 key is inlined in `from`). */
export function messageBytes (topic: string, dataLen: number): number {
  return ld(PEER_ID_BYTES) + ld(dataLen) + ld(SEQNO_BYTES) + ld(utf8(topic)) + ld(SIGNATURE_BYTES)
}

export interface RpcShape {
  subscriptions?: string[]
  /** Encoded sizes of whole messages (messageBytes). */
  messages?: number[]
  ihave?: Array<{ topic: string, ids: number }>
  iwant?: number
  graft?: string[]
  prune?: string[]
  idontwant?: number
}

/** The RPC's protobuf size. */
export function rpcBytes (r: RpcShape): number {
  let n = 0
  for (const t of r.subscriptions ?? []) n += ld(2 + ld(utf8(t)))
  for (const m of r.messages ?? []) n += ld(m)
  let c = 0
  for (const h of r.ihave ?? []) c += ld(ld(utf8(h.topic)) + h.ids * ld(MSG_ID_BYTES))
  if ((r.iwant ?? 0) > 0) c += ld(r.iwant! * ld(MSG_ID_BYTES))
  for (const t of r.graft ?? []) c += ld(ld(utf8(t)))
  // PRUNE carries the topic and a backoff in seconds (uint64 varint, 60 by default).
  for (const t of r.prune ?? []) c += ld(ld(utf8(t)) + 2)
  if ((r.idontwant ?? 0) > 0) c += ld(r.idontwant! * ld(MSG_ID_BYTES))
  if (c > 0) n += ld(c)
  return n
}

/** Bytes on the wire for one length-prefixed payload on an open stream. */
export function framedBytes (payloadLen: number): number {
  const lp = varintLen(payloadLen) + payloadLen
  return lp + YAMUX_HEADER + NOISE_OVERHEAD
}

/**
 * Bytes on the wire for one request or response of `payloadLen` on a fresh
 * stream: the framed payload, multistream-select (`/multistream/1.0.0\n`
 * and the protocol line, each varint-prefixed), and the yamux SYN or FIN.
 */
export function streamMessageBytes (payloadLen: number, protocol: string): number {
  const mss = (1 + 19) + (1 + utf8(protocol) + 1)
  return framedBytes(payloadLen) + mss + YAMUX_HEADER + NOISE_OVERHEAD
}
