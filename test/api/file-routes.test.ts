import fs from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CODEC_YT_VIDEO, MH_IDENTITY, encodeCidV1, midhash256 } from '../../src/cid/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { FILE_EVENTS } from '../../src/records/index.js'

const SHA_EMPTY = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const SHA_HELLO = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
const MIDHASH_HELLO = 'bagacbabaec7v3fu2ygzh3e2sybg3fbzmisry2hbtpmck6vx3yftea6vzq35r4'
const CONTENT = Buffer.from('0123456789abcdefghij') // 20 bytes

let h: ApiHarness
beforeEach(async () => { h = await startApi() })
afterEach(async () => { await h.close() })

function put (rel: string, data: Buffer | string = CONTENT): string {
  const abs = path.join(h.filesPath, rel)
  fs.mkdirSync(path.dirname(abs), { recursive: true })
  fs.writeFileSync(abs, data)
  return abs
}

async function record (filePath: string, cid = MIDHASH_HELLO): Promise<string> {
  return await h.store.records.mint(filePath, CONTENT.length, 1n, { [`cids/${cid}`]: 'true' })
}

describe('GET /api/meta/{cid}', () => {
  it('returns the document with cids, the derived canonical cid and duplicates, and no root id', async () => {
    const rid = await record('/files/movies/a.mkv')
    await h.store.records.addAlias(rid, SHA_HELLO)
    await h.store.records.addDuplicatePath(rid, '/files/copy/a.mkv')
    const r = await h.app.inject({ url: `/api/meta/${MIDHASH_HELLO}` })
    expect(r.statusCode).toBe(200)
    const doc = r.json()
    expect(doc.cid).toBe(MIDHASH_HELLO)
    expect(doc.canonical_cid).toBe(SHA_HELLO) // sha2-256 ranks 30, midhash 10
    expect([...doc.cids].sort()).toEqual([MIDHASH_HELLO, SHA_HELLO].sort())
    expect(doc.duplicates).toEqual(['/files/copy/a.mkv'])
    expect(doc.metadata).toMatchObject({ filePath: '/files/movies/a.mkv', [`cids/${SHA_HELLO}`]: 'true' })
    expect(r.body).not.toContain(rid)
  })

  it('answers 404 unknown_cid for an unknown CID and 400 invalid_cid for a bad or empty one', async () => {
    expect((await h.app.inject({ url: `/api/meta/${SHA_EMPTY}` })).json()).toEqual({ error: 'unknown_cid', message: 'no metadata for this CID',
      retryable: false })
    for (const bad of ['/api/meta/', '/api/meta/Qmabc', '/api/meta/midhash256:' + MIDHASH_HELLO, '/api/meta/BAFKREI', '/api/meta/' + 'b'.repeat(300)]) {
      const r = await h.app.inject({ url: bad })
      expect(r.statusCode, bad).toBe(400)
    }
    // A root id is not a CID on the CID routes.
    const rid = await record('/files/a.mkv')
    expect((await h.app.inject({ url: `/api/meta/${rid}` })).json().error).toBe('invalid_cid')
  })
})

