/**
 * The SQL the planner runs seeks the field index on its key (a query that
 * SQLite cannot answer that way silently scans the table instead), and the
 * planner collects the cheap part first.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FieldIndex } from '../../src/search/field-index.js'
import { DEFAULT_BUCKET_SHIFT, fillFieldsSql, fillFstatSql } from '../../src/search/search-schema.js'
import { openFixture, type Fixture } from './fixture.js'

let f: Fixture
beforeEach(async () => { f = await openFixture() })
afterEach(async () => { await f.close() })

describe('query plans', () => {
  const plan = (sql: string, params: unknown[]): string =>
    (f.store.kv.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map(r => r.detail).join(' | ')

  it('answers every field-index query by seeking search_field on its key, documents by id', () => {
    const fields = new FieldIndex(f.store.kv)
    for (const [name, st] of Object.entries(fields.statements)) {
      if (name === 'keyRange') continue // a primary-key range of one record's kv rows
      const params = Array.from({ length: st.source.split('?').length - 1 }, (_, i) => (i === 0 ? 'title' : i === 1 ? 'a' : 'b'))
      const p = plan(st.source, params)
      if (name === 'multiCount') {
        expect(p, name).toMatch(/SEARCH search_fstat USING PRIMARY KEY \(f=\?\)/)
        continue
      }
      expect(p, name).toMatch(/SEARCH (s|search_field) USING PRIMARY KEY \(f[=>]/)
      expect(p, name).not.toMatch(/SCAN (s|search_field|doc|kv)\b/)
      // A value probe seeks each bucket's part of the field (search-schema.ts), not the field's every entry.
      if (name === 'valueEq') expect(p, name).toMatch(/PRIMARY KEY \(f=\? AND b=\? AND v=\?\)/)
      if (name === 'valueRange') expect(p, name).toMatch(/PRIMARY KEY \(f=\? AND b=\? AND v>\? AND v<\?\)/)
      if (name !== 'fieldCount') expect(p, name).toMatch(/SEARCH doc USING INTEGER PRIMARY KEY \(rowid=\?\)/)
    }
  })

  it('indexes a batch by seeking each root\'s kv rows, its document ids read from the batch materialised once', () => {
    for (const sql of [fillFieldsSql(['categories/newznab/'], DEFAULT_BUCKET_SHIFT), fillFstatSql(['categories/newznab/'])]) {
      const p = (f.store.kv.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ docs: '[]' }) as Array<{ detail: string }>).map(r => r.detail).join(' | ')
      expect(p).toMatch(/MATERIALIZE x/)
      expect(p).toMatch(/SCAN x \| SEARCH kv USING PRIMARY KEY \(k>\? AND k<\?\)/)
      expect(p).not.toMatch(/SCAN kv\b/)
    }
  })

  it('lets the record layer find the roots holding a holders/ field through kv_holders (the watcher\'s boot hydration)', async () => {
    const r = f.store.records
    const mine = await r.mint('/files/a.mkv', 1, 1, { 'holders/node-a': 'true' })
    await r.mint('/files/b.mkv', 1, 1, { 'holders/node-b': 'true' })
    await r.mint('/files/c.mkv', 1, 1, { 'holders/NODE-A': 'true' }) // another node's id that lower-cases alike
    expect(r.fileTuplesWithField('holders/node-a')).toEqual([{ rid: mine, filePath: '/files/a.mkv', sizeByte: '1', mtimeNano: '1' }])
    expect(r.fileTuplesWithField('holders/NODE-A').map(t => t.filePath)).toEqual(['/files/c.mkv'])
    const sql = "SELECT k FROM kv WHERE k >= 'file:' AND k < 'file;' AND substr(k, 33, 8) = 'holders/' AND substr(k, 33) = ?"
    expect(plan(sql, ['holders/node-a'])).toMatch(/SEARCH kv USING (COVERING )?INDEX kv_holders/)
  })

  it('collects a selective exact filter first and checks the free text on its few candidates', async () => {
    const r = f.store.records
    let target = ''
    for (let i = 0; i < 300; i++) {
      const rid = await r.mint(`/files/m/${i}.mkv`, i, i, { title: `common title ${i}`, tmdbid: String(1000 + i) })
      if (i === 123) target = rid
    }
    await f.search.whenIdle()
    const { response, plan: used } = f.search.explain({ query: 'common title', filters: [{ property: 'tmdbid', values: ['1123'], exact: true }] })
    expect(response.results.map(x => x.hashId)).toEqual([target])
    expect(used?.parts.map(p => [p.name, p.collected])).toEqual([['filter:tmdbid', 1], ['text:fts', undefined]])
    expect(used?.parts[1].cost).toBeGreaterThanOrEqual(300) // every row holds "common title"
  })

  it('leaves a common token out of the FTS query and checks it on the rows the rare one found', async () => {
    const r = f.store.records
    await Promise.all(Array.from({ length: 300 }, async (_, i) =>
      await r.mint(`/files/c/${i}.mkv`, i, i, { title: i === 7 ? 'The Zyxwvut' : `the movie ${i}` })))
    await f.search.whenIdle()
    const { response, plan: used } = f.search.explain({ query: 'the zyxwvut' })
    expect(response.total).toBe(1)
    expect(used?.parts).toEqual([{ name: 'text:fts', cost: 1, detail: 'hay : ("zyxwvut")', collected: 1 }])
    // whatever the order the tokens come in; and two tokens of the same order are both looked up
    expect(f.search.explain({ query: 'zyxwvut the' }).plan?.parts[0].detail).toBe('hay : ("zyxwvut")')
    expect(f.search.explain({ query: 'movie the' }).plan?.parts[0].detail).toMatch(/^hay : \("(the|movie)" AND "(the|movie)"\)$/)
  })
})
