/**
 * What the parts of the record layer share: the kv below, this node's id
 * and clock, the id minter and the one mutation path. Versions for local
 * writes are issued here, with the clock persisted in the same transaction.
 */
import type { Logger } from '../common/index.js'
import type { KvStore, Tx } from '../kv/index.js'
import { ClockOutOfBoundError, type ClockGate } from './clock-gate.js'
import type { Hlc } from './hlc.js'
import { HLC_KEY } from './layout.js'
import type { Mutator } from './mutation.js'
import type { RecordId } from './record-id.js'
import { makeVersion, type Version } from './versions.js'

export interface RecordContext {
  kv: KvStore
  nodeId: string
  hlc: Hlc
  mutator: Mutator
  /** Wall clock in ms. */
  now: () => number
  mintId: (now: number) => RecordId
  log: Logger
  /**
   * Queues a write function (kv.write), after waiting while an indexer's
   * deferred work is at its bound: every record write goes through here.
   */
  write: <T>(fn: (tx: Tx) => T) => Promise<T>
  /** Asked before every local version is issued (clock-gate.ts); unset: always allowed. */
  clockGate: ClockGate | undefined
}

/** Issues a version for a local write and persists the clock in the same transaction, so a restart never goes back. */
export function issueVersion (ctx: RecordContext, tx: Tx): Version {
  // Inside the write function: a refusal rolls back this write alone (the group commit's savepoints).
  const refusal = ctx.clockGate?.()
  if (refusal !== undefined) throw new ClockOutOfBoundError(refusal)
  const v = makeVersion(ctx.hlc.now(), ctx.nodeId)
  persistHlc(ctx, tx)
  return v
}

export function persistHlc (ctx: RecordContext, tx: Tx): void {
  tx.put(HLC_KEY, ctx.hlc.last())
}
