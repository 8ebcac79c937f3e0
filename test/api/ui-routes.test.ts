/**
 * The routes the web page adds: the page itself (`/`, `/ui/…`, `/cid/…`,
 * `/ui/assets/…`), `GET /api/records/{hash}` (the record with its field
 * versions) and `canonical_cid` on search hits; and that the routes that
 * were there before answer as before.
 */
import fs from 'node:fs'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { canonicalCid } from '../../src/cid/index.js'
import { parseHlc } from '../../src/records/index.js'
import { apiFields, syntheticRecord } from '../../bench/lib/synthetic.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const UI_DIST = path.resolve(import.meta.dirname, '../../ui/dist')
const TOKEN = 'route-test-token-0123'
const harnesses: ApiHarness[] = []

afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close()
})

async function api (opts: Parameters<typeof startApi>[0] = {}): Promise<ApiHarness> {
  const h = await startApi({ uiPath: UI_DIST, ...opts })
  harnesses.push(h)
  return h
}

describe('the web page routes', () => {
  it('answers index.html on every view address, with a CSP, and the assets with ETags and gzip', async () => {
    const h = await api()
    const index = fs.readFileSync(path.join(UI_DIST, 'index.html'), 'utf8')
    for (const url of ['/', '/?q=blue%20river', '/ui', '/ui/node', '/cid/bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e']) {
      const r = await h.app.inject({ method: 'GET', url })
      expect(r.statusCode, url).toBe(200)
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(r.body).toBe(index)
      expect(r.headers['content-security-policy']).toContain("script-src 'self'")
      expect(r.headers['content-security-policy']).toContain("frame-ancestors 'none'")
    }
    // The shell links only assets the node serves itself.
    const links = [...index.matchAll(/(?:src|href)="([^"]+)"/g)].map(m => m[1]).filter(u => !u.startsWith('data:') && u !== '/docs')
    expect(links.sort()).toEqual(['/ui/assets/app.css', '/ui/assets/app.js'])
    for (const url of links) {
      const file = fs.readFileSync(path.join(UI_DIST, path.basename(url)))
      const plain = await h.app.inject({ method: 'GET', url })
      expect(plain.statusCode).toBe(200)
      expect(plain.rawPayload.equals(file)).toBe(true)
      expect(plain.headers['x-content-type-options']).toBe('nosniff')
      const etag = plain.headers.etag as string
      expect(etag).toMatch(/^"[\w-]{22}"$/)
      const zipped = await h.app.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip, br' } })
      expect(zipped.headers['content-encoding']).toBe('gzip')
      expect(gunzipSync(zipped.rawPayload).equals(file)).toBe(true)
      expect(zipped.rawPayload.length).toBeLessThan(file.length)
      const again = await h.app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })
      expect(again.statusCode).toBe(304)
      expect(again.body).toBe('')
    }
    expect((await h.app.inject({ method: 'GET', url: '/ui/assets/app.js' })).headers['content-type']).toBe('text/javascript; charset=utf-8')
    const missing = await h.app.inject({ method: 'GET', url: '/ui/assets/nope.js' })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({ error: 'not_found' })
    // A traversal attempt names no file in the folder.
    expect((await h.app.inject({ method: 'GET', url: '/ui/assets/..%2F..%2Fpackage.json' })).statusCode).toBe(404)
  })

  it('is public on a node with a token, while the data behind it is not', async () => {
    const h = await api({ apiToken: TOKEN })
    for (const url of ['/', '/ui/node', '/cid/x', '/ui/assets/app.js']) expect((await h.app.inject({ method: 'GET', url })).statusCode, url).toBe(200)
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: {} })).statusCode).toBe(401)
    expect((await h.app.inject({ method: 'GET', url: '/api/records/01M8PZ0DRKEHGVM2JDNA6Z8363' })).statusCode).toBe(401)
  })

  it('leaves the other routes as they were', async () => {
    const h = await api()
    const rec = syntheticRecord(1)
    expect((await h.app.inject({ method: 'PATCH', url: `/meta/${rec.cid}`, payload: apiFields(rec) })).statusCode).toBe(200)
    expect((await h.app.inject({ method: 'GET', url: '/health' })).json()).toMatchObject({ status: 'ok' })
    expect((await h.app.inject({ method: 'GET', url: '/docs' })).json()).toHaveProperty('openapi')
    expect((await h.app.inject({ method: 'GET', url: `/meta/${rec.cid}` })).json()).toMatchObject({ metadata: { title: rec.fields.title } })
    expect((await h.app.inject({ method: 'GET', url: `/api/meta/${rec.cid}` })).json()).toMatchObject({ cid: rec.cid })
    expect((await h.app.inject({ method: 'GET', url: `/file/${rec.cid}` })).json()).toMatchObject({ error: 'unknown_cid' })
    const nope = await h.app.inject({ method: 'GET', url: '/nothing/here' })
    expect(nope.statusCode).toBe(404)
    expect(nope.json()).toMatchObject({ error: 'not_found' })
    // The page's routes stay out of the OpenAPI document (they serve no data).
    const paths = Object.keys((await h.app.inject({ method: 'GET', url: '/docs' })).json().paths as Record<string, unknown>)
    expect(paths).toContain('/api/records/{hash}')
    expect(paths.filter(p => p === '/' || p.startsWith('/ui') || p.startsWith('/cid'))).toEqual([])
  })

  it('says the page is not built when ui/dist is missing, and serves no page when none is configured', async () => {
    const h = await api({ uiPath: path.join(UI_DIST, 'no-such-folder') })
    const r = await h.app.inject({ method: 'GET', url: '/' })
    expect(r.statusCode).toBe(503)
    expect(r.json()).toMatchObject({ error: 'ui_unavailable', retryable: false })
    expect(r.json().message).toContain('npm run build:ui')
    const none = await api({ uiPath: undefined })
    expect((await none.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(404)
  })
})

