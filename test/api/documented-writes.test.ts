/**
 * What docs/api.md says of the write answers and /health, held to the code:
 * adding a CID to a record with `PATCH /meta/<cid> {"cids/<other>": "true"}`
 * (then either CID addresses it), `updated` counting the `cids/` member a
 * first write adds, and `/health`'s `redis` field kept for the original's
 * clients, equal to `storage`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { testCid } from '../helpers/record-ops.js'

const harnesses: ApiHarness[] = []
afterEach(async () => { for (const h of harnesses.splice(0)) await h.close() })

describe('the documented write forms', () => {
  it('adds a CID with PATCH cids/<other>, and counts what changed in updated', async () => {
    const h = await startApi()
    harnesses.push(h)
    const [a, b] = [testCid(451), testCid(452)]
    const first = await h.app.inject({ method: 'PATCH', url: `/meta/${a}`, payload: { title: 'Blue River' } })
    // The title and the cids/<a> member that makes the address part of the new record.
    expect(first.json()).toMatchObject({ success: true, updated: 2, created: true })
    const add = await h.app.inject({ method: 'PATCH', url: `/meta/${a}`, payload: { [`cids/${b}`]: 'true' } })
    expect(add.json()).toMatchObject({ success: true, hashId: first.json().hashId, updated: 1, created: false })
    for (const addr of [a, b]) {
      const got = (await h.app.inject({ url: `/meta/${addr}` })).json()
      expect(got.hashId).toBe(first.json().hashId)
      expect(got.metadata).toEqual({ title: 'Blue River', [`cids/${a}`]: 'true', [`cids/${b}`]: 'true' })
    }
    expect((await h.app.inject({ url: `/api/meta/${b}` })).json().cids.sort()).toEqual([a, b].sort())
    // The same write again changes nothing.
    expect((await h.app.inject({ method: 'PATCH', url: `/meta/${a}`, payload: { [`cids/${b}`]: 'true' } })).json().updated).toBe(0)
    // PUT keeps the cids/ members it does not name, adds the ones it names, and counts what it deleted.
    const c = testCid(453)
    const put = await h.app.inject({ method: 'PUT', url: `/meta/${b}`, payload: { year: '1999', [`cids/${c}`]: 'true' } })
    expect(put.json()).toMatchObject({ success: true, updated: 3, created: false }) // year, cids/<c>, title deleted
    expect((await h.app.inject({ url: `/meta/${c}` })).json().metadata).toEqual({ year: '1999', [`cids/${a}`]: 'true', [`cids/${b}`]: 'true',
      [`cids/${c}`]: 'true' })
    // Deleting the member takes the CID off.
    expect((await h.app.inject({ method: 'DELETE', url: `/meta/${a}/cids/${c}` })).statusCode).toBe(200)
    expect((await h.app.inject({ url: `/meta/${c}` })).statusCode).toBe(404)
  })

  it('/health keeps the original\'s redis field, equal to storage', async () => {
    const h = await startApi()
    harnesses.push(h)
    const health = (await h.app.inject({ url: '/health' })).json()
    expect(health).toMatchObject({ status: 'ok', storage: true, redis: true })
  })
})
