import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

let h: ApiHarness | undefined
afterEach(async () => { await h?.close(); h = undefined })

function fileEvents (h: ApiHarness): Array<Record<string, string>> {
  return h.store.kv.readStream('file:events', undefined, 1000).map(e => e.fields)
}

describe('/api/watchers', () => {
  it('scans on demand (waiting for the summary), reports status, and resets file:events', async () => {
    // The harness's watcher does not watch (enabled: false): files only enter through these routes.
    h = await startApi()
    fs.mkdirSync(path.join(h.filesPath, 'watch'))
    fs.writeFileSync(path.join(h.filesPath, 'watch', 'a.txt'), 'hello world')
    fs.writeFileSync(path.join(h.filesPath, 'watch', 'b.txt'), 'other bytes')

    const scan = await h.app.inject({ method: 'POST', url: '/api/watchers/scan?wait=true' })
    expect(scan.statusCode).toBe(200)
    expect(scan.json()).toMatchObject({ status: 'ok', message: 'Scan complete', fileCount: 2, summary: { added: 2 } })
    expect(h.store.records.getFlat('bagacbabaec7v3fu2ygzh3e2sybg3fbzmisry2hbtpmck6vx3yftea6vzq35r4')?.filePath).toBe('/files/watch/a.txt')

    const list = await h.app.inject({ method: 'GET', url: '/api/watchers' })
    expect(list.statusCode).toBe(200)
    const body = list.json()
    expect(body.count).toBe(1)
    expect(body.watchers[0]).toMatchObject({ path: h.filesPath, fileCount: 2, isScanning: false })
    expect(body.watchers[0].progress).toMatchObject({ filesSeen: expect.any(Number), filesHashed: expect.any(Number) })
    const one = await h.app.inject({ method: 'GET', url: `/api/watchers/${body.watchers[0].id as string}` })
    expect(one.statusCode).toBe(200)
    expect((await h.app.inject({ method: 'GET', url: '/api/watchers/nope' })).statusCode).toBe(404)

    const reset = await h.app.inject({ method: 'POST', url: '/api/watchers/reset-all?wait=1' })
    expect(reset.statusCode).toBe(200)
    expect(reset.json()).toMatchObject({ status: 'ok', message: 'Reset complete', fileCount: 2 })
    const evs = fileEvents(h)
    expect(evs[0]).toMatchObject({ type: 'reset', path: '' })
    expect(evs.slice(1).map(e => `${e.type} ${e.path}`).sort()).toEqual(['add watch/a.txt', 'add watch/b.txt'])
  })

  it('answers a scan at once without wait, as the original did, and the scan still runs', async () => {
    h = await startApi()
    fs.writeFileSync(path.join(h.filesPath, 'c.txt'), 'c')
    const r = await h.app.inject({ method: 'POST', url: '/api/watchers/scan' })
    expect(r.json()).toMatchObject({ status: 'ok', message: 'Scan triggered' })
    const harness = h
    await waitFor(() => fileEvents(harness).some(e => e.path === 'c.txt'), { timeoutMs: 10_000, what: 'the triggered scan to record c.txt' })
  })

  it('is a 503 on a node without a watcher, and needs the token when one is set', async () => {
    h = await startApi({ watcher: false })
    expect((await h.app.inject({ method: 'GET', url: '/api/watchers' })).statusCode).toBe(503)
    await h.close()
    h = await startApi({ apiToken: 'secret-token-123' })
    expect((await h.app.inject({ method: 'POST', url: '/api/watchers/scan' })).statusCode).toBe(401)
    expect((await h.app.inject({ method: 'GET', url: '/api/watchers' })).statusCode).toBe(401)
    const ok = await h.app.inject({ method: 'GET', url: '/api/watchers', headers: { authorization: 'Bearer secret-token-123' } })
    expect(ok.statusCode).toBe(200)
  })
})
