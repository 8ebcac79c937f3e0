/**
 * The SQL the planner runs uses the field indexes as covering indexes (the
 * query must repeat the index expressions exactly, or SQLite silently falls
 * back to scanning the table), and the planner collects the cheap part first.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FieldIndex } from '../../src/search/field-index.js'
import { openFixture, type Fixture } from './fixture.js'

let f: Fixture
beforeEach(async () => { f = await openFixture() })
afterEach(async () => { await f.close() })

describe('query plans', () => {
  it('answers every field-index query from kv_field_v or kv_field_multi alone', () => {
    const fields = new FieldIndex(f.store.kv)
    for (const [name, st] of Object.entries(fields.statements)) {
      if (name === 'keyRange') continue // a primary-key range of one record
      const params = Array.from({ length: st.source.split('?').length - 1 }, (_, i) => (i === 0 ? 'title' : i === 1 ? 'a' : 'b'))
      const plan = (f.store.kv.prepare(`EXPLAIN QUERY PLAN ${st.source}`).all(...params) as Array<{ detail: string }>).map(r => r.detail).join(' | ')
      const index = name.startsWith('multi') ? 'kv_field_multi' : 'kv_field_v'
      expect(plan, name).toMatch(new RegExp(`(SEARCH|SCAN) kv USING COVERING INDEX ${index}\\b`))
    }
  })

  it('lets the record layer find the roots holding a field through kv_field_v (the watcher\'s boot hydration)', async () => {
    const r = f.store.records
    const mine = await r.mint('/files/a.mkv', 1, 1, { 'holders/node-a': 'true' })
    await r.mint('/files/b.mkv', 1, 1, { 'holders/node-b': 'true' })
    await r.mint('/files/c.mkv', 1, 1, { 'holders/NODE-A': 'true' }) // lower-cases alike; must not be taken for ours
    expect(r.fileTuplesWithField('holders/node-a')).toEqual([{ rid: mine, filePath: '/files/a.mkv', sizeByte: '1', mtimeNano: '1' }])
    const sql = "SELECT k FROM kv WHERE k>='file:' AND k<'file;' AND instr(k,'/')>0 AND lower(substr(k,instr(k,'/')+1)) = ?"
    const plan = (f.store.kv.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('holders/node-a') as Array<{ detail: string }>).map(x => x.detail).join(' | ')
    expect(plan).toMatch(/SEARCH kv USING COVERING INDEX kv_field_v/)
  })

  it('collects a selective exact filter first and checks the free text on its few candidates', async () => {
    const r = f.store.records
    let target = ''
    for (let i = 0; i < 300; i++) {
      const rid = await r.mint(`/files/m/${i}.mkv`, i, i, { title: `common title ${i}`, tmdbid: String(1000 + i) })
      if (i === 123) target = rid
    }
    const { response, plan } = f.search.explain({ query: 'common title', filters: [{ property: 'tmdbid', values: ['1123'], exact: true }] })
    expect(response.results.map(x => x.hashId)).toEqual([target])
    expect(plan?.parts.map(p => [p.name, p.collected])).toEqual([['filter:tmdbid', 1], ['text:fts', undefined]])
    expect(plan?.parts[1].cost).toBeGreaterThanOrEqual(300) // every row holds "common title"
  })

  it('leaves a common token out of the FTS query and checks it on the rows the rare one found', async () => {
    const r = f.store.records
    await Promise.all(Array.from({ length: 300 }, async (_, i) =>
      await r.mint(`/files/c/${i}.mkv`, i, i, { title: i === 7 ? 'The Zyxwvut' : `the movie ${i}` })))
    const { response, plan } = f.search.explain({ query: 'the zyxwvut' })
    expect(response.total).toBe(1)
    expect(plan?.parts).toEqual([{ name: 'text:fts', cost: 1, detail: 'hay : ("zyxwvut")', collected: 1 }])
    // whatever the order the tokens come in; and two tokens of the same order are both looked up
    expect(f.search.explain({ query: 'zyxwvut the' }).plan?.parts[0].detail).toBe('hay : ("zyxwvut")')
    expect(f.search.explain({ query: 'movie the' }).plan?.parts[0].detail).toMatch(/^hay : \("(the|movie)" AND "(the|movie)"\)$/)
  })
})