describe('GET /file/{cid}', () => {
  it('streams the whole file with its type, length and validators', async () => {
    put('movies/a.mkv')
    await record('/files/movies/a.mkv')
    for (const prefix of ['/file/', '/api/file/']) {
      const r = await h.app.inject({ url: prefix + MIDHASH_HELLO })
      expect(r.statusCode).toBe(200)
      expect(r.rawPayload.equals(CONTENT)).toBe(true)
      expect(r.headers['content-type']).toBe('video/x-matroska')
      expect(r.headers['content-length']).toBe('20')
      expect(r.headers['accept-ranges']).toBe('bytes')
      expect(r.headers['last-modified']).toMatch(/GMT$/)
      expect(r.headers.etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/)
    }
  })

  it('serves single ranges (206), refuses unsatisfiable ones (416) and answers multi-ranges with the whole file', async () => {
    put('a.mp4')
    await record('/files/a.mp4')
    const get = async (range: string): Promise<Awaited<ReturnType<typeof h.app.inject>>> =>
      await h.app.inject({ url: `/file/${MIDHASH_HELLO}`, headers: { range } })
    let r = await get('bytes=2-5')
    expect(r.statusCode).toBe(206)
    expect(r.body).toBe('2345')
    expect(r.headers['content-range']).toBe('bytes 2-5/20')
    expect(r.headers['content-length']).toBe('4')
    r = await get('bytes=15-')
    expect([r.statusCode, r.body]).toEqual([206, 'fghij'])
    r = await get('bytes=-3')
    expect([r.statusCode, r.body, r.headers['content-range']]).toEqual([206, 'hij', 'bytes 17-19/20'])
    r = await get('bytes=10-999')
    expect([r.statusCode, r.body]).toEqual([206, 'abcdefghij'])
    r = await get('bytes=20-')
    expect(r.statusCode).toBe(416)
    expect(r.headers['content-range']).toBe('bytes */20')
    expect(r.json()).toMatchObject({ error: 'range_not_satisfiable', retryable: false })
    r = await get('bytes=0-1,4-5')
    expect([r.statusCode, r.body]).toEqual([200, CONTENT.toString()])
    r = await get('items=0-1')
    expect(r.statusCode).toBe(200)
    r = await get('bytes=5-2')
    expect(r.statusCode).toBe(200)
  })

  it('honours If-Range, If-None-Match and If-Modified-Since, and HEAD sends no body', async () => {
    put('a.mp4')
    await record('/files/a.mp4')
    const url = `/file/${MIDHASH_HELLO}`
    const first = await h.app.inject({ url })
    const etag = first.headers.etag as string
    const lm = first.headers['last-modified'] as string
    expect((await h.app.inject({ url, headers: { range: 'bytes=0-1', 'if-range': etag } })).statusCode).toBe(206)
    expect((await h.app.inject({ url, headers: { range: 'bytes=0-1', 'if-range': lm } })).statusCode).toBe(206)
    expect((await h.app.inject({ url, headers: { range: 'bytes=0-1', 'if-range': '"stale"' } })).statusCode).toBe(200)
    expect((await h.app.inject({ url, headers: { range: 'bytes=0-1', 'if-range': 'Mon, 01 Jan 2001 00:00:00 GMT' } })).statusCode).toBe(200)
    expect((await h.app.inject({ url, headers: { 'if-none-match': etag } })).statusCode).toBe(304)
    expect((await h.app.inject({ url, headers: { 'if-modified-since': lm } })).statusCode).toBe(304)
    expect((await h.app.inject({ url, headers: { 'if-modified-since': 'Mon, 01 Jan 2001 00:00:00 GMT' } })).statusCode).toBe(200)
    const head = await h.app.inject({ method: 'HEAD', url })
    expect(head.statusCode).toBe(200)
    expect(head.headers['content-length']).toBe('20')
    expect(head.body).toBe('')
  })

  it('falls back to a duplicate path when the main path is gone', async () => {
    put('dup/b.avi')
    const rid = await record('/files/gone/a.avi')
    await h.store.records.addDuplicatePath(rid, '/files/dup/b.avi')
    const r = await h.app.inject({ url: `/file/${MIDHASH_HELLO}` })
    expect(r.statusCode).toBe(200)
    expect(r.headers['content-type']).toBe('video/x-msvideo')
    expect(r.rawPayload.equals(CONTENT)).toBe(true)
  })

  it('never serves bytes from outside FILES_PATH', async () => {
    const outside = path.join(h.dir, 'secret.txt')
    fs.writeFileSync(outside, 'secret')
    fs.symlinkSync(outside, path.join(h.filesPath, 'link.txt'))
    fs.symlinkSync(h.dir, path.join(h.filesPath, 'linkdir'))
    fs.mkdirSync(path.join(h.filesPath, 'adir'))
    const hostile = ['/files/../secret.txt', '/files/link.txt', '/files/linkdir/secret.txt', outside, '/etc/passwd', 'secret.txt', '/files/adir', '/files/',
      '/files/a\\..\\..\\secret.txt']
    const cids = [SHA_EMPTY, SHA_HELLO, MIDHASH_HELLO]
    for (let i = 0; i < hostile.length; i++) {
      const cid = cids[i % cids.length]
      const rid = await h.store.records.mint(hostile[i], 6, 1n, { [`cids/${cid}`]: 'true' })
      for (const url of [`/file/${cid}`, `/api/file/${cid}`]) {
        const r = await h.app.inject({ url })
        expect(r.statusCode, hostile[i]).toBe(404)
        expect(r.json()).toMatchObject({ error: 'unknown_cid' })
        expect(r.body).not.toContain('secret')
      }
      expect((await h.app.inject({ url: `/api/file/${cid}/info` })).json()).toEqual({ exists: false })
      await h.store.records.deleteRoot(rid)
    }
  })

  it('answers 404 for an unknown CID, 400 for a bad CID and for a yt-video locator', async () => {
    expect((await h.app.inject({ url: `/file/${SHA_EMPTY}` })).json().error).toBe('unknown_cid')
    expect((await h.app.inject({ url: '/file/nope' })).json().error).toBe('invalid_cid')
    const kind = Buffer.from('youtube')
    const yt = encodeCidV1(CODEC_YT_VIDEO, MH_IDENTITY, new Uint8Array([kind.length, ...kind, ...Buffer.from('dQw4w9WgXcQ')]))
    const r = await h.app.inject({ url: `/file/${yt}` })
    expect(r.statusCode).toBe(400)
    expect(r.json().error).toBe('not_fetchable')
  })
})

