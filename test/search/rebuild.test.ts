/**
 * The derived structures are rebuildable from the kv rows: a rebuild yields
 * exactly the incremental state; records changed while search was not
 * attached are found in the change log and staged at open (or, when the log
 * no longer reaches back, everything is rebuilt); entries of re-indexed
 * records are swept; answers are right throughout.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor } from '../../src/common/index.js'
import { openNodeStore } from '../../src/records/index.js'
import { createSearch, type SearchRequest } from '../../src/search/index.js'
import { referenceSearch } from '../../src/search/testing.js'
import { tmpDir } from '../helpers/tmp.js'
import { DEFAULT_BUCKET_SHIFT } from '../../src/search/search-schema.js'
import { indexState, openFixture, type Fixture } from './fixture.js'

const CID = 'bafkreih5kapbjzq6o7bdsjg3m4ezcslmnxgs3kzkzbwgj2khrntmfybyyq'

/** The value of Crockford base32 characters, as root ids write them. */
function crockford (s: string): number {
  return [...s].reduce((v, c) => v * 32 + '0123456789ABCDEFGHJKMNPQRSTVWXYZ'.indexOf(c), 0)
}

async function writeHistory (records: Fixture['store']['records']): Promise<string[]> {
  const a = await records.mint('/files/h/a.mkv', 1, 1, { title: 'Alpha', [`cids/${CID}`]: 'true' })
  const b = await records.mint('/files/h/b.mkv', 1, 1, { title: 'Beta', showtitle: 'Show', Genre: 'Drama, Comedy' })
  await records.addAlias(b, CID) // joins a's group without touching a haystack field
  const c = await records.mint('/files/h/c.mkv', 1, 1, { originaltitle: 'Gamma' })
  const d = await records.mint('/files/h/d.mkv', 1, 1, { plot: 'no haystack change' })
  await records.mergeFlat(c, { title: 'Gamma Prime', year: '2001' })
  await records.deleteProperty(d, 'filePath') // d is left with plot, sizeByte, mtimeNano: an empty haystack
  const e = await records.mint('/files/h/e.mkv', 1, 1, { title: 'Epsilon' })
  await records.deleteRoot(e)
  return [a, b, c, d]
}

const REQUESTS: SearchRequest[] = [
  { query: 'alpha' }, { query: 'beta show' }, { query: 'gamma' }, { query: 'h' }, { query: 'epsilon' }, {},
  { filters: [{ property: 'year', values: ['2001'] }] }, { filters: [{ property: 'genre', values: ['comedy'], exact: true }] },
  { query: 'files', limit: 2 }, { query: 'outside' }, { query: 'renamed' }
]

let f: Fixture | undefined
afterEach(async () => { await f?.close(); f = undefined })

