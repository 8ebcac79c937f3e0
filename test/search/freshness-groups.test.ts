/**
 * Results reflect a write as soon as it is acknowledged; a group of roots
 * (same content minted twice) is one result; excluded fields never match or
 * show; short tokens fall back to scans and stay right. Freshness and groups
 * are checked twice: with every write still staged (answered from the kv
 * rows of the staged roots), and with every write merged into the index
 * before the query.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { MergerOptions } from '../../src/search/testing.js'
import { NEVER_MERGES, ids, openFixture, type Fixture } from './fixture.js'
import { testCid } from '../helpers/record-ops.js'

const CID_A = 'bafkreih5kapbjzq6o7bdsjg3m4ezcslmnxgs3kzkzbwgj2khrntmfybyyq'
const CID_B = 'bafkreidvbhs33ighmljlvr7zbv2ywwzcmp5adtf4kqvlly67cy56bdtmve'
const CID_C = testCid(3)

let f: Fixture
afterEach(async () => { await f.close() })

describe.each([
  ['every write still staged', NEVER_MERGES, false],
  ['every write merged before the query', undefined, true]
] as Array<[string, MergerOptions | undefined, boolean]>)('%s', (_mode, merger, settle) => {
  /** A write, then (in the merged mode) the merge of everything it staged. */
  const w = async <T>(p: Promise<T>): Promise<T> => {
    const v = await p
    if (settle) await f.search.whenIdle()
    return v
  }

  describe('freshness', () => {
    it('sees a write, an update and a delete as soon as each is acknowledged', async () => {
      f = await openFixture({ merger })
      const r = f.store.records
      const a = await w(r.mint('/files/a.mkv', 1, 1, { title: 'Blade Runner' }))
      expect(ids(f.query({ query: 'blade' }))).toEqual([a])
      await w(r.mergeFlat(a, { title: 'Arrival' }))
      expect(ids(f.query({ query: 'blade' }))).toEqual([])
      expect(ids(f.query({ query: 'arrival' }))).toEqual([a])
      await w(r.setProperty(a, 'tmdbid', '329865'))
      expect(ids(f.query({ filters: [{ property: 'tmdbid', values: ['329865'], exact: true }] }))).toEqual([a])
      await w(r.deleteProperty(a, 'title'))
      expect(ids(f.query({ query: 'arrival' }))).toEqual([])
      await w(r.deleteRoot(a))
      expect(f.query({ query: 'files' }).total).toBe(0)
      expect(f.query({ filters: [{ property: 'tmdbid', values: ['329865'] }] }).total).toBe(0)
      await f.search.whenIdle()
      expect(f.search.ftsRowCount()).toBe(0)
    })

    it('keeps up with many writes committed in one group transaction', async () => {
      f = await openFixture({ merger })
      const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta']
      const rids = await Promise.all(Array.from({ length: 200 }, async (_, i) =>
        await f.store.records.mint(`/files/batch/${i}.mkv`, i, i, { title: `batch title ${words[i % 7]}` })))
      expect(f.query({ query: 'batch gamma' }).total).toBe(rids.filter((_, i) => i % 7 === 2).length)
      await Promise.all(rids.slice(0, 50).map(async rid => await f.store.records.deleteRoot(rid)))
      if (settle) await f.search.whenIdle()
      expect(f.query({ query: 'batch' }).total).toBe(150)
    })
  })

  describe('groups', () => {
    it('shows a group once, under its canonical root, with the merged document', async () => {
      f = await openFixture({ merger })
      const r = f.store.records
      const a = await w(r.mint('/files/one/movie.mkv', 5, 1, { [`cids/${CID_A}`]: 'true', title: 'Shared Movie' }))
      const b = await w(r.mint('/files/two/movie.mkv', 5, 1, { [`cids/${CID_A}`]: 'true', year: '2004', 'genres/drama': 'true' }))
      const canon = [a, b].sort()[0]
      const other = [a, b].sort()[1]
      const byText = f.query({ query: 'shared' })
      expect(ids(byText)).toEqual([canon])
      expect(byText.total).toBe(1)
      expect(byText.results[0].metadata).toEqual(r.getFlat(canon))
      expect(byText.results[0].metadata.year).toBe('2004')
      // fields of either member match, and the group still counts once
      expect(ids(f.query({ query: 'movie', filters: [{ property: 'year', values: ['2004'] }, { property: 'genres', values: ['Drama'] }] }))).toEqual([canon])
      expect(f.query({ query: 'mkv' }).total).toBe(1)
      expect(f.query({}).total).toBe(1)
      expect(ids(f.query({ query: other.slice(6, 16).toLowerCase() }))).toEqual([canon])
      expect(f.search.list(0, 10).items.map(i => i.hashId)).toEqual([canon])
      await f.search.whenIdle()
      expect(f.search.ftsRowCount()).toBe(1)
    })

    it('matches tokens found in different members of a group joined by an alias alone', async () => {
      f = await openFixture({ merger })
      const r = f.store.records
      const a = await w(r.mint('/files/x/first.mkv', 5, 1, { title: 'Northern Lights' }))
      const b = await w(r.mint('/files/y/second.mkv', 5, 1, { showtitle: 'Aurora Borealis' }))
      expect(f.query({ query: 'northern borealis' }).total).toBe(0)
      await w(r.addAlias(a, CID_A))
      await w(r.addAlias(b, CID_A))
      expect(ids(f.query({ query: 'northern borealis' }))).toEqual([[a, b].sort()[0]])
      await f.search.whenIdle()
      expect(f.search.ftsRowCount()).toBe(1)
      // the FTS alone (no per-candidate check) already finds the group: its one row holds the merged haystack
      await f.search.whenIdle()
      expect(f.search.explain({ query: 'northern borealis' }).plan?.parts[0].collected).toBe(1)
    })

    it('splits back into two results when the shared CID goes, and survives deleting the canonical root', async () => {
      f = await openFixture({ merger })
      const r = f.store.records
      const a = await w(r.mint('/files/a.mkv', 5, 1, { [`cids/${CID_A}`]: 'true', [`cids/${CID_B}`]: 'true', title: 'Twin' }))
      // b keeps a CID of its own once the shared one goes: a root with no cids/ member left is no record.
      const b = await w(r.mint('/files/b.mkv', 5, 1, { [`cids/${CID_A}`]: 'true', [`cids/${CID_C}`]: 'true', title: 'Twin copy' }))
      expect(f.query({ query: 'twin' }).total).toBe(1)
      await w(r.mergeFlat(a, {})) // no-op write: nothing changes
      await w(r.deleteProperty(b, `cids/${CID_A}`))
      expect(f.query({ query: 'twin' }).total).toBe(2)
      await f.search.whenIdle()
      expect(f.search.ftsRowCount()).toBe(2)
      await w(r.addAlias(b, CID_B)) // joins them again without touching a haystack field
      expect(f.query({ query: 'twin' }).total).toBe(1)
      await f.search.whenIdle()
      expect(f.search.ftsRowCount()).toBe(1)
      await w(r.deleteRoot([a, b].sort()[0]))
      expect(f.query({ query: 'twin' }).total).toBe(0) // deleteRoot removes the whole group
    })
  })
})

