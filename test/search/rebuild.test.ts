/**
 * The derived structures are rebuildable from the kv rows: a rebuild yields
 * exactly the incremental state; a store written without search (or opened
 * without its structures) is repaired at open; answers are right meanwhile.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor } from '../../src/common/index.js'
import type { KvStore } from '../../src/kv/index.js'
import { openNodeStore } from '../../src/records/index.js'
import { createSearch, referenceSearch, type SearchRequest } from '../../src/search/index.js'
import { tmpDir } from '../helpers/tmp.js'
import { openFixture, type Fixture } from './fixture.js'

const CID = 'bafkreih5kapbjzq6o7bdsjg3m4ezcslmnxgs3kzkzbwgj2khrntmfybyyq'

/** The FTS rows and their mappings, as comparable data (rowids left out: they differ between builds). */
function ftsState (kv: KvStore): { rows: string[][], mapped: string[] } {
  const rows = kv.prepare('SELECT rid, hay FROM fts ORDER BY rid').raw().all() as string[][]
  const mapped = kv.keys('idx:fts/', 'idx:fts0').map(k => k.slice('idx:fts/'.length))
  for (const k of kv.keys('idx:fts/', 'idx:fts0')) {
    expect(kv.prepare('SELECT rid FROM fts WHERE rowid = ?').pluck().get(Number(kv.get(k)))).toBe(k.slice('idx:fts/'.length))
  }
  return { rows, mapped }
}

const dirtyCount = (kv: KvStore): number => kv.prepare('SELECT count(*) FROM search_dirty').pluck().get() as number

async function writeHistory (records: Fixture['store']['records']): Promise<string[]> {
  const a = await records.mint('/files/h/a.mkv', 1, 1, { title: 'Alpha', [`cids/${CID}`]: 'true' })
  const b = await records.mint('/files/h/b.mkv', 1, 1, { title: 'Beta', showtitle: 'Show' })
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
  { filters: [{ property: 'year', values: ['2001'] }] }, { query: 'files', limit: 2 }
]

let f: Fixture | undefined
afterEach(async () => { await f?.close(); f = undefined })

describe('rebuild', () => {
  it('reopening a store with current structures recreates and rebuilds nothing', async () => {
    f = await openFixture()
    await writeHistory(f.store.records)
    const rowids = f.store.kv.prefix('idx:fts/')
    await f.search.stop()
    f.store.close()
    const lines: string[] = []
    const s = openNodeStore({ path: f.dbPath, nodeId: 'node-a' })
    const search = createSearch({ kv: s.kv, records: s.records, logger: createLogger({ level: 'debug', write: l => { lines.push(l) } }) })
    await search.start()
    expect(lines).toEqual([])
    expect(s.kv.prefix('idx:fts/')).toEqual(rowids)
    expect(search.search({ query: 'gamma' }).total).toBe(1)
    await search.stop()
    s.close()
    f.store = openNodeStore({ path: f.dbPath, nodeId: 'node-a' }) // for the fixture's close()
    f.search = { stop: async () => {} } as unknown as Fixture['search']
  })

  it('rebuild() from the kv rows yields exactly the incremental state', async () => {
    f = await openFixture()
    await writeHistory(f.store.records)
    const incremental = ftsState(f.store.kv)
    expect(incremental.rows.length).toBe(3) // the group (a+b), c and d (an empty haystack, but an id); e is gone
    // damage the rows: a stale haystack, a row for a deleted root, a missing row
    f.store.kv.exec("UPDATE fts SET hay = 'stale' WHERE rid = (SELECT min(rid) FROM fts)")
    f.store.kv.exec("INSERT INTO fts (rid, hay) VALUES ('01ARZ3NDEKTSV4RRFFQ69G5FAV', 'ghost')")
    await f.search.rebuild()
    expect(ftsState(f.store.kv)).toEqual(incremental)
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
      const want = ftsState(f.store.kv).rows.map(([, hay]) => hay)
      const s = openNodeStore({ path: dbPath, nodeId: 'n' })
      const search = createSearch({ kv: s.kv, records: s.records })
      await search.start()
      expect(ftsState(s.kv).rows.map(([, hay]) => hay)).toEqual(want)
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
  ])('repairs rows of records written by a process that ran no search, %s', async (_how, syncRepairMaxRoots) => {
    f = await openFixture()
    const [a, b, c] = await writeHistory(f.store.records)
    await f.search.stop()
    f.store.close()
    const plain = openNodeStore({ path: f.dbPath, nodeId: 'node-a' })
    await plain.records.mergeFlat(a, { title: 'Renamed Outside' })
    await plain.records.deleteRoot(c)
    await plain.records.deleteProperty(b, `cids/${CID}`) // splits the group
    await plain.records.mint('/files/h/f.mkv', 1, 1, { title: 'Written Outside' })
    expect(dirtyCount(plain.kv)).toBeGreaterThan(0) // the triggers recorded what changed
    plain.close()
    await f.reopen({ syncRepairMaxRoots })
    for (const req of [...REQUESTS, { query: 'outside' }, { query: 'renamed' }, { query: 'beta' }]) f.query(req)
    await f.search.whenReady()
    expect(dirtyCount(f.store.kv)).toBe(0)
    const repaired = ftsState(f.store.kv)
    for (const req of [...REQUESTS, { query: 'outside' }, { query: 'renamed' }, { query: 'beta' }]) f.query(req)
    await f.search.rebuild()
    expect(ftsState(f.store.kv)).toEqual(repaired)
  })

  it('answers correctly while a large store rebuilds in the background, then serves from the rows', async () => {
    const { dir, cleanup } = tmpDir('mc-search-')
    const dbPath = path.join(dir, 'store.db')
    try {
      const plain = openNodeStore({ path: dbPath, nodeId: 'n' })
      await Promise.all(Array.from({ length: 600 }, async (_, i) =>
        await plain.records.mint(`/files/bulk/${i}.mkv`, i, i, { title: `bulk ${i % 10 === 0 ? 'tenth' : 'other'} ${i}` })))
      plain.close()
      const s = openNodeStore({ path: dbPath, nodeId: 'n' })
      const search = createSearch({ kv: s.kv, records: s.records }, { syncRepairMaxRoots: 100 })
      await search.start()
      const during = search.explain({ query: 'tenth' })
      expect(during.plan?.parts.map(p => p.name)).toEqual(['text:read-all'])
      expect(during.response.total).toBe(60)
      const rid = (await s.records.mint('/files/bulk/late.mkv', 1, 1, { title: 'late tenth' }))
      await search.whenReady()
      const after = search.explain({ query: 'tenth', limit: 1000 })
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

  it('stops a background rebuild on stop(), and finishes it at the next open', async () => {
    const { dir, cleanup } = tmpDir('mc-search-')
    const dbPath = path.join(dir, 'store.db')
    try {
      const plain = openNodeStore({ path: dbPath, nodeId: 'n' })
      await Promise.all(Array.from({ length: 1200 }, async (_, i) => await plain.records.mint(`/files/s/${i}.mkv`, i, i, { title: `stop ${i}` })))
      plain.close()
      let s = openNodeStore({ path: dbPath, nodeId: 'n' })
      let search = createSearch({ kv: s.kv, records: s.records }, { syncRepairMaxRoots: 100 })
      await search.start()
      await search.stop()
      await expect(search.whenReady()).rejects.toThrow(/stopped/)
      s.close()
      s = openNodeStore({ path: dbPath, nodeId: 'n' })
      search = createSearch({ kv: s.kv, records: s.records }, { syncRepairMaxRoots: 100 })
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
