/**
 * The index lives in a file of its own beside the store (`<store>-search`),
 * written by the index writer's thread. It is derived: deleted, left behind
 * by a crash between its commit and the store's, taken from another store
 * or not level with the store, it is rebuilt at open, and answers are right
 * throughout.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor } from '../../src/common/index.js'
import { openNodeStore } from '../../src/records/index.js'
import { createSearch, type SearchRequest } from '../../src/search/index.js'
import { referenceSearch } from '../../src/search/testing.js'
import { MAX_BATCHES_IN_FLIGHT } from '../../src/search/merger.js'
import { ManualClock } from '../helpers/manual-clock.js'
import { tmpDir } from '../helpers/tmp.js'
import { indexState, openFixture, type Fixture } from './fixture.js'

const REQUESTS: SearchRequest[] = [
  { query: 'river' }, { query: 'stone 7' }, {}, { filters: [{ property: 'year', values: ['2004'] }] },
  { filters: [{ property: 'genre', values: ['drama'], exact: true }] }, { query: 'files', limit: 3 }
]

let f: Fixture | undefined
afterEach(async () => { await f?.close(); f = undefined })

async function fill (fx: Fixture, n: number, from = 0): Promise<void> {
  await Promise.all(Array.from({ length: n }, async (_, i) => {
    const k = from + i
    await fx.store.records.mint(`/files/i/${k}.mkv`, k, k, { title: `${k % 2 === 0 ? 'River' : 'Stone'} ${k}`, year: String(2000 + (k % 7)),
      genre: k % 3 === 0 ? 'Drama, War' : 'Comedy' })
  }))
}

/** Closes search and the store, runs `between` on the closed files, reopens with a logger; returns what search logged at open. */
async function reopenAfter (fx: Fixture, between: () => void): Promise<string[]> {
  await fx.search.stop()
  fx.store.close()
  between()
  const lines: string[] = []
  fx.store = openNodeStore({ path: fx.dbPath, nodeId: 'node-a' })
  fx.search = createSearch({ kv: fx.store.kv, records: fx.store.records, logger: createLogger({ level: 'info', write: l => { lines.push(l) } }) })
  await fx.search.start()
  await fx.search.whenIdle()
  return lines
}

const indexFiles = (dbPath: string): string[] => fs.readdirSync(path.dirname(dbPath)).filter(n => n.startsWith(`${path.basename(dbPath)}-search`))

