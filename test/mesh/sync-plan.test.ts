/**
 * The pull's decisions (src/mesh/protocol/sync-plan.ts), case by case: the
 * first step of a round, the step after each outcome, what queues behind a
 * running round, and when the next round runs.
 */
import { describe, expect, it } from 'vitest'
import { afterStep, firstStep, nextRoundDelay, queue, type Facts, type Round } from '../../src/mesh/protocol/sync-plan.js'

const SYNCED: Facts = { cursor: true, copyDue: false }
const NEVER: Facts = { cursor: false, copyDue: false }
const EMPTY: Facts = { cursor: false, copyDue: true }
const MAX = 100
const round = (r: Partial<Round> = {}): Round => ({
  step: 'check', urgent: false, differing: 0, repair: false, copied: false, reconciled: false, pages: 0, yielded: false, retryAfterMs: 0, ...r
})

describe('firstStep', () => {
  it('checks the fingerprints first with a peer it synced with', () => {
    expect(firstStep(false, 0, SYNCED)).toEqual(round())
    expect(firstStep(false, 1, SYNCED)).toEqual(round({ differing: 1 }))
  })

  it('goes straight to the pull when it knows it is behind (a missed frame)', () => {
    expect(firstStep(true, 0, SYNCED)).toMatchObject({ step: 'pull', urgent: true })
  })

  it('copies the range with a peer it never synced with while the copy is due, else reconciles', () => {
    expect(firstStep(false, 0, EMPTY).step).toBe('copy')
    expect(firstStep(true, 0, EMPTY).step).toBe('copy')
    expect(firstStep(false, 0, NEVER).step).toBe('reconcile')
  })
})

describe('afterStep', () => {
  it('ends on an equal check, forgetting the differing checks', () => {
    expect(afterStep(round({ differing: 1 }), { step: 'check', equal: true }, SYNCED, MAX)).toEqual({ end: 'equal', differing: 0 })
  })

  it('pulls after a differing check, and marks the second in a row for repair', () => {
    const one = afterStep(round(), { step: 'check', equal: false }, SYNCED, MAX)
    expect(one).toEqual({ round: round({ step: 'pull', differing: 1 }) })
    const two = afterStep(round({ differing: 1 }), { step: 'check', equal: false }, SYNCED, MAX)
    expect(two).toEqual({ round: round({ step: 'pull', differing: 2, repair: true }) })
  })

  it('pulls page after page while they move and the head is not reached, up to the page limit', () => {
    const r = round({ step: 'pull', pages: 3 })
    expect(afterStep(r, { step: 'pull', gap: false, caughtUp: false, moved: true }, SYNCED, MAX)).toEqual({ round: { ...r, pages: 4 } })
    expect(afterStep(r, { step: 'pull', gap: false, caughtUp: false, moved: true }, SYNCED, 4)).toEqual({ end: 'page-limit', differing: 0 })
  })

  it('ends once caught up, or when a page moved nothing', () => {
    const r = round({ step: 'pull', differing: 1 })
    expect(afterStep(r, { step: 'pull', gap: false, caughtUp: true, moved: true }, SYNCED, MAX)).toEqual({ end: 'caught-up', differing: 1 })
    expect(afterStep(r, { step: 'pull', gap: false, caughtUp: false, moved: false }, SYNCED, MAX)).toEqual({ end: 'caught-up', differing: 1 })
  })

  it('reconciles once caught up when the round is marked for repair, and only once a round', () => {
    const r = round({ step: 'pull', differing: 2, repair: true })
    expect(afterStep(r, { step: 'pull', gap: false, caughtUp: true, moved: true }, SYNCED, MAX))
      .toEqual({ round: { ...r, step: 'reconcile', reconciled: true, pages: 1 } })
    // Not caught up: no repair yet (what differs may still be in the log).
    expect(afterStep(r, { step: 'pull', gap: false, caughtUp: false, moved: false }, SYNCED, MAX)).toEqual({ end: 'caught-up', differing: 2 })
    expect(afterStep({ ...r, reconciled: true }, { step: 'pull', gap: false, caughtUp: true, moved: true }, SYNCED, MAX))
      .toEqual({ end: 'caught-up', differing: 2 })
  })

  it('reconciles on a gap, and a gap right after a reconciliation waits for the next round', () => {
    const r = round({ step: 'pull' })
    expect(afterStep(r, { step: 'pull', gap: true }, SYNCED, MAX)).toEqual({ round: { ...r, step: 'reconcile', reconciled: true } })
    expect(afterStep({ ...r, reconciled: true }, { step: 'pull', gap: true }, SYNCED, MAX)).toEqual({ end: 'gap-again', differing: 0 })
  })

  it('after the copy, pulls from the head the serving peer read, or reconciles with the others', () => {
    const r = round({ step: 'copy' })
    expect(afterStep(r, { step: 'copy', done: true }, SYNCED, MAX)).toEqual({ round: { ...r, step: 'pull', copied: true } })
    expect(afterStep(r, { step: 'copy', done: true }, NEVER, MAX)).toEqual({ round: { ...r, step: 'reconcile', copied: true, reconciled: true } })
    // Still due (the copy is under way) but served once this round: no second copy step.
    expect(afterStep(r, { step: 'copy', done: true }, EMPTY, MAX)).toEqual({ round: { ...r, step: 'reconcile', copied: true, reconciled: true } })
    expect(afterStep(r, { step: 'copy', done: false }, EMPTY, MAX)).toEqual({ end: 'failed', differing: 0 })
  })

  it('after a reconciliation: equal ends, moved keys are followed by the pull, a peer holding far more starts the copy', () => {
    const r = round({ step: 'reconcile', reconciled: true, differing: 2, repair: true })
    expect(afterStep(r, { step: 'reconcile', equal: true, copy: false }, SYNCED, MAX)).toEqual({ end: 'equal', differing: 0 })
    expect(afterStep(r, { step: 'reconcile', equal: false, copy: false }, SYNCED, MAX)).toEqual({ round: { ...r, step: 'pull', differing: 0 } })
    expect(afterStep(round({ step: 'reconcile', reconciled: true }), { step: 'reconcile', equal: false, copy: true }, EMPTY, MAX))
      .toEqual({ round: round({ step: 'copy', reconciled: true }) })
  })

  it('a copy a reconciliation started, once in, leaves no second reconciliation in the round', () => {
    const r = round({ step: 'copy', reconciled: true })
    expect(afterStep(r, { step: 'copy', done: true }, NEVER, MAX)).toEqual({ end: 'gap-again', differing: 0 })
  })

  it('ends on a failure, keeping the differing checks', () => {
    for (const step of ['check', 'pull', 'copy', 'reconcile'] as const) {
      expect(afterStep(round({ step, differing: 1 }), { failed: true }, SYNCED, MAX)).toEqual({ end: 'failed', differing: 1 })
    }
  })
})

describe('between rounds', () => {
  it('queues one more round behind a running one, urgent when any call was', () => {
    expect(queue('none', false)).toBe('again')
    expect(queue('none', true)).toBe('urgent')
    expect(queue('again', true)).toBe('urgent')
    expect(queue('urgent', false)).toBe('urgent')
  })

  it('runs the next round at the peer\'s busy hint, else at the anti-entropy interval, jittered', () => {
    expect(nextRoundDelay(5_000, 15_000, 0)).toBe(5_000)
    expect(nextRoundDelay(5_000, 15_000, 0.999)).toBe(5_999)
    expect(nextRoundDelay(0, 15_000, 0)).toBe(11_250)
    expect(nextRoundDelay(0, 15_000, 0.999)).toBe(18_743)
  })
})
