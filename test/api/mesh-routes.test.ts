import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/api/index.js'
import { StandaloneMesh } from '../../src/mesh/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { testCid } from '../helpers/record-ops.js'

let h: ApiHarness | undefined
afterEach(async () => { await h?.close(); h = undefined })

describe('/api/mesh on a standalone node', () => {
  it('reports no mesh, and a digest that changes with the replicated range only', async () => {
    h = await startApi()
    const mesh = new StandaloneMesh(h.store.records)
    const app = buildApp({ kv: h.store.kv, records: h.store.records, mesh }, { filesPath: h.filesPath })
    try {
      const r = await app.inject({ url: '/api/mesh' })
      expect(r.statusCode).toBe(200)
      expect(r.json()).toMatchObject({ enabled: false, meshId: null, self: { peerId: 'test-node', addrs: [] }, peers: [] })
      const d0 = (await app.inject({ url: '/api/mesh/digest' })).json()
      expect(d0).toMatchObject({ keys: 0 })
      const rid = await h.store.records.mint('/files/x', 1, 1, { title: 't' })
      const d1 = (await app.inject({ url: '/api/mesh/digest' })).json()
      expect(d1.digest).not.toBe(d0.digest)
      expect(d1.keys).toBe(4)
      await h.store.records.addDuplicatePath(rid, '/files/copy')
      expect((await app.inject({ url: '/api/mesh/digest' })).json()).toEqual(d1)
    } finally {
      await app.close()
    }
  })

  it('answers 503 without a mesh, and needs the token when one is set', async () => {
    h = await startApi({ apiToken: 'tok' })
    expect((await h.app.inject({ url: '/api/mesh', headers: { authorization: 'Bearer tok' } })).statusCode).toBe(503)
    expect((await h.app.inject({ url: '/api/mesh/digest' })).statusCode).toBe(401)
  })
})

describe('writes while the clock is out of bound', () => {
  it('answer 503 clock_out_of_bound, retryable, with the gate\'s message, and pass again once it lifts', async () => {
    h = await startApi()
    const patch = async (): Promise<{ statusCode: number, json: () => any }> =>
      await h!.app.inject({ method: 'PATCH', url: `/meta/${testCid(1)}`, payload: { title: 't' } })
    // The gate is what the mesh installs (records' setClockGate); here it refuses by itself.
    h.store.records.setClockGate(() => ({ message: 'this node\'s clock is off by 3600000 ms against its peers', offsetMs: 3_600_000 }))
    const refused = await patch()
    expect(refused.statusCode).toBe(503)
    expect(refused.json()).toEqual({ error: 'clock_out_of_bound', message: 'this node\'s clock is off by 3600000 ms against its peers', retryable: true })
    expect(h.store.records.getFlat(testCid(1))).toBeUndefined()
    h.store.records.setClockGate(undefined)
    expect((await patch()).statusCode).toBe(200)
  })
})
