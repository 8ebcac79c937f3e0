/**
 * When a node copies a peer's range rather than reconcile with it (docs/mesh.md,
 * "Resync: the range copy"): a peer whose first reconciliation reply says it
 * holds far more than this node. The claim is only a peer's word: the copy
 * (range-copy.ts) goes on only while the pages bear it out.
 */
import type { ReconReplyMessage } from '../messages.js'
import type { ReplicaStore } from './runtime.js'

/** What a peer's first reply said it holds, against what this node holds: the grounds of a copy (range-copy.ts checks its pages bear it out). */
export interface CopyClaim {
  /** Roots the peer's reply counts. */
  roots: number
  /** Roots this node held then. */
  ours: number
}

/** A copy of the range rather than a reconciliation: the peer holds at least this many times our roots… */
export const COPY_RATIO = 4
/** …and at least this many more (below it a reconciliation costs little whatever the ratio). */
export const COPY_MIN_ROOTS = 1_000

/** A store of `theirs` roots holds enough more than one of `ours` that copying its range beats reconciling with it. */
export function worthCopying (theirs: number, ours: number): boolean {
  return theirs >= ours * COPY_RATIO && theirs - ours >= COPY_MIN_ROOTS
}

/** The first reply (to the whole range's fingerprint) says the peer holds COPY_RATIO times our roots and COPY_MIN_ROOTS more: what it claims. */
export function copyRather (store: ReplicaStore, reply: ReconReplyMessage): CopyClaim | undefined {
  if (reply.ranges.some(r => r.p.length !== 1)) return undefined
  const theirs = reply.ranges.reduce((n, r) => n + ('fp' in r ? r.n : r.items.length), 0)
  const ours = store.rangeFingerprint('').roots
  return worthCopying(theirs, ours) ? { roots: theirs, ours } : undefined
}
