/**
 * The merger's decisions (src/search/merge-plan.ts), case by case: which
 * job comes next, whether to run now or after the delay, when a second
 * batch pairs with the first, and how each answer moves the phase.
 */
import { describe, expect, it } from 'vitest'
import {
  hasWork, nextJob, nextStep, phaseAfter, phaseAfterDeath, phaseAtStart, phaseOnBulk, renumberDue, sweepDue,
  type Maintenance, type PlanLimits, type PlanState
} from '../../src/search/merge-plan.js'

const limits: PlanLimits = { batchRoots: 1000, batchesInFlight: 2, renumberAt: 4, sweepMinOrphans: 1000, bucketDocs: 4096 }
const NONE: Maintenance = { phase: 'none' }
const REBUILD: Maintenance = { phase: 'rebuild', cleared: false, after: '', done: 0, total: 10 }
const state = (s: Partial<PlanState> = {}): PlanState => ({
  maintenance: NONE, staged: 0, free: 0, inFlight: [], gen: 5, sentGen: 5, docs: 100_000, orphanDocs: 0, span: 100_000, hurry: false, stopped: false, ...s
})

describe('nextJob', () => {
  it('is nothing with nothing to do', () => {
    expect(nextJob(state(), limits)).toBeUndefined()
    expect(nextStep(state(), limits)).toBe('idle')
    expect(hasWork(state(), limits)).toBe(false)
  })

  it('orders the jobs: clear, batch, rebuild step, renumber step, sweep step', () => {
    expect(nextJob(state({ maintenance: REBUILD, staged: 3, free: 3 }), limits)).toBe('clear')
    expect(nextJob(state({ maintenance: { ...REBUILD, cleared: true }, staged: 3, free: 3 }), limits)).toBe('batch')
    expect(nextJob(state({ maintenance: { ...REBUILD, cleared: true } }), limits)).toBe('rebuild')
    // Span past four times the documents: renumber, before a sweep that is due too.
    const spread = { span: 500_000, orphanDocs: 50_000 }
    expect(nextJob(state(spread), limits)).toBe('renumber')
    expect(nextJob(state({ orphanDocs: 50_000 }), limits)).toBe('sweep')
    // Staged roots come first: no long job starts while any are staged.
    expect(nextJob(state({ ...spread, staged: 1, free: 1 }), limits)).toBe('batch')
  })

  it('pairs only batches, and only when a quarter of a batch is free or someone waits', () => {
    const one = state({ staged: 300, free: 249, inFlight: ['batch'], sentGen: 6 })
    expect(nextJob(one, limits)).toBeUndefined()
    expect(nextStep(one, limits)).toBe('extend')
    expect(nextJob({ ...one, free: 250 }, limits)).toBe('batch')
    expect(nextJob({ ...one, hurry: true }, limits)).toBe('batch')
    expect(nextJob({ ...one, free: 0, hurry: true }, limits)).toBeUndefined()
    // One job at a time when so configured, or beside anything but a batch, or past two batches ahead of the store.
    expect(nextJob({ ...one, free: 500 }, { ...limits, batchesInFlight: 1 })).toBeUndefined()
    expect(nextJob({ ...one, free: 500, inFlight: ['sweep'] }, limits)).toBeUndefined()
    expect(nextJob({ ...one, free: 500, sentGen: 7 }, limits)).toBeUndefined()
    expect(nextJob({ ...one, free: 500, inFlight: ['batch', 'batch'] }, limits)).toBeUndefined()
    expect(nextStep({ ...one, free: 500 }, limits)).toBe('now')
  })
})

