/**
 * A record is a root with at least one live `cids/` member (and a live
 * holder once it had one): a delete racing a later field write, arriving
 * through the mesh's apply path, leaves no counted record, and the counts,
 * listings, search and `/api/stats` agree on it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { RecordReplica } from '../../src/mesh/index.js'
import { formatHlc } from '../../src/records/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { testCid } from '../helpers/record-ops.js'

let h: ApiHarness | undefined
afterEach(async () => { await h?.close(); h = undefined })

const CID = testCid(44)
const OTHER = testCid(45)

describe('what counts as a record', () => {
  it('a delete and a later field write from two peers leave nothing counted, listed or found', async () => {
    h = await startApi()
    const { app, store } = h
    // A record a person titled, then: peer A deletes it, peer B (its clock 20 ms ahead) sets a rating it had not seen deleted.
    const { rid } = await store.records.mergeFlat(CID, { title: 'Racing husk' })
    await store.records.mergeFlat(OTHER, { title: 'A record that stays' })
    const now = Date.now()
    const replica = new RecordReplica(store.records)
    await replica.apply([{ key: `file:${rid}`, value: null, hlc: formatHlc({ ms: now + 5, counter: 0 }), origin: 'peer-a' }])
    await replica.apply([{ key: `file:${rid}/rating`, value: '5', hlc: formatHlc({ ms: now + 25, counter: 0 }), origin: 'peer-b' }])
    expect(store.kv.get(`file:${rid}/rating`)).toBe('5') // the write is kept (versions converge), but names no record

    expect((await app.inject({ url: `/meta/${rid}` })).statusCode).toBe(404)
    expect((await app.inject({ url: `/meta/${CID}` })).statusCode).toBe(404)
    expect((await app.inject({ url: '/meta' })).json()).toMatchObject({ count: 1, total: 1 })
    expect((await app.inject({ url: '/api/stats' })).json().records).toBe(1)
    const list = (await app.inject({ url: '/api/metadata/list?offset=0&limit=10' })).json()
    expect(list.total).toBe(1)
    expect(list.items.map((i: { hashId: string }) => i.hashId)).not.toContain(rid)
    await waitFor(async () => {
      const r = (await app.inject({ method: 'POST', url: '/api/metadata/search', payload: {} })).json()
      return r.total === 1
    }, { timeoutMs: 5000, what: 'search to count one record' })
    const found = (await app.inject({ method: 'POST', url: '/api/metadata/search', payload: { query: 'racing' } })).json()
    expect(found.total).toBe(0)
  })
})