describe('GET /api/records/{hash}', () => {
  it('answers the merged record with its CIDs and the version of every field, tombstones included', async () => {
    const h = await api()
    const rec = syntheticRecord(2)
    const t0 = Date.now()
    const w = await h.app.inject({ method: 'PATCH', url: `/meta/${rec.cid}`, payload: apiFields(rec) })
    const rid = w.json().hashId as string
    expect((await h.app.inject({ method: 'PATCH', url: `/meta/${rid}`, payload: { title: 'Second write' } })).statusCode).toBe(200)
    expect((await h.app.inject({ method: 'DELETE', url: `/meta/${rid}/domain` })).statusCode).toBe(200)

    for (const addr of [rid, rec.cid]) {
      const r = await h.app.inject({ method: 'GET', url: `/api/records/${addr}` })
      expect(r.statusCode).toBe(200)
      const body = r.json()
      const cids = Object.keys(rec.fields).filter(k => k.startsWith('cids/')).map(k => k.slice(5))
      expect(body).toMatchObject({ hashId: rid, roots: [rid], cids: [...cids].sort(), canonical_cid: canonicalCid(cids), duplicates: [] })
      expect(body.metadata.title).toBe('Second write')
      expect(body.metadata.domain).toBeUndefined()
      const byField = new Map((body.versions as Array<{ field: string, hlc: string, at: string, origin: string, root: string, deleted: boolean }>).map(v =>
        [v.field, v]))
      // Every field, the deleted one too.
      expect([...byField.keys()].sort()).toEqual(Object.keys(apiFields(rec)).sort())
      const title = byField.get('title')!
      const year = byField.get('year')!
      const domain = byField.get('domain')!
      expect(title.hlc > year.hlc).toBe(true) // the later write
      expect(domain).toMatchObject({ deleted: true, origin: 'test-node', root: rid })
      expect(domain.hlc > title.hlc).toBe(true)
      expect(year).toMatchObject({ deleted: false, origin: 'test-node', root: rid })
      expect(new Date(year.at).getTime()).toBe(parseHlc(year.hlc)!.ms)
      expect(new Date(year.at).getTime()).toBeGreaterThanOrEqual(t0 - 1000)
      expect(new Date(year.at).getTime()).toBeLessThanOrEqual(Date.now() + 1000)
    }
  })

  it('for a group, lists its roots and takes each field\'s newest version across them', async () => {
    const h = await api()
    const a = syntheticRecord(3)
    const b = syntheticRecord(4)
    const ra = (await h.app.inject({ method: 'PATCH', url: `/meta/${a.cid}`, payload: { title: 'A', year: '2001' } })).json().hashId as string
    const rb = (await h.app.inject({ method: 'PATCH', url: `/meta/${b.cid}`, payload: { title: 'B' } })).json().hashId as string
    // The second root takes the first one's CID: one record, two roots.
    expect((await h.app.inject({ method: 'PATCH', url: `/meta/${rb}`, payload: { [`cids/${a.cid}`]: 'true' } })).statusCode).toBe(200)
    const body = (await h.app.inject({ method: 'GET', url: `/api/records/${a.cid}` })).json()
    const canon = ra < rb ? ra : rb
    expect(body.hashId).toBe(canon)
    expect([...body.roots].sort()).toEqual([ra, rb].sort())
    expect(body.roots[0]).toBe(canon)
    const v = new Map((body.versions as Array<{ field: string, root: string }>).map(x => [x.field, x]))
    expect(v.get('title')!.root).toBe(rb) // B's title was written later, and it is what the document shows
    expect(body.metadata.title).toBe('B')
    expect(v.get('year')!.root).toBe(ra)
  })

  it('refuses bad addresses and unknown records as the /meta routes do', async () => {
    const h = await api()
    expect((await h.app.inject({ method: 'GET', url: '/api/records/not-an-address' })).json()).toMatchObject({ error: 'invalid_address' })
    const missing = await h.app.inject({ method: 'GET', url: `/api/records/${syntheticRecord(5).cid}` })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({ error: 'unknown_root' })
  })
})

