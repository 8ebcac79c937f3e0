/**
 * Two batches at the index writer at once: while the writer indexes one,
 * the next waits behind it, and roots staged meanwhile join the waiting
 * one until the writer starts it. The staged set's bookkeeping, the
 * thread's side of that protocol, and the whole under a batch apply with
 * records rewritten while their batch is in flight.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { formatHlc, newRecordId, openNodeStore, type NodeStore, type RemoteEntry } from '../../src/records/index.js'
import { IndexWorker, type WorkerInit } from '../../src/search/index-worker-client.js'
import { makeExcluder } from '../../src/search/matchers.js'
import { PendingRoots } from '../../src/search/pending-roots.js'
import { DEFAULT_BUCKET_SHIFT, INDEX_SCHEMA, ensureStoreSchema, indexFileOf, versionMarker } from '../../src/search/search-schema.js'
import { tmpDir } from '../helpers/tmp.js'
import { openFixture, type Fixture } from './fixture.js'

let cleanup: (() => Promise<void> | void) | undefined
afterEach(async () => { await cleanup?.(); cleanup = undefined })

/** A peer's entries for records `from`..`to` (one root each, a few fields), versions in the past. */
function entriesOf (from: number, to: number, baseMs: number): RemoteEntry[] {
  const out: RemoteEntry[] = []
  for (let i = from; i < to; i++) {
    const rid = newRecordId(baseMs + i)
    const hlc = formatHlc({ ms: baseMs + i, counter: 0 })
    const fields: Record<string, string> = { title: `${i % 2 === 0 ? 'River' : 'Stone'} ${i}`, year: String(2000 + (i % 9)),
      genre: i % 3 === 0 ? 'Drama, War' : 'Comedy', path: `/files/p/${i}.mkv` }
    for (const [f, v] of Object.entries(fields)) out.push({ key: `file:${rid}/${f}`, value: v, hlc, origin: 'peer-b' })
  }
  return out
}

describe('pending roots with batches in flight', () => {
  it('keeps apart the roots free for a batch, those a batch holds, and those staged again while held', () => {
    const t = tmpDir('mc-pipe-')
    const s: NodeStore = openNodeStore({ path: path.join(t.dir, 'store.db'), nodeId: 'n' })
    cleanup = () => { s.close(); t.cleanup() }
    ensureStoreSchema(s.kv)
    const pending = new PendingRoots(s.kv, makeExcluder([]))
    let staged = 0
    pending.onStaged = () => { staged++ }
    const stage = (...rids: string[]): void => { s.kv.writeSync(tx => { pending.stage(tx, rids) }) }
    const rows = (): string[] => (s.kv.prepare('SELECT rid FROM search_pending ORDER BY rid').pluck().all() as string[])
    const free = (): string[] => [...pending.freeRoots].sort()

    stage('a', 'b', 'c', 'd', 'e')
    expect(staged).toBeGreaterThan(0)
    const first = pending.beginBatch(['a', 'b'])
    expect(free()).toEqual(['c', 'd', 'e'])
    const second = pending.beginBatch(['c'])
    pending.extendBatch(second, ['d'])
    expect(free()).toEqual(['e'])
    // Staged again while held: still held, not free, and kept staged when its batch finishes.
    stage('a', 'f')
    expect(free()).toEqual(['e', 'f'])
    s.kv.writeSync(tx => { pending.finishBatch(tx, first) })
    expect(rows()).toEqual(['a', 'c', 'd', 'e', 'f'])
    expect([...pending.set].sort()).toEqual(['a', 'c', 'd', 'e', 'f'])
    expect(free()).toEqual(['a', 'e', 'f'])
    // The writer had started the second batch before `d` reached it: `d` is free again, and the batch unstages `c` only.
    pending.releaseFromBatch(second, ['d'])
    expect(free()).toEqual(['a', 'd', 'e', 'f'])
    s.kv.writeSync(tx => { pending.finishBatch(tx, second) })
    expect(rows()).toEqual(['a', 'd', 'e', 'f'])
    // An abandoned batch (its job failed) leaves its roots staged and free.
    const failed = pending.beginBatch(['a', 'd'])
    expect(free()).toEqual(['e', 'f'])
    pending.endBatch(failed)
    expect(free()).toEqual(['a', 'd', 'e', 'f'])
    expect(pending.size).toBe(4)
    // A write that rolls back stages nothing.
    expect(() => { s.kv.writeSync(tx => { pending.stage(tx, ['z']); throw new Error('rolled back') }) }).toThrow('rolled back')
    expect(free()).toEqual(['a', 'd', 'e', 'f'])
  })
})

