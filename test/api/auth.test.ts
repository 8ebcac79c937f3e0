import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { openSse } from '../helpers/sse-client.js'

const TOKEN = 'tok-0123456789abcdef'
const CID_A = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

let h: ApiHarness
beforeEach(async () => { h = await startApi({ apiToken: TOKEN }) })
afterEach(async () => { await h.close() })

const writes: Array<[string, string, unknown]> = [
  ['PUT', `/meta/${CID_A}`, { t: 'x' }],
  ['PATCH', `/meta/${CID_A}`, { t: 'x' }],
  ['DELETE', `/meta/${CID_A}`, undefined],
  ['PUT', `/meta/${CID_A}/t`, { value: 'x' }],
  ['DELETE', `/meta/${CID_A}/t`, undefined],
  ['POST', `/meta/${CID_A}/_add/t`, { value: 'x' }],
  ['POST', '/file/cid', { path: 'a' }],
  ['POST', '/api/files/register', { path: 'plugin/a' }],
  ['PUT', '/api/kv/value', { key: 'x:y', value: 'z' }],
  ['DELETE', '/api/kv/value?key=x:y', undefined],
  ['POST', '/api/metadata/search', {}],
  ['PUT', `/api/metadata/${CID_A}`, { t: 'x' }],
  ['DELETE', `/api/metadata/${CID_A}`, undefined]
]
const internalReads = ['/meta', `/meta/${CID_A}`, `/meta/${CID_A}/t`, '/status', '/api/stats', '/api/schema', '/api/kv/info', '/api/kv/keys',
  '/api/kv/value?key=x', '/api/files/tuples', '/api/metadata/list', '/api/metadata/hash-ids', '/api/events/meta', '/api/events/files']
const publicReads = ['/health', `/api/meta/${CID_A}`, `/file/${CID_A}`, `/api/file/${CID_A}`, `/api/file/${CID_A}/info`, '/docs']

describe('bearer token', () => {
  it('refuses every write without the right token, and writes nothing', async () => {
    const rows = h.store.kv.count('', '\u{10FFFF}')
    for (const auth of [undefined, 'Bearer wrong-token', `Basic ${TOKEN}`, `Bearer ${TOKEN}x`, TOKEN, 'Bearer']) {
      for (const [method, url, payload] of writes) {
        const r = await h.app.inject({ method: method as 'PUT', url, payload: payload as object, headers: auth === undefined ? {} : { authorization: auth } })
        expect(r.statusCode, `${method} ${url} with ${String(auth)}`).toBe(401)
        expect(r.json()).toMatchObject({ error: 'unauthorized', retryable: false })
        expect(r.headers['www-authenticate']).toMatch(/^Bearer/)
      }
    }
    expect(h.store.kv.count('', '\u{10FFFF}')).toBe(rows)
  })

  it('accepts writes with the token', async () => {
    const r = await h.app.inject({ method: 'PATCH', url: `/meta/${CID_A}`, payload: { t: 'x' }, headers: { authorization: `Bearer ${TOKEN}` } })
    expect(r.statusCode).toBe(200)
    const lower = await h.app.inject({ method: 'PATCH', url: `/meta/${CID_A}`, payload: { t: 'y' }, headers: { authorization: `bearer ${TOKEN}` } })
    expect(lower.statusCode).toBe(200)
  })

  it('keeps internal reads behind the token and the public CID surface open', async () => {
    for (const url of internalReads) {
      expect((await h.app.inject({ url })).statusCode, url).toBe(401)
      // With the token they get past auth (SSE routes are exercised over real HTTP elsewhere).
      if (!url.startsWith('/api/events')) expect((await h.app.inject({ url, headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, url).not.toBe(401)
    }
    for (const url of publicReads) {
      const r = await h.app.inject({ url })
      expect(r.statusCode, url).not.toBe(401)
      expect(r.statusCode, url).toBeLessThan(500)
    }
    expect((await h.app.inject({ method: 'HEAD', url: `/file/${CID_A}` })).statusCode).toBe(404)
    expect((await h.app.inject({ method: 'OPTIONS', url: `/meta/${CID_A}` })).statusCode).toBe(204)
  })

  it('gates the event streams too', async () => {
    const url = await h.listen()
    const denied = await openSse(`${url}/api/events/meta`)
    expect(denied.status).toBe(401)
    denied.close()
    const ok = await openSse(`${url}/api/events/meta`, { authorization: `Bearer ${TOKEN}` })
    expect(ok.status).toBe(200)
    ok.close()
  })
})
