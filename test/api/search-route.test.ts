/**
 * `GET /api/search?q=…`: the search language in a query string (words,
 * field:value, field:=value, quotes, a bare CID) answers what the POST form
 * answers for the request it stands for, pages the same way, and is in the
 * OpenAPI document.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { parseQuery } from '../../src/api/search-query.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { testCid } from '../helpers/record-ops.js'

const harnesses: ApiHarness[] = []
afterEach(async () => { for (const h of harnesses.splice(0)) await h.close() })

const CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'

async function seeded (): Promise<ApiHarness> {
  const h = await startApi()
  harnesses.push(h)
  const put = async (addr: string, fields: Record<string, string>): Promise<void> => {
    const r = await h.app.inject({ method: 'PATCH', url: `/meta/${addr}`, payload: fields })
    expect(r.statusCode, r.body).toBe(200)
  }
  await put(CID, { title: 'Blue River', year: '1999', genres: 'drama|noir', type: 'movie' })
  for (let i = 0; i < 5; i++) await put(testCid(i), { title: `Red Hill ${i}`, year: String(2000 + i), type: 'movie' })
  return h
}

describe('GET /api/search', () => {
  it('answers the search the language stands for, as the POST form does', async () => {
    const h = await seeded()
    for (const q of ['blue', 'river blue', 'year:=1999', 'genres:noir', 'title:"red hill" year:2003', CID, 'red year:2001 year:2002', '']) {
      const get = await h.app.inject({ method: 'GET', url: `/api/search?q=${encodeURIComponent(q)}` })
      expect(get.statusCode, get.body).toBe(200)
      const post = await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: parseQuery(q) })
      expect(get.json(), q).toEqual(post.json())
    }
    const one = (await h.app.inject({ url: '/api/search?q=genres:noir' })).json()
    expect(one.total).toBe(1)
    expect(one.results[0].metadata.title).toBe('Blue River')
    expect(one.results[0].canonical_cid).toBe(CID)
    expect((await h.app.inject({ url: `/api/search?q=${CID}` })).json().total).toBe(1)
    expect((await h.app.inject({ url: '/api/search?q=year:%3D2002' })).json().results.map((r: { metadata: { title: string } }) =>
      r.metadata.title)).toEqual(['Red Hill 2'])
    // No q: every record.
    expect((await h.app.inject({ url: '/api/search' })).json().total).toBe(6)
  })

  it('pages with limit, offset, cursor and sort, and refuses what the POST form refuses', async () => {
    const h = await seeded()
    const sorted = (await h.app.inject({ url: '/api/search?q=red&sort=-year&limit=2&offset=1' })).json()
    expect(sorted.total).toBe(5)
    expect(sorted.results.map((r: { metadata: { year: string } }) => r.metadata.year)).toEqual(['2003', '2002'])
    const first = (await h.app.inject({ url: '/api/search?q=type:movie&limit=2' })).json()
    expect(first.nextCursor).toBeTypeOf('string')
    const next = (await h.app.inject({ url: `/api/search?q=type:movie&limit=2&cursor=${encodeURIComponent(first.nextCursor as string)}` })).json()
    const post = (await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { ...parseQuery('type:movie'), limit: 2,
      cursor: first.nextCursor } })).json()
    expect(next).toEqual(post)
    for (const bad of ['limit=-1', 'limit=x', 'offset=1.5', 'bogus=1', `q=${'x'.repeat(1025)}`]) {
      const r = await h.app.inject({ url: `/api/search?${bad}` })
      expect(r.statusCode, bad).toBe(400)
      expect(r.json().error, bad).toBe('schema_violation')
    }
    const cursorWithSort = await h.app.inject({ url: `/api/search?sort=year&cursor=${encodeURIComponent(first.nextCursor as string)}` })
    expect(cursorWithSort.statusCode).toBe(400)
    expect(cursorWithSort.json().error).toBe('invalid_search_request')
  })

  it('is in the OpenAPI document, and needs the token when one is set', async () => {
    const h = await startApi({ apiToken: 'search-route-token-01' })
    harnesses.push(h)
    const doc = (await h.app.inject({ url: '/docs/json' })).json()
    const params = (doc.paths['/api/search'].get.parameters as Array<{ name: string }>).map(p => p.name).sort()
    expect(params).toEqual(['cursor', 'limit', 'offset', 'q', 'sort'])
    expect((await h.app.inject({ url: '/api/search?q=x' })).statusCode).toBe(401)
    expect((await h.app.inject({ url: '/api/search?q=x', headers: { authorization: 'Bearer search-route-token-01' } })).statusCode).toBe(200)
  })
})
