/**
 * Paging beyond the original: offset, an opaque cursor, and a total that
 * counts matches.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ids, openFixture, type Fixture } from './fixture.js'

let f: Fixture
let rids: string[]
beforeEach(async () => {
  f = await openFixture()
  rids = []
  for (let i = 0; i < 25; i++) {
    rids.push(await f.store.records.mint(`/files/p/${i}.mkv`, i, i, { title: i % 2 === 0 ? `even film ${i}` : `odd film ${i}`, type: 'movie' }))
  }
  rids.sort()
})
afterEach(async () => { await f.close() })

describe.each([
  ['free text', { query: 'film' }],
  ['a filter', { filters: [{ property: 'type', values: ['movie'] }] }],
  ['no criteria', {}]
])('paging over %s', (_name, base) => {
  it('walks every match once with cursors, total counting all matches', () => {
    const seen: string[] = []
    let cursor: string | undefined
    for (let page = 0; page < 10; page++) {
      const r = f.query({ ...base, limit: 7, ...(cursor === undefined ? {} : { cursor }) })
      expect(r.total).toBe(25)
      seen.push(...ids(r))
      cursor = r.nextCursor
      if (cursor === undefined) break
    }
    expect(seen).toEqual(rids)
  })

  it('skips with offset, and combines offset with a cursor', () => {
    const r = f.query({ ...base, offset: 20, limit: 10 })
    expect(ids(r)).toEqual(rids.slice(20))
    expect(r.nextCursor).toBeUndefined()
    const first = f.query({ ...base, limit: 5 })
    const next = f.query({ ...base, limit: 5, offset: 5, cursor: first.nextCursor })
    expect(ids(next)).toEqual(rids.slice(10, 15))
    expect(f.query({ ...base, offset: 100 }).results).toEqual([])
  })
})

describe('cursors', () => {
  it('resume after the last root even when records were added before it', async () => {
    const first = f.query({ query: 'film', limit: 10 })
    await f.store.records.mergeFlat(rids[0], { title: 'even film changed' })
    await f.store.records.mint('/files/p/new.mkv', 1, 1, { title: 'new film' }) // sorts after every earlier root
    const rest = f.query({ query: 'film', limit: 100, cursor: first.nextCursor })
    expect(ids(rest)).toEqual([...rids.slice(10), ...ids(rest).slice(15)])
    expect(rest.total).toBe(26)
  })

  it('count only matches in total (the original returned the index size)', () => {
    const r = f.query({ query: 'odd', limit: 3 })
    expect(r.total).toBe(12)
    expect(r.count).toBe(3)
    expect(r.nextCursor).toBeDefined()
  })
})
