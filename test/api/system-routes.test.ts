import fs from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { openNodeStore, type RemoteEntry } from '../../src/records/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { tmpDir } from '../helpers/tmp.js'

const CID_A = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

let h: ApiHarness
beforeEach(async () => { h = await startApi({ version: '1.2.3' }) })
afterEach(async () => { await h.close() })

describe('health, status, stats, schema', () => {
  it('/health is 200 ok while the store is up and 200 degraded once it is gone', async () => {
    const ok = await h.app.inject({ url: '/health' })
    expect(ok.statusCode).toBe(200)
    expect(ok.json()).toMatchObject({ status: 'ok', storage: true })
    expect(Date.parse(ok.json().timestamp as string)).not.toBeNaN()
    h.store.close()
    const down = await h.app.inject({ url: '/health' })
    expect(down.statusCode).toBe(200)
    expect(down.json()).toMatchObject({ status: 'degraded', storage: false })
    // Data routes answer 503 storage_unavailable, retryable, with Retry-After.
    for (const url of [`/api/meta/${CID_A}`, `/meta/${CID_A}`, '/meta', '/api/kv/keys', '/api/events/meta']) {
      const r = await h.app.inject({ url })
      expect(r.statusCode, url).toBe(503)
      expect(r.json(), url).toMatchObject({ error: 'storage_unavailable', retryable: true })
      expect(r.headers['retry-after'], url).toBe('5')
    }
    const w = await h.app.inject({ method: 'PATCH', url: `/meta/${CID_A}`, payload: { t: 'x' } })
    expect(w.statusCode).toBe(503)
  })

  it('/health says degraded with the reason while the watcher\'s scans fail (?strict=1: 503), and ok once one succeeds', async () => {
    fs.rmSync(h.filesPath, { recursive: true })
    await h.app.inject({ method: 'POST', url: '/api/watchers/scan?wait=true' })
    const bad = await h.app.inject({ url: '/health' })
    expect(bad.statusCode).toBe(200)
    expect(bad.json()).toMatchObject({ status: 'degraded', storage: true, redis: true, reasons: [{ reason: 'watcher',
      message: expect.stringContaining('last scan failed') }] })
    expect((await h.app.inject({ url: '/health?strict=1' })).statusCode).toBe(503)
    expect((await h.app.inject({ url: '/health?strict=0' })).statusCode).toBe(200)
    fs.mkdirSync(h.filesPath)
    expect((await h.app.inject({ method: 'POST', url: '/api/watchers/scan?wait=true' })).statusCode).toBe(200)
    const ok = await h.app.inject({ url: '/health?strict=1' })
    expect(ok.statusCode).toBe(200)
    expect(ok.json()).toMatchObject({ status: 'ok', reasons: [] })
  })

  it('/status reports the service and its record count', async () => {
    await h.store.records.mint('/files/a', 1, 1n)
    const s = (await h.app.inject({ url: '/status' })).json()
    expect(s).toMatchObject({ status: 'ok', serviceName: 'meta-core', version: '1.2.3', nodeId: 'test-node', fileCount: 1, search: true, eventStreams: 0 })
    expect(s.watcher).toMatchObject({ filesPath: h.filesPath })
  })

  it('/api/stats answers at once and fills the swept figures in the background', async () => {
    await h.store.records.mint('/files/a', 1000, 1n)
    await h.store.records.mergeFlat(CID_A, { title: 'x' })
    const first = (await h.app.inject({ url: '/api/stats' })).json()
    expect(first.records).toBe(2)
    await waitFor(async () => (await h.app.inject({ url: '/api/stats' })).json().files !== null, { timeoutMs: 5000, what: 'the stats sweep' })
    const s = (await h.app.inject({ url: '/api/stats' })).json()
    expect(s).toMatchObject({ records: 2, files: { count: 1, totalSize: 1000 }, redisKeys: 5, identities: null, udlUsers: null })
    expect(s.redisMemory).toBeGreaterThan(0)
    expect(typeof s.sweptAt).toBe('number')
  })

  it('/api/stats counts this node\'s own copies, not the paths of records replicated from a peer', async () => {
    // A peer's record, with its filePath, sizeByte and mtimeNano, arrives here as any replicated write.
    const t = tmpDir()
    const peer = openNodeStore({ path: path.join(t.dir, 'peer.db'), nodeId: 'peer-node' })
    try {
      await peer.records.mint('/files/theirs.mkv', 5_000_000, 1n, { title: 'theirs' })
      const entries: RemoteEntry[] = peer.records.changesSince(undefined, { limit: 1000 }).changes
      await h.store.records.applyRemote(entries)
    } finally {
      peer.close()
      t.cleanup()
    }
    await h.store.records.mint('/files/ours.mkv', 1000, 1n)
    expect(h.store.records.countRecords()).toBe(2)
    await waitFor(async () => (await h.app.inject({ url: '/api/stats' })).json().files !== null, { timeoutMs: 5000, what: 'the stats sweep' })
    expect((await h.app.inject({ url: '/api/stats' })).json()).toMatchObject({ records: 2, files: { count: 1, totalSize: 1000 } })
  })

  it('/api/schema reflects value types from the counters, with hints', async () => {
    await h.store.records.mergeFlat(CID_A, { year: '2010', title: 'x', 'titles/fra': 'y', poster: CID_A, mixed: '1' })
    await h.store.records.mint('/files/a', 1, 1n, { mixed: 'text', year: '1999' })
    const s = (await h.app.inject({ url: '/api/schema' })).json()
    expect(s.source).toBe('counters')
    expect(s.fields.year).toEqual({ type: 'int', breakdown: { int: 2 } })
    expect(s.fields.title).toEqual({ type: 'string', breakdown: { string: 1 } })
    expect(s.fields['titles/<lang>']).toMatchObject({ type: 'string', key_hint: 'language-code' })
    expect(s.fields.poster).toMatchObject({ type: 'string', hint: 'cid' })
    expect(s.fields.mixed).toEqual({ type: 'mixed', breakdown: { int: 1, string: 1 } })
    expect(s.fields.mtimeNano).toBeDefined()
  })
})

