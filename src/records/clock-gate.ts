/**
 * The check every local version passes before it is issued. The mesh
 * installs it (its clock bound, after CockroachDB's max-offset rule): a node
 * whose clock is out of bound against most of the peers it measures must
 * not mint versions those peers would refuse, so its local writes fail with
 * `ClockOutOfBoundError` (the API answers 503, retryable) until the clock is
 * back in bound. A store with no gate (a node alone) writes as it always did.
 */
import { MetaCoreError } from '../common/index.js'

export interface ClockRefusal {
  /** Why, for a person: which clock is off and by how much. */
  message: string
  /** This node's clock against its peers' (ms, positive: ahead), the median of those it measures. */
  offsetMs: number
}

/** Undefined when a local version may be issued now. Called inside write transactions: must be cheap and must not throw. */
export type ClockGate = () => ClockRefusal | undefined

/** A local write refused while this node's clock is out of bound (retryable: it passes once the clock is back). */
export class ClockOutOfBoundError extends MetaCoreError {
  readonly offsetMs: number
  constructor (r: ClockRefusal) {
    super('clock_out_of_bound', r.message)
    this.offsetMs = r.offsetMs
  }
}
