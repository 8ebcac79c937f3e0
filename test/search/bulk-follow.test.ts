/**
 * The rebuild that follows records arriving in bulk (src/search/bulk-follow.ts)
 * against a merger reduced to its state: how far its steps may go (never
 * past the last root the bulk committed while it follows), and how records
 * arriving behind its position take it back, also when a step in flight
 * answers with a position past them. The same behaviour on a real store,
 * with other writes between the pages: bulk-interleaved.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { BulkFollow } from '../../src/search/bulk-follow.js'
import { phaseAfter, type Maintenance } from '../../src/search/merge-plan.js'
import { ManualClock } from '../helpers/manual-clock.js'

interface Follower { f: BulkFollow, m: () => Maintenance, set: (n: Maintenance) => void, setInFlight: (v: boolean) => void, rebuilds: string[] }

function follower (start: Maintenance): Follower {
  let m = start
  let inFlight = false
  const rebuilds: string[] = []
  const f = new BulkFollow({
    clock: new ManualClock(0),
    log: silentLogger,
    maintenance: () => m,
    setMaintenance: n => { m = n },
    startRebuild: (reason, follow) => {
      rebuilds.push(reason)
      m = { phase: 'rebuild', cleared: false, after: '', done: 0, total: 0, ...(follow ? { follow } : {}) }
      f.rebuildStarted()
    },
    rebuildInFlight: () => inFlight,
    schedule: () => {},
    stopped: () => false
  })
  return { f, m: () => m, set: n => { m = n }, setInFlight: v => { inFlight = v }, rebuilds }
}

const REBUILD: Maintenance = { phase: 'rebuild', cleared: true, after: '', done: 0, total: 0 }
const stepAnswer = { docs: 0, span: 0 }

describe('BulkFollow', () => {
  it('bounds the steps by the last root the bulk committed while it follows, and not once it ended', () => {
    const { f, m, rebuilds } = follower({ phase: 'none' })
    expect(f.upTo).toBeUndefined()
    f.arrived('b00', 'b09')
    expect(rebuilds).toEqual(['records arriving in bulk'])
    expect(m()).toMatchObject({ phase: 'rebuild', follow: true })
    expect(f.upTo).toBe('b09')
    f.arrived('b10', 'b19')
    expect(f.upTo).toBe('b19')
    f.ended(true)
    expect(m()).toMatchObject({ phase: 'rebuild', follow: false })
    expect(f.upTo).toBeUndefined()
  })

  it('takes a rebuild already under way (at open) back before the records that arrive behind its position', () => {
    const { f, m, rebuilds } = follower({ ...REBUILD, after: 'g99', done: 120 })
    f.arrived('b10', 'b19')
    expect(rebuilds).toEqual([])
    expect(m()).toMatchObject({ phase: 'rebuild', follow: true, after: 'b1', caughtUp: false })
    expect(f.upTo).toBe('b19')
  })

  it('takes back the position a step in flight answers with, when records arrived behind it meanwhile', () => {
    // A rebuild at open (not following, no bound) has a step in flight from 'b00' when a page from 'b05' comes (a resumed join).
    const { f, m, set, setInFlight } = follower({ ...REBUILD, after: 'b00' })
    setInFlight(true)
    f.arrived('b05', 'b19')
    setInFlight(false)
    expect(m()).toMatchObject({ after: 'b00', follow: true })
    // The step went on past the page's roots (to other writes' roots): back before the page.
    const answered = phaseAfter(m(), 'rebuild', { ...stepAnswer, roots: 30, last: 'g29' }, 4096)
    expect(answered).toMatchObject({ after: 'g29' })
    expect(f.afterRebuildStep(answered)).toMatchObject({ after: 'b0', caughtUp: false })
    // A step that found none left while records came behind its position (which went back at once): it does not wait.
    set({ ...REBUILD, follow: true, after: 'b09' })
    setInFlight(true)
    f.arrived('b03', 'b19')
    setInFlight(false)
    expect(m()).toMatchObject({ after: 'b0', caughtUp: false })
    const caught = phaseAfter(m(), 'rebuild', { ...stepAnswer, roots: 0, done: true }, 4096)
    expect(caught).toMatchObject({ after: 'b0', caughtUp: true })
    expect(f.afterRebuildStep(caught)).toMatchObject({ after: 'b0', caughtUp: false })
    // Records after its position change nothing; and once taken in, nothing is applied again.
    setInFlight(true)
    f.arrived('b20', 'b29')
    setInFlight(false)
    expect(f.afterRebuildStep({ ...REBUILD, follow: true, after: 'b19', caughtUp: true })).toMatchObject({ after: 'b19', caughtUp: true })
    expect(f.afterRebuildStep({ ...REBUILD, after: 'g29' })).toMatchObject({ after: 'g29' })
  })
})