describe('nextStep', () => {
  it('waits the delay for a trickle, and runs at once for a quarter of a batch or a waiter', () => {
    expect(nextStep(state({ staged: 249, free: 249 }), limits)).toBe('later')
    expect(nextStep(state({ staged: 250, free: 250 }), limits)).toBe('now')
    expect(nextStep(state({ staged: 1, free: 1, hurry: true }), limits)).toBe('now')
  })

  it('runs long jobs at once', () => {
    expect(nextStep(state({ maintenance: REBUILD }), limits)).toBe('now')
    expect(nextStep(state({ maintenance: { phase: 'sweep' } }), limits)).toBe('now')
    expect(nextStep(state({ orphanDocs: 50_000 }), limits)).toBe('now')
    expect(nextStep(state({ span: 500_000 }), limits)).toBe('now')
  })

  it('does nothing once stopped but what is in flight', () => {
    expect(hasWork(state({ stopped: true, span: 500_000, orphanDocs: 50_000 }), limits)).toBe(false)
    expect(hasWork(state({ stopped: true, inFlight: ['batch'] }), limits)).toBe(true)
  })
})

describe('when the long jobs are due', () => {
  it('renumbers past renumberAt times the documents and four spare buckets', () => {
    expect(renumberDue(state({ docs: 100_000, span: 400_000 }), limits)).toBe(false)
    expect(renumberDue(state({ docs: 100_000, span: 400_001 }), limits)).toBe(true)
    // Few documents: four buckets of slack however few they are.
    expect(renumberDue(state({ docs: 10, span: 4 * 4096 + 10 }), limits)).toBe(false)
    expect(renumberDue(state({ docs: 10, span: 4 * 4096 + 11 }), limits)).toBe(true)
    expect(renumberDue(state({ span: 10_000_000 }), { ...limits, renumberAt: Infinity })).toBe(false)
    // A round under way goes on, unless roots are staged or a rebuild began.
    const round: Maintenance = { phase: 'renumber', moved: 0, most: 10, thenSweep: false }
    expect(renumberDue(state({ maintenance: round }), limits)).toBe(true)
    expect(renumberDue(state({ maintenance: round, staged: 1 }), limits)).toBe(false)
  })

  it('sweeps past sweepMinOrphans orphaned documents that are also a tenth of all', () => {
    expect(sweepDue(state({ docs: 100_000, orphanDocs: 9_999 }), limits)).toBe(false)
    expect(sweepDue(state({ docs: 100_000, orphanDocs: 10_000 }), limits)).toBe(true)
    expect(sweepDue(state({ docs: 5_000, orphanDocs: 999 }), limits)).toBe(false)
    expect(sweepDue(state({ docs: 5_000, orphanDocs: 1_000 }), limits)).toBe(true)
    expect(sweepDue(state({ docs: 5_000, orphanDocs: 1_000, maintenance: REBUILD }), limits)).toBe(false)
  })
})