describe('excluded prefixes', () => {
  it('leaves categories/newznab/ out of matching and of results by default', async () => {
    f = await openFixture()
    const a = await f.store.records.mint('/files/a.mkv', 1, 1, { title: 'Film', 'categories/newznab/2040': 'Movies > HD', 'categories/other': 'x' })
    expect(f.query({ filters: [{ property: 'categories/newznab/2040', values: ['movies'] }] }).total).toBe(0)
    expect(f.query({ filters: [{ property: 'categories', values: ['newznab/2040'] }] }).total).toBe(0)
    const r = f.query({ query: 'film' })
    expect(ids(r)).toEqual([a])
    expect(r.results[0].metadata).not.toHaveProperty('categories/newznab/2040')
    expect(r.results[0].metadata['categories/other']).toBe('x')
    expect(f.query({ hashId: a }).results[0].metadata).not.toHaveProperty('categories/newznab/2040')
  })

  it('follows the configured prefixes, haystack fields included, rebuilding rows when they change', async () => {
    f = await openFixture({ excludePrefixes: ['title', 'secret/'] })
    const a = await f.store.records.mint('/files/a.mkv', 1, 1, { title: 'Hidden Title', 'secret/x': 'y', 'categories/newznab/1': 'kept' })
    expect(f.query({ query: 'hidden' }).total).toBe(0)
    expect(f.query({ filters: [{ property: 'categories/newznab/1', values: ['kept'] }] }).total).toBe(1)
    expect(f.query({ hashId: a }).results[0].metadata).toEqual({
      filePath: '/files/a.mkv', sizeByte: '1', mtimeNano: '1', 'categories/newznab/1': 'kept'
    })
    await f.reopen({ excludePrefixes: [] })
    expect(ids(f.query({ query: 'hidden' }))).toEqual([a])
    expect(f.query({ filters: [{ property: 'secret/x', values: ['y'] }] }).total).toBe(1)
  })
})

describe('short queries', () => {
  it('answers tokens under 3 characters by scanning, alone or beside long ones', async () => {
    f = await openFixture()
    const r = f.store.records
    const a = await r.mint('/files/x/Up.2009.mkv', 1, 1, { title: 'Up' })
    const b = await r.mint('/files/x/It.2017.mkv', 1, 1, { title: 'It', originaltitle: '日本 語' })
    const c = await r.mint('/files/x/Upgrade.2018.mkv', 1, 1, { title: 'Upgrade' })
    expect(ids(f.query({ query: 'up' }))).toEqual([a, c])
    expect(ids(f.query({ query: 'u' }))).toEqual([a, c])
    expect(ids(f.query({ query: 'up 2018' }))).toEqual([c])
    expect(ids(f.query({ query: '日本' }))).toEqual([b])
    expect(ids(f.query({ query: '語 it' }))).toEqual([b])
    expect(f.query({ query: 'x' }).total).toBe(3)
    expect(f.query({ filters: [{ property: 'title', values: ['u'] }] }).total).toBe(2)
    expect(f.query({ filters: [{ property: 'title', values: ['it'], exact: true }] }).total).toBe(1)
  })
})
