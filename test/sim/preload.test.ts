/**
 * `--preload`: every store starts with the same library (authored once
 * through the records API, copied into each store), the mesh in sync (no
 * node resyncs a preloaded peer), and a fresh node joining it must receive
 * all of it before its catch-up is done.
 */
import { describe, expect, it } from 'vitest'
import { runScenario, type SimOptions } from '../../sim/index.js'
import { preloadImage } from '../../sim/preload.js'
import { KvStore } from '../../src/kv/index.js'
import { RecordStore } from '../../src/records/index.js'

const SHORT: Partial<SimOptions> = { nodes: [5], warmup: 3, duration: 4, tail: 8, rate: 20, seed: 'preload', profile: 'library' }

describe('preload', () => {
  it('authors library-shaped records once, readable from a copy of the image', async () => {
    const a = await preloadImage(50, 'library', Date.UTC(2025, 0, 1), 24)
    expect(await preloadImage(50, 'library', Date.UTC(2025, 0, 1), 24)).toBe(a) // a sweep reuses it
    expect(a.cids).toHaveLength(50)
    const kv = new KvStore({ path: ':memory:', image: a.image, backgroundCheckpoint: false })
    try {
      const records = new RecordStore(kv, { nodeId: 'reader' })
      expect(records.countRecords()).toBe(50)
      const doc = records.getFlat(a.cids[7])
      expect(Object.keys(doc ?? {}).length).toBeGreaterThan(30) // the library shape: about 40 fields
      expect(doc?.imdbid).toMatch(/^tt\d{7}$/)
    } finally {
      kv.close()
    }
  })

  it('starts every node in sync: no resync between preloaded peers, and the load updates preloaded records', async () => {
    const { report } = await runScenario({ ...SHORT, scenario: 'baseline', preload: 300, recordShape: 'library' })
    const head = report.runs[0]
    expect(head.failures).toEqual([])
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
    expect(head.messages.byKind['snap-request']).toBeUndefined()
    // Pulls carried only what the load wrote, not the library again.
    expect(head.messages.byKind['pull-reply']?.bytes ?? 0).toBeLessThan(300 * 1000)
    expect(report.options.preload).toBe(300)
  })

  it('fresh-join: the joiner catches up on the preloaded records as well as the writes', async () => {
    const { report } = await runScenario({ ...SHORT, scenario: 'fresh-join', joinAt: 2, preload: 400, recordShape: 'library' })
    const c = report.runs[0].catchUp[0]
    expect(report.converged).toBe(true)
    expect(c.records?.target).toBeGreaterThanOrEqual(400)
    expect(c.records?.got).toBe(c.records?.target)
    expect(c.timeMs).not.toBeNull()
    expect(c.bytes).toBeGreaterThan(400 * 1000) // ≈ 2 KB of fields per library record
  })
  it('fresh-join: a run whose joiner is still catching up when its tail ends goes on until it has caught up and the nodes agree', async () => {
    const { report } = await runScenario({ ...SHORT, scenario: 'fresh-join', joinAt: 3, tail: 0, preload: 400, recordShape: 'library' })
    const run = report.runs[0]
    const c = run.catchUp[0]
    const end = (SHORT.warmup! + SHORT.duration!) * 1000
    expect(c.startAtMs + (c.timeMs ?? Infinity)).toBeGreaterThan(end) // the join finished past the tail's end…
    expect(c.records?.got).toBe(c.records?.target) // …and is in the report
    expect(run.virtualMs).toBeGreaterThan(end)
    expect(report.converged).toBe(true)
  })
})