describe('phases', () => {
  const r = { docs: 100, span: 1000 }

  it('a rebuild: cleared, then steps after the last root, until done', () => {
    let m = phaseAfter(REBUILD, 'clear', r, 4096)
    expect(m).toEqual({ ...REBUILD, cleared: true })
    m = phaseAfter(m, 'rebuild', { ...r, roots: 4, last: 'r4' }, 4096)
    expect(m).toEqual({ phase: 'rebuild', cleared: true, after: 'r4', done: 4, total: 10 })
    expect(phaseAfter(m, 'batch', r, 4096)).toBe(m)
    expect(phaseAfter(m, 'rebuild', { ...r, roots: 6, done: true }, 4096)).toEqual(NONE)
    // A thread that dies does not end a rebuild.
    expect(phaseAfterDeath(m)).toBe(m)
  })

  it('a rebuild following records arriving in bulk: caught up, it waits (no job, idle) instead of ending; a step answered before its clear changes nothing', () => {
    const following: Maintenance = { ...REBUILD, cleared: true, follow: true }
    expect(phaseAfter({ ...REBUILD, follow: true }, 'rebuild', { ...r, roots: 4, last: 'r4' }, 4096)).toEqual({ ...REBUILD, follow: true })
    const caught = phaseAfter(following, 'rebuild', { ...r, roots: 0, done: true }, 4096)
    expect(caught).toEqual({ ...following, caughtUp: true })
    expect(nextJob(state({ maintenance: caught }), limits)).toBeUndefined()
    expect(nextStep(state({ maintenance: caught }), limits)).toBe('idle')
    expect(hasWork(state({ maintenance: caught }), limits)).toBe(false)
    // No renumbering or sweep starts while it waits.
    expect(nextJob(state({ maintenance: caught, span: 500_000, orphanDocs: 50_000 }), limits)).toBeUndefined()
    // Once it no longer follows (the bulk ended), a step that finds none left ends it.
    expect(phaseAfter({ ...following, follow: false }, 'rebuild', { ...r, roots: 0, done: true }, 4096)).toEqual(NONE)
  })

  it('records arriving in bulk behind a rebuild\'s position take it back to just before the first of them', () => {
    const at = (after: string): Maintenance => ({ ...REBUILD, cleared: true, follow: true, after, caughtUp: true })
    // Behind it, or at it: back to a position the next step starts before the first root (and goes on from there).
    const back = phaseOnBulk(at('01K5ZZ'), '01K5AB')
    expect(back).toEqual({ ...at('01K5A'), caughtUp: false })
    expect('01K5AB' > (back as { after: string }).after && `${(back as { after: string }).after}\u0000` <= '01K5AB').toBe(true)
    expect(phaseOnBulk(at('01K5AB'), '01K5AB')).toEqual({ ...at('01K5A'), caughtUp: false })
    // Ahead of it, a rebuild from the first root, or no rebuild: nothing changes.
    expect(phaseOnBulk(at('01K5AB'), '01K5AC')).toEqual(at('01K5AB'))
    expect(phaseOnBulk(at(''), '01K5AB')).toEqual(at(''))
    expect(phaseOnBulk(NONE, '01K5AB')).toBe(NONE)
  })

  it('a renumbering round: until a step moves nothing, the documents have moved, or the span is down', () => {
    const start = phaseAtStart(NONE, 'renumber', 100)
    expect(start).toEqual({ phase: 'renumber', moved: 0, most: 100, thenSweep: false })
    const far = { docs: 100, span: 10_000 }
    const on = phaseAfter(start, 'renumber', { ...far, roots: 40 }, 8)
    expect(on).toEqual({ ...start, moved: 40 })
    expect(phaseAfter(on, 'renumber', { ...far, roots: 0 }, 8)).toEqual(NONE)
    expect(phaseAfter(on, 'renumber', { ...far, roots: 60 }, 8)).toEqual(NONE)
    expect(phaseAfter(on, 'renumber', { docs: 100, span: 200, roots: 10 }, 8)).toEqual(NONE)
    expect(phaseAfter(on, 'renumber', { docs: 100, span: 201, roots: 10 }, 8)).toEqual({ ...start, moved: 50 })
    expect(phaseAfterDeath(on)).toEqual(NONE)
  })

  it('a renumbering round that interrupts a sweep resumes it after', () => {
    const sweep = phaseAtStart(NONE, 'sweep', 100)
    expect(sweep).toEqual({ phase: 'sweep' })
    const round = phaseAtStart(sweep, 'renumber', 100)
    expect(round).toEqual({ phase: 'renumber', moved: 0, most: 100, thenSweep: true })
    // While it runs the sweep still counts as work under way.
    expect(hasWork(state({ maintenance: round, staged: 0 }), limits)).toBe(true)
    expect(phaseAfter(round, 'renumber', { docs: 100, span: 100, roots: 5 }, 8)).toEqual({ phase: 'sweep' })
    expect(phaseAfter(sweep, 'sweep', { ...r, more: true }, 8)).toBe(sweep)
    expect(phaseAfter(sweep, 'sweep', r, 8)).toEqual(NONE)
  })

  it('answers for a phase replaced meanwhile change nothing', () => {
    expect(phaseAfter(REBUILD, 'renumber', { ...r, roots: 3 }, 8)).toBe(REBUILD)
    expect(phaseAfter(REBUILD, 'sweep', r, 8)).toBe(REBUILD)
    expect(phaseAfter(NONE, 'rebuild', { ...r, done: true }, 8)).toBe(NONE)
  })
})
