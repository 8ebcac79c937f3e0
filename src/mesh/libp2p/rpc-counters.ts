/**
 * Gossipsub's own RPC counters, read through its metrics hook: a metrics
 * register that keeps running totals of the few gauges the simulator's
 * real-stack comparison needs (RPCs sent and their bytes, by what they
 * carry) and ignores every other metric. Nothing reaches Prometheus; a node
 * only builds one when asked (`Libp2pMeshInit.countRpcs`).
 */
import type { MetricsRegister } from '@libp2p/gossipsub/metrics'

/** Running totals of gossipsub RPCs this node sent. */
export interface RpcCounts {
  /** RPCs sent (each is one length-prefixed message on a peer's stream). */
  rpcs: number
  /** Their protobuf bytes (without the length prefix and the stream framing below it). */
  bytes: number
  /** Published or forwarded messages the RPCs carried. */
  messages: number
}

const TOTALS: Record<string, keyof RpcCounts> = {
  gossipsub_rpc_sent_count_total: 'rpcs',
  gossipsub_rpc_sent_bytes_total: 'bytes',
  gossipsub_rpc_sent_message_total: 'messages'
}

export function rpcCounter (): { register: MetricsRegister, counts: () => RpcCounts } {
  const totals: RpcCounts = { rpcs: 0, bytes: 0, messages: 0 }
  const noop = (): void => {}
  const gauge = (config: { name: string }): any => {
    const field = TOTALS[config.name]
    // Unlabelled gauges take (value?); the ones kept here are unlabelled, so one argument is the increment.
    const inc = field === undefined ? noop : (value?: number) => { totals[field] += value ?? 1 }
    return { inc, set: noop, addCollect: noop }
  }
  const register = {
    gauge,
    histogram: () => ({ startTimer: () => noop, observe: noop, reset: noop }),
    avgMinMax: () => ({ set: noop })
  } as unknown as MetricsRegister
  return { register, counts: () => ({ ...totals }) }
}
