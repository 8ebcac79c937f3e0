/**
 * One test per matching rule of POST /api/metadata/search
 * (docs/api.md#search-and-editor-apimetadata). Every answer is also checked against the
 * reference scan (fixture.query).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { InvalidSearchRequestError, MAX_LIMIT } from '../../src/search/index.js'
import { ids, openFixture, type Fixture } from './fixture.js'

let f: Fixture
beforeEach(async () => { f = await openFixture() })
afterEach(async () => { await f.close() })

const mint = async (name: string, extra: Record<string, string> = {}): Promise<string> =>
  await f.store.records.mint(`/files/movies/${name}.mkv`, 1000, 1, extra)

describe('free text', () => {
  it('lower-cases the query and requires every token', async () => {
    const knight = await mint('k', { title: 'The Dark Knight' })
    await mint('j', { title: 'Dark Waters' })
    expect(ids(f.query({ query: 'DARK knight' }))).toEqual([knight])
    expect(ids(f.query({ query: 'dark joker' }))).toEqual([])
  })

  it('looks for tokens in title, fileName, originaltitle, showtitle and filePath, and nowhere else', async () => {
    const a = await mint('Amelie.2001', { originaltitle: 'Le Fabuleux Destin', plot: 'montmartre cafe' })
    const b = await mint('other', { showtitle: 'Fabuleux Show', fileName: 'destin.mkv' })
    expect(ids(f.query({ query: 'fabuleux destin' })).sort()).toEqual([a, b].sort())
    expect(ids(f.query({ query: 'amelie 2001' }))).toEqual([a]) // from filePath
    expect(ids(f.query({ query: 'montmartre' }))).toEqual([]) // plot is not in the haystack
  })

  it('does not let a token span two haystack fields', async () => {
    const x = await mint('x', { title: 'abc', fileName: 'def' })
    expect(ids(f.query({ query: 'abcdef' }))).toEqual([])
    expect(ids(f.query({ query: 'c\u00a0d' }))).toEqual([x]) // no-break space splits too: tokens "c" and "d"
  })

  it('matches when the whole lower-cased query is part of the root id', async () => {
    const a = await mint('a', { title: 'nothing alike' })
    const fragment = a.slice(10, 20)
    expect(ids(f.query({ query: fragment.toLowerCase() }))).toContain(a)
    expect(ids(f.query({ query: fragment }))).toContain(a) // the query is lower-cased too
    expect(ids(f.query({ query: `${fragment.slice(0, 5)} ${fragment.slice(5)}` }))).not.toContain(a) // whole query, spaces included
  })

  it('folds non-ASCII letters the same on both sides', async () => {
    const a = await mint('e', { title: 'ÉCOLE Élémentaire ΣΟΦΙΑ' })
    expect(ids(f.query({ query: 'école σοφια' }))).toEqual([a])
    expect(ids(f.query({ query: 'ÉLÉMENT' }))).toEqual([a])
  })

  it('treats a blank query as no query', async () => {
    const a = await mint('a')
    const b = await mint('b')
    expect(ids(f.query({ query: '  \t ' }))).toEqual([a, b])
  })
})

describe('filters', () => {
  it('ANDs filters and ORs the values of one filter', async () => {
    const a = await mint('a', { type: 'movie', year: '2001' })
    const b = await mint('b', { type: 'movie', year: '1999' })
    await mint('c', { type: 'episode', year: '2001' })
    expect(ids(f.query({ filters: [{ property: 'type', values: ['movie'] }, { property: 'year', values: ['2001', '1999'] }] }))).toEqual([a, b])
    expect(ids(f.query({ filters: [{ property: 'type', values: ['movie'] }, { property: 'year', values: ['2001'] }] }))).toEqual([a])
  })

  it('trims values, drops blank ones, and lets a filter without property or values match everything', async () => {
    const a = await mint('a', { type: 'movie' })
    const b = await mint('b', { type: 'episode' })
    expect(ids(f.query({ filters: [{ property: 'type', values: ['  movie  ', '   '] }] }))).toEqual([a])
    expect(ids(f.query({ filters: [{ property: 'type', values: ['', ' '] }] }))).toEqual([a, b])
    expect(ids(f.query({ filters: [{ property: '', values: ['movie'] }] }))).toEqual([a, b])
    expect(ids(f.query({ filters: [{ property: 'type' }] }))).toEqual([a, b])
  })

  it('probes the key-set shape <property>/<value> in any case, with a truthy value', async () => {
    const a = await mint('a', { 'genres/Action': 'true' })
    const b = await mint('b', { 'genres/action': '1' })
    await mint('c', { 'genres/action': 'false' })
    await mint('d', { 'genres/action': '0' })
    await mint('e', { 'genres/action': '' })
    expect(ids(f.query({ filters: [{ property: 'genres', values: ['ACTION'], exact: true }] }))).toEqual([a, b])
    expect(ids(f.query({ filters: [{ property: 'Genres', values: ['action'] }] }))).toEqual([a, b])
  })

  it('splits a flat value on commas and compares pieces case-insensitively, exact or substring', async () => {
    const a = await mint('a', { genre: 'Action, Science Fiction ,Drama' })
    const b = await mint('b', { genre: 'Dramatic' })
    expect(ids(f.query({ filters: [{ property: 'genre', values: ['drama'], exact: true }] }))).toEqual([a])
    expect(ids(f.query({ filters: [{ property: 'genre', values: ['science fiction'], exact: true }] }))).toEqual([a])
    expect(ids(f.query({ filters: [{ property: 'genre', values: ['drama'] }] }))).toEqual([a, b])
    expect(ids(f.query({ filters: [{ property: 'genre', values: ['action, science'] }] }))).toEqual([]) // no piece holds a comma
  })

  it('matches nothing on an absent field, and reads the flat field by its exact name', async () => {
    await mint('a', { Year: '2001' })
    const b = await mint('b', { year: '2001' })
    expect(ids(f.query({ filters: [{ property: 'rating', values: ['5'] }] }))).toEqual([])
    expect(ids(f.query({ filters: [{ property: 'year', values: ['2001'], exact: true }] }))).toEqual([b])
  })

  it('appends the legacy property/propertyValue pair as one more substring filter', async () => {
    const a = await mint('a', { type: 'movie', studio: 'Warner Bros' })
    await mint('b', { type: 'movie', studio: 'Pixar' })
    expect(ids(f.query({ property: 'studio', propertyValue: 'warner' }))).toEqual([a])
    expect(ids(f.query({ property: 'studio', propertyValue: 'warner', filters: [{ property: 'type', values: ['episode'] }] }))).toEqual([])
    expect(f.query({ property: 'studio', propertyValue: '' }).total).toBe(2) // blank value: matches everything
  })

  it('combines free text and filters', async () => {
    const a = await mint('a', { title: 'Alien', tmdbid: '348' })
    await mint('b', { title: 'Aliens', tmdbid: '679' })
    expect(ids(f.query({ query: 'alien', filters: [{ property: 'tmdbid', values: ['348'], exact: true }] }))).toEqual([a])
  })
})

describe('hashId', () => {
  it('reads exactly that root, total 1, and does not resolve a CID', async () => {
    const a = await mint('a', { title: 'A' })
    const cid = 'bafkreih5kapbjzq6o7bdsjg3m4ezcslmnxgs3kzkzbwgj2khrntmfybyyq'
    await f.store.records.addAlias(a, cid)
    const r = f.query({ hashId: a, query: 'does not matter' })
    expect(r.total).toBe(1)
    expect(r.results[0]).toEqual({ hashId: a, metadata: f.store.records.getFlat(a) })
    expect(f.query({ hashId: cid }).total).toBe(0)
    expect(f.query({ hashId: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }).total).toBe(0)
  })
})

describe('results', () => {
  it('come in root id order with the flat metadata, limit 0 meaning 100 and capped at MAX_LIMIT', async () => {
    const rids: string[] = []
    for (let i = 0; i < 120; i++) rids.push(await mint(`m${i}`, { title: `movie ${i}` }))
    const r = f.query({ query: 'movie', limit: 0 })
    expect(r.count).toBe(100)
    expect(r.total).toBe(120)
    expect(ids(r)).toEqual([...rids].sort().slice(0, 100))
    expect(r.results[0].metadata).toEqual(f.store.records.getFlat(r.results[0].hashId))
    expect(f.query({ query: 'movie', limit: MAX_LIMIT * 10 }).count).toBe(120)
  })

  it('refuse malformed requests with a clear error', () => {
    const bad: unknown[] = [
      { limit: -1 }, { limit: 1.5 }, { offset: -3 }, { query: 42 }, { filters: {} }, { filters: [null] },
      { filters: [{ property: 'a', values: 'x' }] }, { filters: [{ property: 'a', values: [1] }] },
      { filters: [{ property: 'a', values: ['x'], exact: 'yes' }] }, { cursor: 'not-ours' }, 'query'
    ]
    for (const req of bad) {
      expect(() => f.search.search(req as never), JSON.stringify(req)).toThrow(InvalidSearchRequestError)
    }
    expect(() => f.search.list(-1, 10)).toThrow(InvalidSearchRequestError)
  })
})

describe('list', () => {
  it('lists records in root id order with their display fields, total counting groups once', async () => {
    const a = await mint('a', { title: 'A', type: 'movie', year: '2001', plot: 'not listed' })
    const b = await mint('b')
    const l = f.search.list(0, 10)
    expect(l).toEqual({
      items: [
        { hashId: a, title: 'A', filePath: '/files/movies/a.mkv', type: 'movie', year: '2001' },
        { hashId: b, filePath: '/files/movies/b.mkv' }
      ],
      count: 2,
      total: 2
    })
    expect(f.search.list(1, 10).items.map(i => i.hashId)).toEqual([b])
    expect(f.search.list(0, 1).items.map(i => i.hashId)).toEqual([a])
  })
})