describe('index file', () => {
  it('keeps the index in a file of its own beside the store, and none of it in the store file', async () => {
    f = await openFixture()
    await fill(f, 60)
    await f.search.whenIdle()
    for (const req of REQUESTS) f.query(req)
    expect(indexFiles(f.dbPath)).toContain('store.db-search')
    const storeTables = f.store.kv.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE 'search%' ORDER BY name").pluck().all()
    expect(storeTables).toEqual(['search_pending', 'search_state'])
    const index = new Database(`${f.dbPath}-search`, { readonly: true })
    try {
      expect(index.prepare('SELECT count(*) FROM search_doc').pluck().get()).toBe(60)
    } finally {
      index.close()
    }
  })

  it('rebuilds a deleted index file at open', async () => {
    f = await openFixture()
    await fill(f, 50)
    await f.search.whenIdle()
    const before = indexState(f.store.kv)
    const fx = f
    const lines = await reopenAfter(fx, () => { for (const n of indexFiles(fx.dbPath)) fs.rmSync(path.join(path.dirname(fx.dbPath), n)) })
    expect(lines.some(l => l.includes('rebuilding the index') && l.includes('no search structures yet'))).toBe(true)
    expect(indexState(f.store.kv)).toEqual(before)
    for (const req of REQUESTS) f.query(req)
  })

  it('rebuilds an index file that is not level with the store, or that belongs to another store', async () => {
    f = await openFixture()
    await fill(f, 40)
    await f.search.whenIdle()
    const before = indexState(f.store.kv)
    const fx = f
    // The store says five more batches were unstaged than the index file committed: the file is behind (an old copy).
    let lines = await reopenAfter(fx, () => {
      const db = new Database(fx.dbPath)
      db.prepare("UPDATE search_state SET v = CAST(v AS INTEGER) + 5 WHERE k = 'batch'").run()
      db.close()
    })
    expect(lines.some(l => l.includes('rebuilding the index') && l.includes('not level'))).toBe(true)
    expect(indexState(f.store.kv)).toEqual(before)
    // The index file three batches ahead of the store: more than the merger ever has at the index writer (MAX_BATCHES_IN_FLIGHT).
    lines = await reopenAfter(fx, () => {
      const db = new Database(fx.dbPath)
      db.prepare("UPDATE search_state SET v = CAST(v AS INTEGER) - ? WHERE k = 'batch'").run(MAX_BATCHES_IN_FLIGHT + 1)
      db.close()
    })
    expect(lines.some(l => l.includes('rebuilding the index') && l.includes('not level'))).toBe(true)
    expect(indexState(f.store.kv)).toEqual(before)
    // Another store's index file copied over this one's.
    const other = await openFixture()
    try {
      await fill(other, 10, 1000)
      await other.search.whenIdle()
      await other.search.stop()
      other.store.close()
      lines = await reopenAfter(fx, () => {
        for (const n of indexFiles(fx.dbPath)) fs.rmSync(path.join(path.dirname(fx.dbPath), n))
        fs.copyFileSync(`${other.dbPath}-search`, `${fx.dbPath}-search`)
      })
      expect(lines.some(l => l.includes('rebuilding the index') && l.includes('another store'))).toBe(true)
      expect(indexState(f.store.kv)).toEqual(before)
      for (const req of REQUESTS) f.query(req)
    } finally {
      other.store = openNodeStore({ path: other.dbPath, nodeId: 'node-a' })
      other.search = { stop: async () => {} } as unknown as Fixture['search']
      await other.close()
    }
  })

  it.each([1, MAX_BATCHES_IN_FLIGHT])('takes an index file %i batch(es) ahead of the store (a crash between the two commits) as it is, and indexes the roots again', async (ahead) => {
    f = await openFixture()
    await fill(f, 30)
    await f.search.whenIdle()
    const fx = f
    const restaged: string[] = []
    const lines = await reopenAfter(fx, () => {
      // As if the store's unstaging writes of the last batches never committed: their roots staged again, the number back.
      const db = new Database(fx.dbPath)
      db.prepare("UPDATE search_state SET v = CAST(v AS INTEGER) - ? WHERE k = 'batch'").run(ahead)
      for (const k of db.prepare("SELECT k FROM kv WHERE k >= 'idx:roots/' AND k < 'idx:roots0' LIMIT 5").pluck().all() as string[]) {
        restaged.push(k.slice('idx:roots/'.length))
        db.prepare('INSERT INTO search_pending (rid) VALUES (?)').run(k.slice('idx:roots/'.length))
      }
      db.close()
    })
    expect(restaged).toHaveLength(5)
    expect(lines.filter(l => l.includes('rebuilding the index'))).toEqual([])
    expect(f.search.pendingCount()).toBe(0)
    for (const req of REQUESTS) f.query(req)
  })

  it('answers right while a large batch is indexed, and after', async () => {
    const { dir, cleanup } = tmpDir('mc-index-')
    const dbPath = path.join(dir, 'store.db')
    const s = openNodeStore({ path: dbPath, nodeId: 'n' })
    const search = createSearch({ kv: s.kv, records: s.records }, { internal: { merger: { batchRoots: 100_000, backlogLimit: 100_000, delayMs: 3_600_000 } } })
    try {
      await search.start()
      await Promise.all(Array.from({ length: 1500 }, async (_, i) => await s.records.mint(`/files/l/${i}.mkv`, i, i,
        { title: `Large ${i}`, year: String(1990 + (i % 30)) })))
      const idle = search.whenIdle()
      let checks = 0
      await waitFor(() => {
        for (const req of [{ query: 'large 14' },
          { filters: [{ property: 'year', values: ['2001'] }] }]) expect(search.search(req)).toEqual(referenceSearch(s.records, req))
        checks++
        return search.pendingCount() === 0
      }, { timeoutMs: 20_000, intervalMs: 5, what: 'the batch to be indexed' })
      await idle
      expect(checks).toBeGreaterThan(1)
    } finally {
      await search.stop()
      s.close()
      cleanup()
    }
  })

  it('runs the index writer\'s thread only while there is work', async () => {
    // The merger's timers in virtual time: the thread's idle close fires when the test moves the clock on.
    const clock = new ManualClock()
    f = await openFixture({ merger: { idleCloseMs: 30_000, clock } })
    await fill(f, 20)
    await f.search.whenIdle()
    // Work just finished: the thread is still there, and stays until idle for idleCloseMs, then ends.
    expect(f.search.indexWriterRunning()).toBe(true)
    expect(clock.nextAt()).toBe(clock.now() + 30_000)
    clock.advanceTo(clock.now() + 29_999)
    expect(clock.runNext(clock.now())).toBe(false)
    expect(f.search.indexWriterRunning()).toBe(true)
    expect(clock.runNext(clock.now() + 1)).toBe(true)
    const fx = f
    await waitFor(() => !fx.search.indexWriterRunning(), { timeoutMs: 10_000, what: 'the idle index writer to end' })
    // The next write starts it again, and is indexed.
    await fill(f, 1, 500)
    await f.search.whenIdle()
    expect(f.search.indexWriterRunning()).toBe(true)
    f.query({ query: 'river 500' })
    expect(f.search.explain({ query: 'river 500' }).plan?.parts[0].name).toBe('text:fts')
    // A store opened level with its index file starts none.
    await f.reopen()
    expect(f.search.indexWriterRunning()).toBe(false)
    for (const req of REQUESTS) f.query(req)
  })

  it('refuses a store without a file', async () => {
    const s = openNodeStore({ path: ':memory:', nodeId: 'n' })
    try {
      await expect(createSearch({ kv: s.kv, records: s.records }).start()).rejects.toThrow(/needs a store file/)
    } finally {
      s.close()
    }
  })
})