describe('GET /api/file/{cid}/info', () => {
  it('says whether this node holds the file', async () => {
    put('movies/a.webm')
    await record('/files/movies/a.webm')
    expect((await h.app.inject({ url: `/api/file/${MIDHASH_HELLO}/info` })).json()).toEqual({
      exists: true, contentType: 'video/webm', size: 20, filePath: 'movies/a.webm'
    })
    expect((await h.app.inject({ url: `/api/file/${SHA_EMPTY}/info` })).json()).toEqual({ exists: false })
    expect((await h.app.inject({ url: '/api/file/x/info' })).statusCode).toBe(400)
  })
})

describe('POST /file/cid', () => {
  it('hashes a file under FILES_PATH to its raw sha2-256 CID', async () => {
    put('docs/hello.txt', 'hello world')
    const r = await h.app.inject({ method: 'POST', url: '/file/cid', payload: { path: 'docs/hello.txt' } })
    expect(r.json()).toEqual({ cid: SHA_HELLO, path: 'docs/hello.txt', size: 11 })
    put('empty', '')
    expect((await h.app.inject({ method: 'POST', url: '/file/cid', payload: { path: './empty' } })).json().cid).toBe(SHA_EMPTY)
  })

  it('refuses paths that leave FILES_PATH, directories and missing files', async () => {
    fs.writeFileSync(path.join(h.dir, 'secret.txt'), 'secret')
    fs.symlinkSync(path.join(h.dir, 'secret.txt'), path.join(h.filesPath, 'link'))
    fs.mkdirSync(path.join(h.filesPath, 'adir'))
    const cases: Array<[unknown, number, string]> = [
      ['../secret.txt', 400, 'invalid_path'],
      ['a/../../secret.txt', 400, 'invalid_path'],
      [path.join(h.dir, 'secret.txt'), 400, 'invalid_path'],
      ['link', 400, 'invalid_path'],
      ['adir', 400, 'not_a_file'],
      ['missing.txt', 404, 'not_found'],
      ['a\u0000b', 400, 'invalid_path'],
      [5, 400, 'schema_violation'],
      ['', 400, 'schema_violation']
    ]
    for (const [p, status, code] of cases) {
      const r = await h.app.inject({ method: 'POST', url: '/file/cid', payload: { path: p } })
      expect([r.statusCode, r.json().error], String(p)).toEqual([status, code])
    }
  })
})

describe('/api/files/register and /api/files/tuples', () => {
  it('registers a plugin file once, appending an add event', async () => {
    put('plugin/subs/a.srt', 'hello world')
    const before = h.store.kv.streamLength(FILE_EVENTS)
    const r1 = await h.app.inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/subs/a.srt' } })
    expect(r1.statusCode).toBe(201)
    const { cid } = await midhash256(path.join(h.filesPath, 'plugin/subs/a.srt'))
    expect(r1.json()).toMatchObject({ cid, created: true, path: 'plugin/subs/a.srt', size: 11 })
    const r2 = await h.app.inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/subs/a.srt' } })
    expect(r2.statusCode).toBe(200)
    expect(r2.json()).toMatchObject({ created: false, root: r1.json().root })
    expect(h.store.kv.streamLength(FILE_EVENTS)).toBe(before + 1)
    expect((await h.app.inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/missing' } })).statusCode).toBe(404)
    expect((await h.app.inject({ method: 'POST', url: '/api/files/register', payload: { path: '../x' } })).statusCode).toBe(400)
    expect((await h.app.inject({ method: 'POST', url: '/api/files/register', payload: { path: 'watch/a' } })).statusCode).toBe(400)
  })

  it('answers 503 watcher_unavailable on a node without a watcher', async () => {
    const bare = await startApi({ watcher: false })
    try {
      const r = await bare.app.inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/a' } })
      expect(r.statusCode).toBe(503)
      expect(r.json()).toEqual({ error: 'watcher_unavailable', message: 'this node runs without the watcher', retryable: false })
    } finally {
      await bare.close()
    }
  })

  it('lists file tuples with exact integers, and totals', async () => {
    const rid = await h.store.records.mint('/files/a.mkv', '15032385536', '1729872000123456789', { title: 'x' })
    await h.store.records.mergeFlat(SHA_HELLO, { title: 'no file fields' })
    const r = await h.app.inject({ url: '/api/files/tuples' })
    expect(r.statusCode).toBe(200)
    expect(r.body).toContain('"mtimeNano":1729872000123456789')
    expect(r.json()).toEqual({ files: [{ hashId: rid, filePath: '/files/a.mkv', sizeByte: 15032385536, mtimeNano: 1729872000123456789 }], count: 1,
      totalSize: 15032385536 })
    expect((await h.app.inject({ url: '/api/files/tuples?summary=1' })).json()).toEqual({ count: 1, totalSize: 15032385536 })
    expect((await h.app.inject({ url: '/api/files/tuples?summary=yes' })).statusCode).toBe(400)
  })
})
