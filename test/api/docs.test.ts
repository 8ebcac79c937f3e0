/**
 * `/docs`: a browsable OpenAPI page for browsers (swagger-ui, its assets
 * served by the node itself), the document as JSON for every other client
 * (what `/docs` always answered), `/docs/json` and `/docs/yaml`. Public even
 * with a token: the schema holds no data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const TOKEN = 'docs-test-token'
let h: ApiHarness

beforeAll(async () => { h = await startApi({ apiToken: TOKEN }) })
afterAll(async () => { await h.close() })

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'

describe('/docs', () => {
  it('gives a browser the page, without a token', async () => {
    for (const url of ['/docs', '/docs/']) {
      const r = await h.app.inject({ url, headers: { accept: BROWSER_ACCEPT } })
      expect(r.statusCode, url).toBe(200)
      expect(r.headers['content-type']).toMatch(/^text\/html/)
      expect(r.body).toContain('swagger-ui')
      // Everything the page loads comes from this node: no CDN, no other site.
      expect(r.body).not.toMatch(/(src|href)=["']https?:/)
    }
  })

  it('serves the page\'s assets from the package, and its initializer names only this node', async () => {
    const page = await h.app.inject({ url: '/docs/', headers: { accept: BROWSER_ACCEPT } })
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(m => m[1]).filter(u => !u.startsWith('#'))
    expect(assets.length).toBeGreaterThan(2)
    for (const a of assets) {
      const r = await h.app.inject({ url: new URL(a, 'http://node/docs/').pathname })
      expect(r.statusCode, a).toBe(200)
    }
    const bundle = await h.app.inject({ url: '/docs/static/swagger-ui-bundle.js' })
    expect(bundle.headers['content-type']).toMatch(/javascript/)
    expect(bundle.rawPayload.length).toBeGreaterThan(500_000)
    const init = await h.app.inject({ url: '/docs/static/swagger-initializer.js' })
    expect(init.body).toContain('validatorUrl')
    expect(init.body).not.toContain('validator.swagger.io')
  })

  it('keeps answering the OpenAPI JSON to clients that do not ask for HTML, as /docs always did', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/plain, */*']) {
      const r = await h.app.inject({ url: '/docs', headers: accept === undefined ? {} : { accept } })
      expect(r.statusCode, String(accept)).toBe(200)
      expect(r.headers['content-type']).toMatch(/^application\/json/)
      const doc = r.json()
      expect(doc.openapi).toMatch(/^3\./)
      expect(Object.keys(doc.paths)).toContain('/api/meta/{cid}')
      expect(Object.keys(doc.paths)).toContain('/api/metadata/batch')
    }
    const json = await h.app.inject({ url: '/docs/json' })
    expect(json.json().openapi).toMatch(/^3\./)
    const yaml = await h.app.inject({ url: '/docs/yaml' })
    expect(yaml.headers['content-type']).toMatch(/yaml/)
    expect(yaml.body).toMatch(/^openapi: 3\./m)
  })

  it('is the only thing the token leaves open besides the public routes', async () => {
    expect((await h.app.inject({ url: '/meta' })).statusCode).toBe(401)
    expect((await h.app.inject({ url: '/docs/json' })).statusCode).toBe(200)
  })
})