describe('index writer thread: a batch waiting behind another', () => {
  it('takes the roots sent to join it before it starts, and drops those sent after', async () => {
    const t = tmpDir('mc-pipe-')
    const dbPath = path.join(t.dir, 'store.db')
    const s: NodeStore = openNodeStore({ path: dbPath, nodeId: 'n' })
    ensureStoreSchema(s.kv)
    const init: WorkerInit = { indexPath: indexFileOf(dbPath), storePath: dbPath, excludePrefixes: [], marker: versionMarker([]),
      bucketShift: DEFAULT_BUCKET_SHIFT, cacheKiB: 2048, autocheckpointPages: 1000 }
    const w = await IndexWorker.start(init)
    cleanup = async () => { await w.close(); s.close(); t.cleanup() }
    await s.records.applyBatch(entriesOf(0, 1200, Date.now() - 100_000))
    const rids = (s.kv.prepare("SELECT substr(k, 11) FROM kv WHERE k >= 'idx:roots/' AND k < 'idx:roots0' ORDER BY k").pluck().all() as string[])
    expect(rids).toHaveLength(1200)

    // The first batch keeps the thread busy while the second waits behind it with the roots sent to join it.
    const one = w.run({ type: 'batch', rids: rids.slice(0, 1000), gen: 1 })
    const two = w.run({ type: 'batch', rids: rids.slice(1000, 1100), gen: 2 })
    w.extend(2, rids.slice(1100, 1150))
    w.extend(2, rids.slice(1150, 1200))
    const [r1, r2] = await Promise.all([one, two])
    expect(r1.extra).toBe(0)
    expect(r1.docs).toBe(1000)
    expect(r2.extra).toBe(2)
    expect(r2.docs).toBe(1200)

    // Roots sent to join a batch already run are dropped; the next batch takes none of them.
    w.extend(2, ['not-a-root'])
    const r3 = await w.run({ type: 'batch', rids: rids.slice(0, 10), gen: 3 })
    expect(r3.extra).toBe(0)
    expect(r3.docs).toBe(1200)

    // A close sent behind two jobs waits for the one running only: the job not started is dropped, unanswered.
    const four = w.run({ type: 'batch', rids: rids.slice(0, 1000), gen: 4 })
    const five = w.run({ type: 'batch', rids: rids.slice(1000, 1200), gen: 5 })
    await w.close()
    const [s4, s5] = await Promise.allSettled([four, five])
    expect(s5.status).toBe('rejected')
    s.kv.prepare(`ATTACH DATABASE ? AS ${INDEX_SCHEMA}`).run(init.indexPath)
    expect(s.kv.prepare(`SELECT count(*) FROM ${INDEX_SCHEMA}.search_doc`).pluck().get()).toBe(1200)
    expect(s.kv.prepare(`SELECT v FROM ${INDEX_SCHEMA}.search_info WHERE k = 'batch'`).pluck().get()).toBe(s4.status === 'fulfilled' ? '4' : '3')
  })
})

describe('merger with two batches in flight', () => {
  /** Counts the jobs at the index writer at once, whichever thread the merger starts. */
  function watchInFlight (): { max: () => number, extraTaken: () => number, restore: () => void } {
    // Called with `.call(this, …)` below and put back by restore().
    // eslint-disable-next-line @typescript-eslint/unbound-method
    const orig = IndexWorker.prototype.run
    let now = 0
    let max = 0
    let extra = 0
    IndexWorker.prototype.run = async function (this: IndexWorker, job) {
      now++
      max = Math.max(max, now)
      try {
        const r = await orig.call(this, job)
        extra += r.extra ?? 0
        return r
      } finally {
        now--
      }
    }
    return { max: () => max, extraTaken: () => extra, restore: () => { IndexWorker.prototype.run = orig } }
  }

  const REQUESTS = [{ query: 'river' }, { query: 'stone 1' }, { query: 'renamed' }, {}, { filters: [{ property: 'year', values: ['2004'] }] },
    { filters: [{ property: 'genre', values: ['drama'], exact: true }] }, { query: 'files', limit: 5 }]

  it.each([2, 1])('answers as the reference scan after a batch apply with records rewritten meanwhile (%i in flight)', async (inFlight) => {
    const watch = watchInFlight()
    let f: Fixture | undefined
    cleanup = async () => { watch.restore(); await f?.close() }
    f = await openFixture({ merger: { batchRoots: 100, batchesInFlight: inFlight } })
    const fx = f
    const baseMs = Date.now() - 100_000
    const n = 3000
    // Pages of a peer's records, while local writes rename records already applied (staged again, often while their batch is in flight).
    const rootAt = fx.store.kv.prepare("SELECT substr(k, 11) FROM kv WHERE k >= 'idx:roots/' AND k < 'idx:roots0' ORDER BY k LIMIT 1 OFFSET ?").pluck()
    let applying = true
    let renamed = 0
    const renames = (async () => {
      for (let i = 0; applying && i < 10_000; i++) {
        await new Promise(resolve => setImmediate(resolve))
        const count = fx.store.records.countRecords()
        if (count === 0) continue
        await fx.store.records.mergeFlat(rootAt.get((i * 37) % count) as string, { title: `Renamed ${i}` })
        renamed++
      }
    })()
    for (let from = 0; from < n; from += 500) await fx.store.records.applyBatch(entriesOf(from, from + 500, baseMs))
    applying = false
    await renames
    expect(renamed).toBeGreaterThan(10)
    await fx.search.whenIdle()
    expect(fx.search.pendingCount()).toBe(0)
    expect(fx.store.records.countRecords()).toBe(n)
    for (const req of REQUESTS) fx.query(req)
    expect(fx.query({ query: 'renamed' }).total).toBeGreaterThan(0)
    if (inFlight === 1) {
      expect(watch.max()).toBe(1)
      expect(watch.extraTaken()).toBe(0)
    } else {
      expect(watch.max()).toBe(2)
    }
  })
})