describe('rebuild', () => {
  it('reopening a store with current structures recreates, stages and rebuilds nothing', async () => {
    f = await openFixture()
    await writeHistory(f.store.records)
    await f.search.whenIdle()
    const docs = f.store.kv.prepare('SELECT d, rid FROM search_doc ORDER BY d').raw().all()
    await f.search.stop()
    f.store.close()
    const lines: string[] = []
    const s = openNodeStore({ path: f.dbPath, nodeId: 'node-a' })
    const search = createSearch({ kv: s.kv, records: s.records, logger: createLogger({ level: 'debug', write: l => { lines.push(l) } }) })
    await search.start()
    expect(lines).toEqual([])
    expect(search.pendingCount()).toBe(0)
    expect(s.kv.prepare('SELECT d, rid FROM search_doc ORDER BY d').raw().all()).toEqual(docs)
    expect(search.search({ query: 'gamma' }).total).toBe(1)
    await search.stop()
    s.close()
    f.store = openNodeStore({ path: f.dbPath, nodeId: 'node-a' }) // for the fixture's close()
    f.search = { stop: async () => {} } as unknown as Fixture['search']
  })

  it('rebuild() from the kv rows yields exactly the incremental state', async () => {
    f = await openFixture()
    await writeHistory(f.store.records)
    await f.search.whenIdle()
    const incremental = indexState(f.store.kv)
    expect(incremental.fts.length).toBe(3) // the group (a+b), c and d (an empty haystack, but an id); e is gone
    expect(incremental.docs.length).toBe(4)
    // Damage every structure: a stale haystack, a document and a row for a deleted root, a lost entry.
    const kv = f.store.kv
    kv.exec("UPDATE search_fts SET hay = 'stale' WHERE rowid = (SELECT min(rowid) FROM search_fts)")
    kv.exec("INSERT INTO search_doc (rid, g) VALUES ('01ARZ3NDEKTSV4RRFFQ69G5FAV', 0)")
    kv.exec("INSERT INTO search_fts (rowid, hay, ids) VALUES ((SELECT max(d) FROM search_doc), 'ghost', '')")
    kv.exec("DELETE FROM search_field WHERE f = 'year'")
    await f.search.rebuild()
    expect(indexState(kv)).toEqual(incremental)
    for (const req of REQUESTS) f.query(req)
  })

  it('builds the structures at open for a store that never had them', async () => {
    const { dir, cleanup } = tmpDir('mc-search-')
    try {
      const dbPath = path.join(dir, 'store.db')
      const plain = openNodeStore({ path: dbPath, nodeId: 'n' })
      await writeHistory(plain.records)
      plain.close()
      f = await openFixture()
      await writeHistory(f.store.records)
      await f.search.whenIdle()
      const want = indexState(f.store.kv).fts.map(([, hay]) => hay)
      const s = openNodeStore({ path: dbPath, nodeId: 'n' })
      const search = createSearch({ kv: s.kv, records: s.records })
      await search.start()
      expect(search.pendingCount()).toBe(0) // a small store is built before createSearch returns
      expect(indexState(s.kv).fts.map(([, hay]) => hay)).toEqual(want)
      for (const req of REQUESTS) expect(search.search(req)).toEqual(referenceSearch(s.records, req))
      await search.stop()
      s.close()
    } finally {
      cleanup()
    }
  })

  it.each([
    ['at open', 2000],
    ['in the background, answering right meanwhile', 0]
  ])('stages the records a process without search changed, from the change log, %s', async (_how, syncRepairMaxRoots) => {
    f = await openFixture()
    const [a, b, c] = await writeHistory(f.store.records)
    await f.search.whenIdle()
    await f.search.stop()
    f.store.close()
    const plain = openNodeStore({ path: f.dbPath, nodeId: 'node-a' })
    await plain.records.mergeFlat(a, { title: 'Renamed Outside' })
    await plain.records.deleteRoot(c)
    await plain.records.deleteProperty(b, `cids/${CID}`) // splits the group: a's row must lose b's fields
    await plain.records.mint('/files/h/f.mkv', 1, 1, { title: 'Written Outside' })
    plain.close()
    await f.reopen({ syncRepairMaxRoots })
    if (syncRepairMaxRoots === 0) expect(f.search.pendingCount()).toBeGreaterThanOrEqual(4)
    else expect(f.search.pendingCount()).toBe(0)
    // A replay, not a rebuild: the index keeps serving.
    expect(f.search.explain({ query: 'outside' }).plan?.parts.map(p => p.name)).toEqual(['text:fts'])
    for (const req of REQUESTS) f.query(req)
    await f.search.whenIdle()
    expect(f.search.pendingCount()).toBe(0)
    const repaired = indexState(f.store.kv)
    for (const req of REQUESTS) f.query(req)
    await f.search.rebuild()
    expect(indexState(f.store.kv)).toEqual(repaired)
  })

  it('rebuilds when the change log was trimmed past the mark while search was not attached', async () => {
    f = await openFixture()
    await writeHistory(f.store.records)
    await f.search.whenIdle()
    await f.search.stop()
    f.store.close()
    const plain = openNodeStore({ path: f.dbPath, nodeId: 'node-a', streamRetention: 5, trimEvery: 5 })
    for (let i = 0; i < 10; i++) await plain.records.mint(`/files/t/${i}.mkv`, i, i, { title: `Trimmed Outside ${i}` })
    plain.close()
    const lines: string[] = []
    const s = openNodeStore({ path: f.dbPath, nodeId: 'node-a' })
    const search = createSearch({ kv: s.kv, records: s.records, logger: createLogger({ level: 'info', write: l => { lines.push(l) } }) })
    await search.start()
    try {
      expect(lines.some(l => l.includes('rebuilding') && l.includes('no longer reaches back'))).toBe(true)
      for (const req of [...REQUESTS, { query: 'trimmed outside' }]) expect(search.search(req)).toEqual(referenceSearch(s.records, req))
      expect(search.search({ query: 'trimmed outside' }).total).toBe(10)
    } finally {
      await search.stop()
      s.close()
    }
  })

  it('sweeps the entries of re-indexed records once they are a tenth of the documents', async () => {
    // Four documents per bucket: the sweep's cursor crosses buckets.
    f = await openFixture({ merger: { sweepMinOrphans: 20 }, bucketShift: 2 })
    const r = f.store.records
    const rids = await Promise.all(Array.from({ length: 60 }, async (_, i) => await r.mint(`/files/s/${i}.mkv`, i, i, { title: `sweep ${i}`, genre: 'a, b' })))
    await f.search.whenIdle()
    const kv = f.store.kv
    const orphanEntries = (): number => kv.prepare('SELECT count(*) FROM search_field WHERE d NOT IN (SELECT d FROM search_doc)').pluck().get() as number
    await Promise.all(rids.slice(0, 30).map(async (rid, i) => await r.mergeFlat(rid, { title: `swept ${i}` })))
    await f.search.whenIdle()
    expect(orphanEntries()).toBe(0)
    expect(kv.prepare("SELECT multi FROM search_fstat WHERE f = 'genre'").pluck().get()).toBe(60)
    f.query({ query: 'swept' })
    f.query({ filters: [{ property: 'genre', values: ['b'], exact: true }] })
    // Fewer than the threshold: left alone.
    await r.mergeFlat(rids[40], { title: 'once more' })
    await f.search.whenIdle()
    expect(orphanEntries()).toBeGreaterThan(0)
    f.query({ query: 'once more' })
  })

  it('renumbers the oldest documents once churn has spread the live ones over many buckets', async () => {
    // Four documents per bucket (a round starts once the span passes four times the documents and 16 spare ids), eight roots per step.
    f = await openFixture({ merger: { sweepMinOrphans: 20, batchRoots: 8 }, bucketShift: 2 })
    const r = f.store.records
    const kv = f.store.kv
    const rids = await Promise.all(Array.from({ length: 40 }, async (_, i) => await r.mint(`/files/n/${i}.mkv`, i, i, {
      title: `churn ${i}`, year: String(1990 + (i % 7)), studio: i % 5 === 0 ? 'Élan' : 'Other'
    })))
    await f.search.whenIdle()
    const docOf = (rid: string): number => kv.prepare('SELECT d FROM search_doc WHERE rid = ?').pluck().get(rid) as number
    const docs = (): number => kv.prepare('SELECT count(*) FROM search_doc').pluck().get() as number
    const span = (): number => kv.prepare('SELECT max(d) - min(d) + 1 FROM search_doc').pluck().get() as number
    const first = docOf(rids[0])
    // The first ten are never written again; the other thirty take a new document id at every round.
    for (let round = 0; round < 8; round++) {
      // The round's marker holds a '-', which no record id does (text queries match ids too).
      await Promise.all(rids.slice(10).map(async (rid, i) => await r.mergeFlat(rid, { title: `churn ${i + 10} round-${round}` })))
      await f.search.whenIdle()
      // Without renumbering the spread would reach 40 + 30 × (round + 1) ids.
      expect(span() - docs()).toBeLessThanOrEqual(Math.max(3 * docs(), 16))
    }
    expect(docs()).toBe(40)
    expect(docOf(rids[0])).toBeGreaterThan(first)
    // The old documents' entries are swept like any re-indexed root's.
    expect(kv.prepare('SELECT count(*) FROM search_field WHERE d NOT IN (SELECT d FROM search_doc)').pluck().get()).toBe(0)
    f.query({ filters: [{ property: 'year', values: ['1993'], exact: true }] })
    f.query({ filters: [{ property: 'studio', values: ['élan'], exact: true }] })
    f.query({ filters: [{ property: 'year', values: ['199'] }] })
    f.query({ query: 'churn 3' })
    expect(f.query({ query: 'round-7' }).results).toHaveLength(30)
  })

  it('leaves document ids as churn spread them when renumbering is off (renumberAt: Infinity)', async () => {
    f = await openFixture({ merger: { batchRoots: 8, renumberAt: Infinity }, bucketShift: 2 })
    const r = f.store.records
    const rids = await Promise.all(Array.from({ length: 20 }, async (_, i) => await r.mint(`/files/o/${i}.mkv`, i, i, { title: `kept ${i}` })))
    await f.search.whenIdle()
    const first = f.store.kv.prepare('SELECT d FROM search_doc WHERE rid = ?').pluck().get(rids[0]) as number
    for (let round = 0; round < 8; round++) {
      await Promise.all(rids.slice(5).map(async (rid, i) => await r.mergeFlat(rid, { title: `kept ${i + 5} v${round}` })))
      await f.search.whenIdle()
    }
    // 20 + 15 × 8 ids: well past four times the documents, and the oldest root keeps its first id.
    expect(f.store.kv.prepare('SELECT max(d) - min(d) + 1 FROM search_doc').pluck().get()).toBe(140)
    expect(f.store.kv.prepare('SELECT d FROM search_doc WHERE rid = ?').pluck().get(rids[0])).toBe(first)
    f.query({ query: 'kept 3' })
  })

  it('rebuilds the field index under a new bucket size, and refuses one out of range', async () => {
    f = await openFixture()
    await writeHistory(f.store.records)
    const more = await Promise.all(Array.from({ length: 40 }, async (_, i) => await f!.store.records.mint(`/files/k/${i}.mkv`, i, i,
      { year: String(1990 + (i % 7)), studio: i % 5 === 0 ? 'Élan' : 'Other' })))
    await f.search.whenIdle()
    const misplaced = (shift: number): number => f!.store.kv.prepare('SELECT count(*) FROM search_field WHERE b <> d >> ?').pluck().get(shift) as number
    const buckets = (): number => f!.store.kv.prepare('SELECT count(DISTINCT b) FROM search_field').pluck().get() as number
    expect(misplaced(DEFAULT_BUCKET_SHIFT)).toBe(0)
    expect(buckets()).toBe(1)
    await f.search.stop()
    f.store.close()
    const s = openNodeStore({ path: f.dbPath, nodeId: 'node-a' })
    expect(() => createSearch({ kv: s.kv, records: s.records }, { internal: { bucketShift: 31 } })).toThrow(/bucketShift/)
    const lines: string[] = []
    const search = createSearch({ kv: s.kv, records: s.records, logger: createLogger({ level: 'info', write: l => { lines.push(l) } }) },
      { internal: { bucketShift: 2 } })
    f.store = s
    f.search = search
    await search.start()
    await search.whenIdle()
    expect(lines.some(l => l.includes('rebuilding') && l.includes('bucket size changed'))).toBe(true)
    expect(misplaced(2)).toBe(0)
    expect(buckets()).toBeGreaterThan(5)
    for (const req of [...REQUESTS, { filters: [{ property: 'year', values: ['1993'] }] }, { filters: [{ property: 'year', values: ['199'] }] }]) {
      expect(search.search(req)).toEqual(referenceSearch(s.records, req))
    }
    // Every bucket is probed: an ASCII value by equality, a non-ASCII one by range.
    expect(search.search({ filters: [{ property: 'year', values: ['1993'], exact: true }] }).total).toBe(more.filter((_, i) => i % 7 === 3).length)
    expect(search.search({ filters: [{ property: 'studio', values: ['élan'], exact: true }] }).total).toBe(more.filter((_, i) => i % 5 === 0).length)
  })

  it('answers correctly while a large store rebuilds in the background, then serves from the rows', async () => {
    const { dir, cleanup } = tmpDir('mc-search-')
    const dbPath = path.join(dir, 'store.db')
    try {
      const plain = openNodeStore({ path: dbPath, nodeId: 'n' })
      // The marker holds a '-' (and an O and an I), which no root id does: text queries match root ids too (next test).
      await Promise.all(Array.from({ length: 600 }, async (_, i) =>
        await plain.records.mint(`/files/bulk/${i}.mkv`, i, i, { title: `bulk ${i % 10 === 0 ? 'one-in-ten' : 'other'} ${i}` })))
      plain.close()
      const s = openNodeStore({ path: dbPath, nodeId: 'n' })
      const search = createSearch({ kv: s.kv, records: s.records }, { internal: { syncRepairMaxRoots: 100 } })
      await search.start()
      const during = search.explain({ query: 'one-in-ten', filters: [{ property: 'title', values: ['bulk'] }] })
      expect(during.plan?.parts.map(p => [p.name, p.detail])).toEqual([['filter:title', 'read-all'], ['text:read-all', undefined]])
      expect(during.response.total).toBe(60)
      const rid = (await s.records.mint('/files/bulk/late.mkv', 1, 1, { title: 'late one-in-ten' }))
      await search.whenIdle()
      const after = search.explain({ query: 'one-in-ten', limit: 1000 })
      expect(after.plan?.parts.map(p => p.name)).toEqual(['text:fts'])
      expect(after.response.total).toBe(61)
      expect(after.response.results.map(r => r.hashId)).toContain(rid)
      expect(search.ftsRowCount()).toBe(601)
      await search.stop()
      s.close()
    } finally {
      cleanup()
    }
  })

  it('counts a record whose root id holds the free text, while a large store rebuilds in the background and after', async () => {
    const { dir, cleanup } = tmpDir('mc-search-')
    const dbPath = path.join(dir, 'store.db')
    try {
      // Root ids minted in one millisecond count up from the first's random part, drawn so that record 1's id ends in TENTH.
      const draws = [0, 0, (crockford('TENTH') - 1) * 2 / 2 ** 32]
      const plain = openNodeStore({ path: dbPath, nodeId: 'n', now: () => Date.UTC(2025, 0, 1), random: () => draws.shift() ?? Math.random() })
      const rids = await Promise.all(Array.from({ length: 600 }, async (_, i) =>
        await plain.records.mint(`/files/bulk/${i}.mkv`, i, i, { title: `bulk ${i % 10 === 0 ? 'tenth' : 'other'} ${i}` })))
      plain.close()
      expect(rids[1].endsWith('TENTH')).toBe(true)
      const s = openNodeStore({ path: dbPath, nodeId: 'n' })
      const search = createSearch({ kv: s.kv, records: s.records }, { internal: { syncRepairMaxRoots: 100 } })
      await search.start()
      // 60 titles and record 1's id: read from every record while the index is rebuilt, and from the FTS rows after.
      const req = { query: 'tenth', filters: [{ property: 'title', values: ['bulk'] }] }
      const during = search.explain(req)
      expect(during.plan?.parts.map(p => p.detail)).toEqual(['read-all', undefined])
      expect(during.response.total).toBe(61)
      expect(during.response).toEqual(referenceSearch(s.records, req))
      expect(during.response.results.map(r => r.hashId)).toContain(rids[1])
      await search.whenIdle()
      const after = search.explain(req)
      expect(after.plan?.parts.map(p => p.name)).toEqual(['text:fts', 'filter:title'])
      expect(after.response).toEqual(during.response)
      await search.stop()
      s.close()
    } finally {
      cleanup()
    }
  })

  it('stops a background rebuild on stop(), and finishes it at the next open', async () => {
    const { dir, cleanup } = tmpDir('mc-search-')
    const dbPath = path.join(dir, 'store.db')
    try {
      const plain = openNodeStore({ path: dbPath, nodeId: 'n' })
      await Promise.all(Array.from({ length: 1200 }, async (_, i) => await plain.records.mint(`/files/s/${i}.mkv`, i, i, { title: `stop ${i}` })))
      plain.close()
      let s = openNodeStore({ path: dbPath, nodeId: 'n' })
      let search = createSearch({ kv: s.kv, records: s.records }, { internal: { syncRepairMaxRoots: 100 } })
      await search.start()
      const ready = expect(search.whenReady()).rejects.toThrow(/stopped/)
      await search.stop()
      await ready
      s.close()
      s = openNodeStore({ path: dbPath, nodeId: 'n' })
      search = createSearch({ kv: s.kv, records: s.records }, { internal: { syncRepairMaxRoots: 100 } })
      await search.start()
      await waitFor(() => search.explain({ query: 'stop' }).plan?.parts[0].name === 'text:fts', { timeoutMs: 20_000, what: 'the rebuild to finish' })
      expect(search.ftsRowCount()).toBe(1200)
      await search.stop()
      s.close()
    } finally {
      cleanup()
    }
  })
})