describe('OpenAPI, CORS, unknown routes', () => {
  it('serves an OpenAPI document generated from the route schemas', async () => {
    const r = await h.app.inject({ url: '/docs' })
    expect(r.statusCode).toBe(200)
    const doc = r.json()
    expect(doc.openapi).toMatch(/^3\./)
    expect(doc.info.version).toBe('1.2.3')
    for (const p of ['/meta/{hash}', '/api/meta/{cid}', '/file/{cid}', '/api/events/meta', '/api/kv/value',
      '/api/files/tuples']) expect(doc.paths[p], p).toBeDefined()
    expect(doc.paths['/meta/{hash}'].patch.requestBody).toBeDefined()
    expect(doc.paths['/api/meta/{cid}'].get.security).toEqual([])
  })

  it('answers CORS preflights and marks responses for any origin', async () => {
    const pre = await h.app.inject({ method: 'OPTIONS', url: `/meta/${CID_A}`, headers: { origin: 'http://x', 'access-control-request-method': 'PATCH' } })
    expect(pre.statusCode).toBe(204)
    expect(pre.headers['access-control-allow-methods']).toContain('PATCH')
    expect((await h.app.inject({ url: '/health' })).headers['access-control-allow-origin']).toBe('*')
  })

  it('answers unknown routes and methods with the envelope', async () => {
    for (const [method, url] of [['GET', '/nope'], ['POST', '/meta'], ['PATCH', '/health'], ['GET', '/%zz']] as const) {
      const r = await h.app.inject({ method, url })
      expect(r.statusCode).toBeGreaterThanOrEqual(400)
      expect(r.statusCode).toBeLessThan(500)
      expect(Object.keys(r.json()).sort()).toEqual(['error', 'message', 'retryable'])
    }
  })
})

describe('/api/metadata', () => {
  it('searches and lists through the search service; total counts matches', async () => {
    await h.store.records.mint('/files/alien.mkv', 1, 1n, { title: 'Alien', year: '1979' })
    await h.store.records.mint('/files/aliens.mkv', 1, 1n, { title: 'Aliens', year: '1986' })
    await h.store.records.mint('/files/heat.mkv', 1, 1n, { title: 'Heat', year: '1995' })
    const s = await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { query: 'alien',
      filters: [{ property: 'year', values: ['1986'] }] } })
    expect(s.json()).toMatchObject({ count: 1, total: 1, results: [{ metadata: { title: 'Aliens' } }] })
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { limit: 'x' } })).statusCode).toBe(400)
    expect((await h.app.inject({ method: 'POST', url: '/api/metadata/search', payload: { bogus: 1 } })).statusCode).toBe(400)
    const l = (await h.app.inject({ url: '/api/metadata/list?offset=1&limit=1' })).json()
    expect(l).toMatchObject({ count: 1, total: 3 })
    expect((await h.app.inject({ url: '/api/metadata/hash-ids' })).json().count).toBe(3)
  })

  it('reads, edits and deletes a record through the editor routes', async () => {
    const rid = await h.store.records.mint('/files/a.mkv', 1, 1n, { title: 'A' })
    const put = await h.app.inject({ method: 'PUT', url: `/api/metadata/${rid}`, payload: { title: 'B', processingStatus: 'done' } })
    expect(put.json()).toMatchObject({ status: 'ok', hashId: rid })
    const g = (await h.app.inject({ url: `/api/metadata/${rid}` })).json()
    expect(g.metadata).toMatchObject({ title: 'B', filePath: '/files/a.mkv' })
    expect(g.metadata.processingStatus).toBeUndefined()
    expect((await h.app.inject({ method: 'DELETE', url: `/api/metadata/${rid}` })).json()).toMatchObject({ status: 'ok', deletedKeys: 4 })
    expect((await h.app.inject({ url: `/api/metadata/${rid}` })).statusCode).toBe(404)
  })

  it('answers 503 search_unavailable without a search service', async () => {
    const bare = await startApi({ search: false })
    try {
      const r = await bare.app.inject({ method: 'POST', url: '/api/metadata/search', payload: {} })
      expect(r.statusCode).toBe(503)
      expect(r.json().error).toBe('search_unavailable')
    } finally {
      await bare.close()
    }
  })
})
