/**
 * `/metrics` on a whole node (store, search, watcher, API on 127.0.0.1),
 * read with a Prometheus text-format parser: the figures are there, and the
 * counters move with the work (requests by route, write batches, events,
 * records, searches, the watcher's files). Mesh figures per peer are
 * checked on a real three-node mesh in test/e2e/compose-peers.test.ts.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { silentLogger, waitFor } from '../../src/common/index.js'
import { parseConfig, startNode, type RunningNode } from '../../src/node/index.js'
import { scrape } from '../helpers/prometheus.js'
import { testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'

const TOKEN = 'metrics-token-0123456789'
const tmp = tmpDir('mc-metrics-')
let node: RunningNode
const auth = { authorization: `Bearer ${TOKEN}` }

beforeAll(async () => {
  const dir = tmp.dir
  fs.mkdirSync(path.join(dir, 'files'), { recursive: true })
  fs.writeFileSync(path.join(dir, 'files', 'a.bin'), Buffer.alloc(4096, 1))
  const r = await parseConfig(['--port', '0', '--db-path', path.join(dir, 'db', 'm.db'), '--files-path', path.join(dir, 'files'),
    '--api-token', TOKEN, '--settle-ms', '0', '--log-level', 'silent'], {})
  if (r.kind !== 'config') throw new Error('config')
  node = await startNode(r.config, { logger: silentLogger })
})

afterAll(async () => {
  await node?.stop()
  tmp.cleanup()
})

async function patch (cid: string, body: unknown): Promise<void> {
  const r = await fetch(`${node.url}/meta/${cid}`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  expect(r.status, await r.text()).toBe(200)
}

describe('/metrics', () => {
  it('needs the token like every internal read, and parses as Prometheus text', async () => {
    const anon = await fetch(`${node.url}/metrics`)
    expect(anon.status).toBe(401)
    const s = await scrape(node.url, TOKEN)
    // The process's default metrics and each family this node promises.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds',
      'meta_core_http_request_duration_seconds', 'meta_core_write_batch_size', 'meta_core_write_batch_duration_seconds',
      'meta_core_events_appended_total', 'meta_core_records', 'meta_core_search_duration_seconds', 'meta_core_sse_streams',
      'meta_core_watcher_files', 'meta_core_watcher_files_pending', 'meta_core_mesh_frames_in_total', 'meta_core_mesh_frames_out_total',
      'meta_core_mesh_frames_rejected_total', 'meta_core_mesh_peer_lag_seconds']) {
      expect(s.byName.has(name), name).toBe(true)
    }
    expect(s.family('meta_core_write_batch_size').type).toBe('HISTOGRAM')
    expect(s.family('meta_core_events_appended_total').type).toBe('COUNTER')
  })

  it('reports the watcher\'s files and the open event streams (the watcher\'s scan done before work is counted)', async () => {
    await waitFor(async () => (await scrape(node.url, TOKEN)).value('meta_core_watcher_files') === 1,
      { timeoutMs: 15_000, what: 'the watcher to record a.bin' })
    const ac = new AbortController()
    const sse = await fetch(`${node.url}/api/events/meta`, { headers: auth, signal: ac.signal })
    expect(sse.status).toBe(200)
    try {
      expect((await scrape(node.url, TOKEN)).value('meta_core_sse_streams')).toBe(1)
    } finally {
      ac.abort()
    }
    await waitFor(async () => (await scrape(node.url, TOKEN)).value('meta_core_sse_streams') === 0, { timeoutMs: 5000, what: 'the stream to close' })
    // A standalone node has no peers: the per-peer families exist and hold no series.
    const s = await scrape(node.url, TOKEN)
    expect(s.labels('meta_core_mesh_frames_in_total')).toEqual([])
    expect(s.value('meta_core_mesh_frames_out_total')).toBe(0)
  })
  it('counts requests by route, write batches and their size, events, records and searches as they happen', async () => {
    const before = await scrape(node.url, TOKEN)
    const cids = [1, 2, 3, 4, 5].map(i => testCid(1000 + i))
    // Concurrent writes share group commits: five write functions in one to five transactions.
    await Promise.all(cids.map(async (cid, i) => { await patch(cid, { title: `metrics film ${i}`, year: String(2000 + i) }) }))
    const search = await fetch(`${node.url}/api/metadata/search`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'metrics film' }) })
    expect(search.status).toBe(200)
    expect((await search.json() as { total: number }).total).toBe(5)
    expect((await fetch(`${node.url}/api/meta/${cids[0]}`)).status).toBe(200)
    expect((await fetch(`${node.url}/no/such/route`)).status).toBe(404)
    const after = await scrape(node.url, TOKEN)

    const http = (s: typeof after, method: string, route: string, status: string): number =>
      s.histogram('meta_core_http_request_duration_seconds', { method, route, status }).count
    expect(http(after, 'PATCH', '/meta/:hash', '200') - http(before, 'PATCH', '/meta/:hash', '200')).toBe(5)
    expect(http(after, 'GET', '/api/meta/:cid', '200') - http(before, 'GET', '/api/meta/:cid', '200')).toBe(1)
    expect(http(after, 'POST', '/api/metadata/search', '200') - http(before, 'POST', '/api/metadata/search', '200')).toBe(1)
    // A path no route matches is one series, whatever the path.
    expect(http(after, 'GET', 'unmatched', '404') - http(before, 'GET', 'unmatched', '404')).toBe(1)
    expect(after.labels('meta_core_http_request_duration_seconds').some(l => l.route?.includes('no/such'))).toBe(false)

    const batches = after.histogram('meta_core_write_batch_size').count - before.histogram('meta_core_write_batch_size').count
    const writes = after.histogram('meta_core_write_batch_size').sum - before.histogram('meta_core_write_batch_size').sum
    expect(batches).toBeGreaterThanOrEqual(1)
    expect(batches).toBeLessThanOrEqual(writes)
    expect(writes).toBeGreaterThanOrEqual(5)
    expect(after.histogram('meta_core_write_batch_duration_seconds').count - before.histogram('meta_core_write_batch_duration_seconds').count).toBe(batches)
    // Each new record appends its fields and CID to the change log.
    const events = after.value('meta_core_events_appended_total', { stream: 'meta:events' }) - before.value('meta_core_events_appended_total',
      { stream: 'meta:events' })
    expect(events).toBeGreaterThanOrEqual(5 * 3)
    expect(after.value('meta_core_records') - before.value('meta_core_records')).toBe(5)
    expect(after.histogram('meta_core_search_duration_seconds', { operation: 'search' }).count - before.histogram('meta_core_search_duration_seconds',
      { operation: 'search' }).count).toBe(1)
  })
})

describe('/metrics with META_CORE_METRICS_PUBLIC', () => {
  it('answers without the token while every other internal read still needs it', async () => {
    const dir = path.join(tmp.dir, 'public')
    const r = await parseConfig(['--port', '0', '--db-path', path.join(dir, 'm.db'), '--files-path', path.join(dir, 'files'),
      '--api-token', TOKEN, '--metrics-public', '--enable-file-watcher=false', '--log-level', 'silent'], {})
    if (r.kind !== 'config') throw new Error('config')
    const open = await startNode(r.config, { logger: silentLogger })
    try {
      expect((await scrape(open.url)).byName.has('meta_core_records')).toBe(true)
      expect((await fetch(`${open.url}/status`)).status).toBe(401)
    } finally {
      await open.stop()
    }
  })
})
