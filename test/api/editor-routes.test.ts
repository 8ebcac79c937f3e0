/**
 * The original metadata editor's remaining routes (docs/design/original.md#routes): one property
 * read and write, a batch of updates with per-item results, and clear; and
 * the search filter without a property, which matches everything as in the
 * original.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const CID_A = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
const CID_B = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const CID_C = 'bagacbabaec7v3fu2ygzh3e2sybg3fbzmisry2hbtpmck6vx3yftea6vzq35r4'
const TOKEN = 'editor-secret-token'

let h: ApiHarness
afterEach(async () => { await h.close() })

describe('GET and PUT /api/metadata/{hashId}/property', () => {
  it('writes and reads one field, by CID or record id, with the original\'s shapes', async () => {
    h = await startApi()
    const put = await h.app.inject({ method: 'PUT', url: `/api/metadata/${CID_A}/property`, payload: { property: 'titles/en', value: 'Alien' } })
    expect(put.statusCode).toBe(200)
    const rid = h.store.records.resolveRoot(CID_A)!
    expect(put.json()).toEqual({ status: 'ok', hashId: rid, property: 'titles/en', value: 'Alien', message: 'Property updated successfully' })
    for (const addr of [CID_A, rid]) {
      const got = await h.app.inject({ url: `/api/metadata/${addr}/property?property=titles%2Fen` })
      expect(got.json()).toEqual({ hashId: rid, property: 'titles/en', value: 'Alien' })
    }
    expect((await h.app.inject({ url: `/api/metadata/${CID_A}/property?property=nope` })).json()).toMatchObject({ error: 'unknown_property' })
    expect((await h.app.inject({ url: `/api/metadata/${CID_B}/property?property=title` })).json()).toMatchObject({ error: 'unknown_root' })
    expect((await h.app.inject({ url: `/api/metadata/${CID_A}/property` })).statusCode).toBe(400)
    const bad = await h.app.inject({ method: 'PUT', url: `/api/metadata/${CID_A}/property`, payload: { property: 'midhash256', value: 'x' } })
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'deprecated_field'])
    expect((await h.app.inject({ method: 'PUT', url: `/api/metadata/${CID_A}/property`, payload: { property: 'x', value: 5 } })).statusCode).toBe(400)
  })
})

describe('POST /api/metadata/batch', () => {
  it('applies each update on its own and reports each', async () => {
    h = await startApi()
    await h.store.records.mergeFlat(CID_B, { title: 'B' })
    const ridB = h.store.records.resolveRoot(CID_B)!
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/metadata/batch',
      payload: {
        updates: [
          { hashId: CID_A, metadata: { title: 'A', processingStatus: 'done' } },
          { hashId: ridB, properties: [{ property: 'year', value: '1979' }], metadata: { genre: 'Horror' } },
          { hashId: 'not-an-address', metadata: { title: 'x' } },
          { hashId: CID_C, metadata: { good: 'no', canonical_cid: 'z' } },
          { hashId: CID_B, properties: { rating: '8.5' } }
        ]
      }
    })
    expect(r.statusCode).toBe(200)
    const body = r.json()
    const ridA = h.store.records.resolveRoot(CID_A)!
    expect(body).toMatchObject({ status: 'completed', total: 5, success: 3, errors: 2 })
    expect(body.results.map((x: { hashId: string, status: string }) => [x.hashId, x.status])).toEqual([
      [ridA, 'ok'], [ridB, 'ok'], ['not-an-address', 'error'], [CID_C, 'error'], [ridB, 'ok']
    ])
    expect(body.results[2].error).toMatch(/address/)
    expect(body.results[3].error).toMatch(/canonical_cid/)
    expect(h.store.records.getFlat(ridA)).toEqual({ title: 'A', [`cids/${CID_A}`]: 'true' }) // processingStatus dropped, as the editor's PUT
    expect(h.store.records.getFlat(ridB)).toMatchObject({ title: 'B', year: '1979', genre: 'Horror', rating: '8.5' })
    expect(h.store.records.resolveRoot(CID_C)).toBeUndefined() // the failed update wrote nothing, not even its good field
  })

  it('refuses an empty or malformed batch whole', async () => {
    h = await startApi()
    for (const payload of [{ updates: [] }, { updates: 'x' }, {}, { updates: [{ metadata: { a: 'b' } }] },
      { updates: [{ hashId: CID_A, metadata: { a: 5 } }] }]) {
      const r = await h.app.inject({ method: 'POST', url: '/api/metadata/batch', payload })
      expect([r.statusCode, r.json().error], JSON.stringify(payload)).toEqual([400, 'schema_violation'])
    }
    expect(h.store.records.countRecords()).toBe(0)
  })
})

describe('POST /api/metadata/clear', () => {
  it('needs the token when one is set, removes every record and says how many', async () => {
    h = await startApi({ apiToken: TOKEN })
    const auth = { authorization: `Bearer ${TOKEN}` }
    await h.store.records.mergeFlat(CID_A, { title: 'A' })
    await h.store.records.mergeFlat(CID_B, { title: 'B' })
    // Two roots sharing a CID are one record: counted once.
    await h.store.records.mint('/files/x.mkv', 1, 1n, { [`cids/${CID_C}`]: 'true' })
    await h.store.records.mint('/files/y.mkv', 1, 1n, { [`cids/${CID_C}`]: 'true' })
    expect(h.store.records.countRecords()).toBe(3)
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/clear' })).statusCode).toBe(401)
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/clear', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401)
    expect(h.store.records.countRecords()).toBe(3)
    const r = await h.app.inject({ method: 'POST', url: '/api/metadata/clear', headers: auth })
    expect(r.json()).toEqual({ status: 'ok', message: 'Metadata cleared', deletedCount: 3 })
    expect(h.store.records.countRecords()).toBe(0)
    expect((await h.app.inject({ url: '/meta', headers: auth })).json()).toMatchObject({ hashIds: [], count: 0 })
    for (const c of [CID_A, CID_B, CID_C]) expect((await h.app.inject({ url: `/api/meta/${c}` })).statusCode).toBe(404)
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/clear', headers: auth })).json().deletedCount).toBe(0)
  })
})

describe('search filters without a property', () => {
  it('match everything, as in the original (they used to be a 400)', async () => {
    h = await startApi()
    await h.store.records.mergeFlat(CID_A, { title: 'Alien' })
    await h.store.records.mergeFlat(CID_B, { title: 'Aliens' })
    for (const filters of [[{ values: ['x'] }], [{ property: '', values: ['x'] }], [{ property: 'title' }], [{}]]) {
      const r = await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { filters } })
      expect([r.statusCode, r.json().total], JSON.stringify(filters)).toEqual([200, 2])
    }
  })
})
