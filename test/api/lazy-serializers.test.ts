import { afterEach, describe, expect, it } from 'vitest'
import type { RouteOptions } from 'fastify'
import { eagerSerializerFactory } from '../../src/api/lazy-serializers.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

let h: ApiHarness | undefined
afterEach(async () => { await h?.close(); h = undefined })

describe('response serializers compiled on first use', () => {
  it('leaves no response schema of any route that fast-json-stringify cannot compile', async () => {
    h = await startApi()
    const routes: RouteOptions[] = []
    h.app.addHook('onRoute', r => { routes.push(r) })
    await h.app.ready()
    // What Fastify would have compiled at start: each route's schema per status, against the shared schemas.
    const compile = eagerSerializerFactory()(h.app.getSchemas(), {})
    let compiled = 0
    for (const r of routes) {
      const response = (r.schema?.response ?? {}) as Record<string, unknown>
      for (const [httpStatus, schema] of Object.entries(response)) {
        expect(typeof compile({ schema, url: r.url, method: String(r.method), httpStatus }), `${String(r.method)} ${r.url} ${httpStatus}`).toBe('function')
        compiled++
      }
    }
    expect(routes.length).toBeGreaterThan(20)
    expect(compiled).toBeGreaterThan(routes.length)
  })
})
