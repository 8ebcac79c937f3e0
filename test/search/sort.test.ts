/**
 * `sort` beyond the original: matches ordered by a field's value, numbers as
 * numbers, text by its fold (case-insensitive, code point order: locale-free,
 * so every node orders alike), records without the field last, ties by
 * root id; offset paging over the sorted order; groups by their merged
 * value; excluded fields invisible. Every answer is also checked against
 * the reference scan (fixture.query).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { compareSortValues } from '../../src/search/paging.js'
import { InvalidSearchRequestError } from '../../src/search/errors.js'
import { ids, openFixture, type Fixture } from './fixture.js'

let f: Fixture
const byTitle = new Map<string, string>()
beforeEach(async () => {
  f = await openFixture({ excludePrefixes: ['secret/'] })
  byTitle.clear()
  const rows: Array<[string, Record<string, string>]> = [
    ['b', { year: '1999', votes: '900', type: 'movie' }],
    ['Alpha', { year: '2001', votes: '10000', type: 'movie' }],
    ['alpha', { year: '2001', votes: '25', type: 'episode' }],
    ['Émile', { year: '987', type: 'movie' }],
    ['zed', { votes: '9', type: 'movie', 'secret/rank': '1' }],
    ['10 things', { year: 'unknown', type: 'movie' }],
    ['9 lives', { year: '2001', type: 'movie' }]
  ]
  for (const [i, [title, rest]] of rows.entries()) {
    byTitle.set(title, await f.store.records.mint(`/files/s/${i}.mkv`, 1, i, { title, ...rest }))
  }
})
afterEach(async () => { await f.close() })

const titles = (r: ReturnType<Fixture['query']>): string[] => r.results.map(x => x.metadata.title)

describe('search sort', () => {
  it('orders text case-insensitively (ties by root id), numbers by value, missing values last in both directions', () => {
    const asc = f.query({ sort: 'title' })
    expect(asc.total).toBe(7)
    // Text by its fold in code point order ("10 things" is text, not a number; an accented letter after z);
    // "Alpha"/"alpha" fold equal, then raw code points decide.
    expect(titles(asc)).toEqual(['10 things', '9 lives', 'Alpha', 'alpha', 'b', 'zed', 'Émile'])
    expect(titles(f.query({ sort: '-title' }))).toEqual(['Émile', 'zed', 'b', 'alpha', 'Alpha', '9 lives', '10 things'])

    // zed has no year: last either way. Three 2001s tie and keep root id order.
    const year = f.query({ sort: 'year' })
    const tied = ['Alpha', 'alpha', '9 lives'].map(t => byTitle.get(t)!).sort()
    expect(ids(year)).toEqual([byTitle.get('Émile'), byTitle.get('b'), ...tied, byTitle.get('10 things'), byTitle.get('zed')])
    expect(ids(f.query({ sort: '-year' }))).toEqual([byTitle.get('10 things'), ...tied, byTitle.get('b'), byTitle.get('Émile'), byTitle.get('zed')])

    // Numeric, not string, order of counts.
    expect(titles(f.query({ sort: '-votes', limit: 4 }))).toEqual(['Alpha', 'b', 'alpha', 'zed'])
  })

  it('sorts the matches of a query, pages them with offset, and refuses a cursor', () => {
    const movies = f.query({ filters: [{ property: 'type', values: ['movie'], exact: true }], sort: '-votes', limit: 2 })
    expect(movies.total).toBe(6)
    expect(titles(movies)).toEqual(['Alpha', 'b'])
    expect(movies.nextCursor).toBeUndefined()
    const next = f.query({ filters: [{ property: 'type', values: ['movie'], exact: true }], sort: '-votes', limit: 2, offset: 2 })
    // After the counts, the movies without one, in root id order.
    const unsized = ['Émile', '10 things', '9 lives'].map(t => byTitle.get(t)!).sort()
    expect(ids(next)).toEqual([byTitle.get('zed'), unsized[0]])
    expect(titles(f.query({ query: 'alpha', sort: 'type' }))).toEqual(['alpha', 'Alpha'])
    const first = f.query({ limit: 2 })
    expect(() => f.search.search({ sort: 'title', cursor: first.nextCursor })).toThrow(InvalidSearchRequestError)
    expect(() => f.search.search({ sort: '-' })).toThrow(InvalidSearchRequestError)
  })

  it('sees a group by its merged value and an excluded field as missing', async () => {
    // zed's secret/rank is excluded: every record lacks it, so the order is root id order.
    expect(ids(f.query({ sort: 'secret/rank' }))).toEqual([...byTitle.values()].sort())
    // Two roots sharing a CID are one record, sorted by the merged (newest) title.
    const cid = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
    await f.store.records.mergeFlat(byTitle.get('b')!, { [`cids/${cid}`]: 'true' })
    await f.store.records.mergeFlat(byTitle.get('zed')!, { [`cids/${cid}`]: 'true', title: 'aaa first now' })
    const r = f.query({ sort: 'title' })
    expect(r.total).toBe(6)
    expect(titles(r)[2]).toBe('aaa first now')
  })
})

describe('search sort over many matches', () => {
  it('reads the values from the field index and still equals the reference scan, groups included', async () => {
    // Past the point-read threshold (2000 matches), the values come from one range read of the field index.
    await Promise.all(Array.from({ length: 2100 }, async (_, i) => await f.store.records.mint(`/files/many/${i}.mkv`, 1, i, {
      title: `Title ${(i * 7919) % 2100}`, ...(i % 3 === 0 ? { rating: String((i * 31) % 97 / 10) } : {}), ...(i % 5 === 0 ? { Rating: 'x' } : {})
    })))
    const cid = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
    await f.store.records.mergeFlat(byTitle.get('b')!, { [`cids/${cid}`]: 'true', rating: '0.05' })
    await f.store.records.mergeFlat(byTitle.get('zed')!, { [`cids/${cid}`]: 'true', rating: '99' })
    for (const sort of ['rating', '-rating', 'title', '-year']) {
      const r = f.query({ sort, limit: 60, offset: 30 })
      expect(r.total).toBe(2106)
      expect(r.count).toBe(60)
    }
    // The group's merged rating (its newest write, 99) puts it first in descending order.
    expect(ids(f.query({ sort: '-rating', limit: 1 }))).toEqual([[byTitle.get('b')!, byTitle.get('zed')!].sort()[0]])
  }, 30_000)
})

describe('compareSortValues', () => {
  it('puts numbers first by value, then text by fold in code point order, then raw', () => {
    const xs = ['b', '10', 'B', '-1', '2.5', 'a', 'á', '2']
    expect([...xs].sort(compareSortValues)).toEqual(['-1', '2', '2.5', '10', 'a', 'B', 'b', 'á'])
  })
})