describe('canonical_cid on search hits', () => {
  it('is each hit\'s canonical CID, and absent for a record without CIDs', async () => {
    const h = await api()
    const recs = [6, 7, 8].map(syntheticRecord)
    for (const r of recs) expect((await h.app.inject({ method: 'PATCH', url: `/meta/${r.cid}`, payload: apiFields(r) })).statusCode).toBe(200)
    const bare = (await h.app.inject({ method: 'PATCH', url: '/meta/01M8PZ0DRKEHGVM2JDNA6Z8363',
      payload: { title: 'No cids at all' } })).json().hashId as string
    const res = (await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: {} })).json()
    expect(res.total).toBe(4)
    for (const hit of res.results as Array<{ hashId: string, metadata: Record<string, string>, canonical_cid?: string }>) {
      if (hit.hashId === bare) {
        expect(hit).not.toHaveProperty('canonical_cid')
        continue
      }
      const doc = (await h.app.inject({ method: 'GET', url: `/api/records/${hit.hashId}` })).json()
      expect(hit.canonical_cid).toBe(doc.canonical_cid)
      expect(hit.canonical_cid).toBeDefined()
    }
  })
})

describe('sort on POST /api/metadata/search', () => {
  it('orders by a field over HTTP, and refuses a cursor with a sort', async () => {
    const h = await api()
    for (const i of [10, 11, 12, 13]) {
      const r = syntheticRecord(i)
      expect((await h.app.inject({ method: 'PATCH', url: `/meta/${r.cid}`, payload: apiFields(r) })).statusCode).toBe(200)
    }
    const years = [10, 11, 12, 13].map(i => syntheticRecord(i).fields.year).sort().reverse()
    const res = await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { sort: '-year' } })
    expect(res.statusCode).toBe(200)
    expect((res.json().results as Array<{ metadata: { year: string } }>).map(r => r.metadata.year)).toEqual(years)
    const first = (await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { limit: 1 } })).json()
    const bad = await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { sort: 'year', cursor: first.nextCursor } })
    expect(bad.statusCode).toBe(400)
    expect(bad.json()).toMatchObject({ error: 'invalid_search_request', message: 'cursor cannot be combined with sort: page with offset' })
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { sort: 5 } })).statusCode).toBe(400)
  })
})
