/**
 * What the modelled gossipsub routers send each other: the message, the RPC
 * (subscriptions, messages and the control parts), the kinds the report
 * counts, and an RPC's size on the wire (wire-size.ts).
 */
import { framedBytes, rpcBytes, type RpcShape } from './wire-size.js'

export type Verdict = 'accept' | 'reject' | 'ignore'

export interface GossipMessage {
  /** Unique in the run (the real id is `from` ‖ seqno). */
  readonly id: number
  /** Index of the signing node (StrictSign: relays cannot change it). */
  readonly from: number
  readonly topic: string
  readonly data: Uint8Array
  /** Encoded size of the message inside an RPC. */
  readonly encodedBytes: number
  /** Virtual time of publication (for the metrics). */
  readonly publishedAt: number
}

export interface Rpc {
  subscriptions?: string[]
  messages?: GossipMessage[]
  ihave?: Array<{ topic: string, ids: number[] }>
  iwant?: number[]
  graft?: string[]
  prune?: string[]
  idontwant?: number[]
}

/** Network message kinds, for the per-kind counts in the report. */
export type RpcKind = 'publish' | 'forward' | 'iwant-reply' | 'ihave' | 'iwant' | 'idontwant' | 'graft' | 'prune' | 'subscribe'

/** An RPC's bytes on the wire: its protobuf encoding plus stream framing. */
export function rpcSize (rpc: Rpc): number {
  return framedBytes(rpcBytes(shapeOf(rpc)))
}

function shapeOf (rpc: Rpc): RpcShape {
  const s: RpcShape = {}
  if (rpc.subscriptions !== undefined) s.subscriptions = rpc.subscriptions
  if (rpc.messages !== undefined) s.messages = rpc.messages.map(m => m.encodedBytes)
  if (rpc.ihave !== undefined) s.ihave = rpc.ihave.map(h => ({ topic: h.topic, ids: h.ids.length }))
  if (rpc.iwant !== undefined) s.iwant = rpc.iwant.length
  if (rpc.graft !== undefined) s.graft = rpc.graft
  if (rpc.prune !== undefined) s.prune = rpc.prune
  if (rpc.idontwant !== undefined) s.idontwant = rpc.idontwant.length
  return s
}
