/**
 * What a pull from one peer does next, as pure functions of where it stands
 * and what just happened (peer-sync.ts runs them; test/mesh/sync-plan.test.ts
 * checks them case by case).
 *
 * A peer's sync is in one phase (`SyncPhase`): offline (not connected),
 * waiting for its next round, running a round, or stopped. A round runs one
 * step at a time:
 * - `check`: the whole range's fingerprint against the peer's. Equal: the
 *   round ends (the cursor moves to the head the peer read with it).
 *   Different: the pull follows; the second check in a row that finds the
 *   ranges different marks the round for `repair`: once its pull has caught
 *   up it reconciles, since what still differs is not in the change logs.
 *   A round that knows it is behind (`urgent`: a missed push frame) and a
 *   round with no cursor skip the check.
 * - `pull`: the changes after the cursor, a page per step, until one
 *   reaches the head the peer reported (or moves nothing); a `gap` (the
 *   cursor cannot be served) reconciles.
 * - `copy`: the node's copy of the range (range-copy.ts), served by this
 *   peer among others, once a round, while the store holds nothing or a
 *   copy is under way and we never synced with the peer.
 * - `reconcile`: range-based set reconciliation (reconcile.ts), once a
 *   round; what it moved is followed by the pull from the head the peer
 *   read at its first answer.
 * A failed step (a request failed or was refused, the peer left, our
 * reconciliation gave way to the peer's) ends the round; the next one is
 * at the anti-entropy interval (or the peer's retry hint).
 */

export type Step = 'check' | 'pull' | 'copy' | 'reconcile'

/** A round under way: the step it runs and what it did so far. */
export interface Round {
  step: Step
  /** Started knowing we are behind (a missed push frame): no check. */
  urgent: boolean
  /** Checks in a row, over rounds, that found the ranges different. */
  differing: number
  /** Reconcile once the pull has caught up (a second differing check in a row). */
  repair: boolean
  /** The node's range copy was served this round. */
  copied: boolean
  /** The round reconciled. */
  reconciled: boolean
  /** Pages pulled this round. */
  pages: number
  /** While reconciling: the peer's reconciliation with us runs too, and ours gives way (the smaller id goes on). */
  yielded: boolean
  /** The peer refused a request `busy` and said when to ask again (ms); 0: the anti-entropy interval. */
  retryAfterMs: number
}

/** What runs after a round's requests: another round at once (`again`), or one that goes straight to the pull (`urgent`). */
export type Queued = 'none' | 'again' | 'urgent'

export type SyncPhase =
  | { at: 'offline' }
  | { at: 'waiting' }
  | { at: 'running', round: Round, queued: Queued }
  | { at: 'stopped' }

/** What the sync knows of its peer when it decides. */
export interface Facts {
  /** We hold a cursor into the peer's log (we synced with it before). */
  cursor: boolean
  /** The node's copy of the range is under way, or due (our store holds nothing). */
  copyDue: boolean
}

/** What the step just run came to. */
export type Happened =
  | { step: 'check', equal: boolean }
  | { step: 'pull', gap: false, caughtUp: boolean, moved: boolean }
  | { step: 'pull', gap: true }
  | { step: 'copy', done: boolean }
  | { step: 'reconcile', equal: boolean, copy: boolean }
  /** A request failed or was refused, the peer left or the sync stopped, or our reconciliation gave way. */
  | { failed: true }

/** Why a round ended. */
export type EndWhy = 'equal' | 'caught-up' | 'failed' | 'gap-again' | 'page-limit'

/** The next step of the round, or its end (with the differing checks to carry to the next round). */
export type Next = { round: Round } | { end: EndWhy, differing: number }

/** The first step of a round. `differing`: the checks in a row that found the ranges different so far. */
export function firstStep (urgent: boolean, differing: number, f: Facts): Round {
  const round: Round = { step: 'check', urgent, differing, repair: false, copied: false, reconciled: false, pages: 0, yielded: false, retryAfterMs: 0 }
  if (urgent || !f.cursor) return { ...round, step: stepFor(round, f) }
  return round
}

/** The step that moves data now: the copy (once a round, while it is due and we never synced with the peer), a reconciliation, or the pull. */
function stepFor (r: Round, f: Facts): Step {
  if (!f.cursor && !r.copied && f.copyDue) return 'copy'
  return f.cursor ? 'pull' : 'reconcile'
}

/** To reconcile, once a round; a second call in a round ends it. */
function reconcile (r: Round, differing: number): Next {
  if (r.reconciled) return { end: 'gap-again', differing }
  return { round: { ...r, step: 'reconcile', reconciled: true, yielded: false } }
}

/**
 * The round after a step: what runs next, given what the step came to and
 * the facts as they are now (a copy or a reconciliation may have given us
 * a cursor). `maxPages` bounds the pages of one round.
 */
export function afterStep (r: Round, h: Happened, f: Facts, maxPages: number): Next {
  if ('failed' in h) return { end: 'failed', differing: r.differing }
  switch (h.step) {
    case 'check': {
      if (h.equal) return { end: 'equal', differing: 0 }
      const differing = r.differing + 1
      return { round: { ...r, differing, repair: differing >= 2, step: stepFor(r, f) } }
    }
    case 'pull': {
      if (h.gap) return reconcile(r, r.differing)
      const pages = r.pages + 1
      if (!h.caughtUp && h.moved) return pages >= maxPages ? { end: 'page-limit', differing: r.differing } : { round: { ...r, pages, step: 'pull' } }
      // Caught up, and different at the last two checks: what differs is not in the logs.
      if (h.caughtUp && r.repair && !r.reconciled) return reconcile({ ...r, pages }, r.differing)
      return { end: 'caught-up', differing: r.differing }
    }
    case 'copy': {
      if (!h.done) return { end: 'failed', differing: r.differing }
      const next = { ...r, copied: true }
      const step = stepFor(next, f)
      return step === 'reconcile' ? reconcile(next, r.differing) : { round: { ...next, step } }
    }
    case 'reconcile': {
      // The peer holds far more than we do: the node copies the range (this round serves it), then goes on.
      if (h.copy) return { round: { ...r, step: stepFor(r, f) } }
      if (h.equal) return { end: 'equal', differing: 0 }
      // Keys moved: the changes after the head the peer read at its first answer follow.
      return { round: { ...r, differing: 0, step: 'pull' } }
    }
  }
}

/** What is queued behind a running round after another call (an urgent call wins over a plain one). */
export function queue (q: Queued, urgent: boolean): Queued {
  return urgent || q === 'urgent' ? 'urgent' : 'again'
}

/** The delay before the next round: the peer's retry hint (jittered up to +20 %), else the anti-entropy interval (±25 %). */
export function nextRoundDelay (retryAfterMs: number, antiEntropyMs: number, random: number): number {
  return retryAfterMs > 0 ? Math.round(retryAfterMs * (1 + 0.2 * random)) : Math.round(antiEntropyMs * (0.75 + 0.5 * random))
}
