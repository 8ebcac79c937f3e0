/**
 * The search service is a Startable: creating it touches nothing, `start()`
 * builds its structures and registers its hook, and both `start()` and
 * `stop()` are idempotent (`stop()` before `start()` included).
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openNodeStore } from '../../src/records/index.js'
import { SearchNotStartedError, createSearch } from '../../src/search/index.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function store (): ReturnType<typeof openNodeStore> {
  const t = tmpDir()
  const s = openNodeStore({ path: path.join(t.dir, 's.db'), nodeId: 'n' })
  cleanups.push(() => { s.close(); t.cleanup() })
  return s
}

const tables = (s: ReturnType<typeof openNodeStore>): string[] =>
  s.kv.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'fts%' OR name LIKE 'search%'").pluck().all() as string[]

describe('search lifecycle', () => {
  it('does no work when created, builds on start, and answers only while started', async () => {
    const s = store()
    await s.records.mint('/files/a', 1, 1, { title: 'before start' })
    const search = createSearch({ kv: s.kv, records: s.records })
    expect(tables(s)).toEqual([]) // nothing created, nothing scheduled
    expect(() => search.search({ query: 'before' })).toThrow(SearchNotStartedError)
    await search.stop() // stop before start is fine
    await search.start()
    await search.start() // idempotent
    expect(tables(s).length).toBeGreaterThan(0)
    // A record written before start is found (the start-time repair), and one written after too (the hook).
    await s.records.mint('/files/b', 2, 2, { title: 'after start' })
    expect(search.search({ query: 'start' }).results).toHaveLength(2)
    await search.whenIdle()
    expect(search.ftsRowCount()).toBe(2)
    await search.stop()
    await search.stop() // idempotent
    expect(() => search.list(0, 10)).toThrow(SearchNotStartedError)
    // A restart reuses the one hook: rows stay one per record.
    await search.start()
    await s.records.mint('/files/c', 3, 3, { title: 'after restart' })
    await search.whenIdle()
    expect(search.ftsRowCount()).toBe(3)
    expect(search.search({ query: 'after' }).results).toHaveLength(2)
    await search.stop()
  })
})
