/**
 * Generated hostile traffic across every route (seeded, so a failure
 * replays): malformed paths and escapes, wrong methods, junk queries and
 * headers, malformed, mistyped and oversized bodies, bad CIDs and cursors,
 * lone surrogates and bytes that are not UTF-8 in bodies and URLs, FIFOs
 * and symlinks out of the library where a route opens a path. Afterwards
 * every key and value in the store is well-formed UTF-8.
 * Afterwards: no 5xx was ever sent, the server still answers, the file
 * passes integrity_check, and the store holds only what its invariants allow.
 */
import { isUtf8 } from 'node:buffer'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isCid } from '../../src/cid/index.js'
import { createLogger } from '../../src/common/index.js'
import { prefixEnd } from '../../src/kv/index.js'
import { VersionMap, isRecord, isRecordId, rejectDeprecatedField, validateFieldPath } from '../../src/records/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'
import { pick, prng } from '../helpers/prng.js'
import { openSse } from '../helpers/sse-client.js'

const SEED = Number(process.env.FUZZ_SEED ?? 20260601)
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2400)

const CID_KNOWN = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
const CID_UNKNOWN = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const MIDHASH = 'bagacbabaec7v3fu2ygzh3e2sybg3fbzmisry2hbtpmck6vx3yftea6vzq35r4'
/** A record whose filePath is a FIFO: its byte routes must answer, never block. */
const CID_FIFO = 'bafkreihzl7h5f2mtu66mafnsb7sbghc2jseyfxgp7oqdyoahejzfoonjw4'

let h: ApiHarness
let rid: string
const errors: string[] = []
const secretBefore = 'do not serve or change me'

beforeAll(async () => {
  h = await startApi({
    logger: createLogger({ level: 'error', write: (l) => { errors.push(l) } })
  })
  fs.writeFileSync(path.join(h.dir, 'secret.txt'), secretBefore)
  fs.mkdirSync(path.join(h.filesPath, 'plugin'), { recursive: true })
  fs.writeFileSync(path.join(h.filesPath, 'plugin', 'a.srt'), 'hello world')
  fs.symlinkSync(path.join(h.dir, 'secret.txt'), path.join(h.filesPath, 'plugin', 'evil.srt'))
  fs.symlinkSync(path.join(h.dir, 'secret.txt'), path.join(h.filesPath, 'outside.mkv'))
  for (const f of FIFOS) execFileSync('mkfifo', [path.join(h.filesPath, f)])
  rid = await h.store.records.mint('/files/plugin/a.srt', 11, 1n, { [`cids/${CID_KNOWN}`]: 'true', title: 'Known' })
  await h.store.records.mint('/files/../secret.txt', 6, 1n, { [`cids/${MIDHASH}`]: 'true' })
  await h.store.records.mint('/files/pipe.mkv', 0, 1n, { [`cids/${CID_FIFO}`]: 'true' })
})

afterAll(async () => {
  // A reader stuck in open() on a FIFO (the defect) is released, so a failure cannot hang the run.
  for (const f of FIFOS) {
    try { fs.closeSync(fs.openSync(path.join(h.filesPath, f), fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)) } catch { /* nobody waiting */ }
  }
  await h.close()
})

const FIFOS = ['pipe.mkv', 'plugin/pipe.srt']

function gen (rand: () => number): { method: string, url: string, headers: Record<string, string>, payload?: string | Buffer } {
  const long = (n: number): string => 'a'.repeat(n)
  const addrs = [CID_KNOWN, CID_UNKNOWN, MIDHASH, CID_FIFO, rid, '', '..', '%2e%2e', '%2F', '%2Fetc%2Fpasswd', 'Qm' + long(44), 'b' + long(400),
    '%00', '%ff', '%E0%A4%A', 'été', long(3000), 'midhash256:' + MIDHASH, '..%2F..%2Fsecret.txt', CID_KNOWN.toUpperCase(),
    '01ARZ3NDEKTSV4RRFFQ69G5FAV', rid.toLowerCase(), 'bafy', '%20', '*', '?', '#x']
  const keys = ['title', 'a/b', '../x', '%2e%2e/%2e%2e/x', 'midhash256', 'cid_sha256', 'canonical_cid', 'cids/garbage', `cids/${MIDHASH}`,
    long(600), '%00', 'a//b', '/', 'x%2Fy', '_add', '_add/x', 'tags', 'holders/peer', 'filePath', '\u200b', '%C0%AF', 'k%0d%0aSet-Cookie:x',
    'k%ED%A0%80', '%FF%FE', 'mood%F0%9F%98%80']
  const templates = ['/meta', '/meta/{A}', '/meta/{A}/{K}', '/meta/{A}/_add/{K}', '/api/meta/{A}', '/file/{A}', '/api/file/{A}',
    '/api/file/{A}/info', '/file/cid', '/api/files/register', '/api/files/tuples', '/api/kv/info', '/api/kv/keys', '/api/kv/key/{K}',
    '/api/kv/tree', '/api/kv/search', '/api/kv/find', '/api/kv/value', '/health', '/status', '/api/stats', '/api/schema', '/docs',
    '/api/metadata/search', '/api/metadata/list', '/api/metadata/hash-ids', '/api/metadata/{A}', '/api/events/meta', '/api/events/files',
    '/api/metadata/{A}/property', '/api/metadata/batch', '/docs/json', '/docs/static/{K}',
    '/api/watchers', '/api/watchers/{K}', '/api/watchers/scan', '/api/watchers/{K}/reset',
    '/{A}', '/meta/{A}/{K}/{K}', '//meta', '/meta/../api/kv/info', '/api/kv/value/../../meta']
  const qnames = ['cursor', 'count', 'limit', 'prefix', 'key', 'contains', 'fields', 'summary', 'after', 'delimiter', 'max', 'offset', 'x']
  const qvals = ['0', '-1', '1e9', '99999999999999999999', 'abc', '%ff', long(3000), '', 'file:', `file:${rid}/title`, 'cid:x', '1', 'true', '%00', ',,,']
  const methods = ['GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
  const bodies: Array<string | Buffer | undefined> = [
    undefined, '', '{}', '[]', 'null', '5', '"str"', '{"title":"x"}', '{"title":5}', '{"title":null}', '{"title":{"a":"b"}}',
    '{"value":"v"}', '{"value":5}', '{"value":""}', '{"midhash256":"x"}', '{"cid_x":"y"}', '{"canonical_cid":"z"}', '{"cids/garbage":"true"}',
    `{"cids/${MIDHASH}":"true"}`, '{"__proto__":{"polluted":"yes"}}', '{"constructor":{"prototype":{"p":"1"}}}', '{bad json',
    '{"a":"b"', JSON.stringify({ path: '../secret.txt' }), JSON.stringify({ path: '/etc/passwd' }), JSON.stringify({ path: 'plugin/a.srt' }),
    JSON.stringify({ path: 'plugin/evil.srt' }), JSON.stringify({ path: 'plugin' }), JSON.stringify({ path: 5 }),
    JSON.stringify({ path: 'pipe.mkv' }), JSON.stringify({ path: 'plugin/pipe.srt' }), JSON.stringify({ path: 'outside.mkv' }),
    JSON.stringify({ key: 'cid:x', value: 'y' }), JSON.stringify({ key: `idx:roots/${rid}`, value: '' }), JSON.stringify({ key: `file:${rid}/t`, value: 'v' }),
    JSON.stringify({ key: `file:${rid}/midhash256`, value: 'v' }), JSON.stringify({ key: 'ok:k', value: 'v' }), JSON.stringify({ key: 'ver:x', value: '{}' }),
    JSON.stringify({ property: 'title', value: 'v' }), JSON.stringify({ property: 'midhash256', value: 'v' }),
    JSON.stringify({ updates: [{ hashId: CID_KNOWN, metadata: { t: 'x' } }, { hashId: '..', properties: [{ property: 'a', value: 'b' }] }] }),
    JSON.stringify({ updates: [] }), JSON.stringify({ updates: [{ hashId: CID_UNKNOWN, properties: { 'k\ud800': 'v' } }] }),
    JSON.stringify({ query: 'x', filters: [{ property: 'title', values: ['known'] }] }), JSON.stringify({ filters: 'x' }), JSON.stringify({ limit: -1 }),
    JSON.stringify({ [long(600)]: 'x' }), JSON.stringify({ title: long(300_000) }), '{"t":"' + long(5_000_000) + '"}',
    Buffer.from([0xff, 0xfe, 0x00, 0x61]), Buffer.from('{"title":"\u00e9t\u00e9"}', 'latin1'), '\u0000\u0000', 'a=b&c=d',
    '{"k\\ud800":"v"}', '{"title":"x\\udfff"}', '{"value":"\\ud800"}', '{"value":"\\ud83d\\ude00"}', '{"\\u005f_proto__":{"p":"1"}}',
    JSON.stringify({ key: 'ok:\ud800', value: 'v' }), '{"key":"ok:k","value":"\\udc00"}',
    Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    Buffer.concat([Buffer.from('{"t'), Buffer.from([0xff]), Buffer.from('":"v"}')]), Buffer.from([0xed, 0xa0, 0x80])
  ]
  const types = ['application/json', 'application/json', 'text/plain', 'application/octet-stream', 'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'a/b/c', '', 'application/json; charset=utf-8', '*/*']

  let url = pick(rand, templates)
  while (url.includes('{A}')) url = url.replace('{A}', pick(rand, addrs))
  while (url.includes('{K}')) url = url.replace('{K}', pick(rand, keys))
  const nq = Math.floor(rand() * 3)
  for (let i = 0; i < nq; i++) url += (i === 0 ? '?' : '&') + pick(rand, qnames) + '=' + pick(rand, qvals)
  const method = pick(rand, methods)
  const headers: Record<string, string> = {}
  const payload = method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? (rand() < 0.1 ? pick(rand, bodies) : undefined) : pick(rand, bodies)
  if (payload !== undefined) {
    const ct = pick(rand, types)
    if (ct !== '') headers['content-type'] = ct
  }
  if (rand() < 0.2) headers.range = pick(rand, ['bytes=0-1', 'bytes=-0', 'bytes=999999999999999999-', 'bytes=a-b', 'bytes=0-1,2-3', 'bytes=5-1',
    'bytes=-99999999999999999'])
  if (rand() < 0.1) headers['if-range'] = pick(rand, ['"x"', 'garbage', 'Mon, 01 Jan 2001 00:00:00 GMT'])
  if (rand() < 0.1) headers['if-modified-since'] = pick(rand, ['garbage', 'Mon, 01 Jan 2001 00:00:00 GMT', ''])
  if (rand() < 0.1) headers.authorization = pick(rand, ['Bearer x', 'Basic abc', '', 'Bearer ' + long(5000)])
  if (rand() < 0.05 && payload !== undefined) headers['content-length'] = pick(rand, ['0', '1', '-1', 'abc', '99999999'])
  return { method, url, headers, payload }
}

describe('fuzz: hostile requests across all routes', () => {
  it(`${REQUESTS} generated requests: zero 5xx, every error an envelope`, async () => {
    const rand = prng(SEED)
    const statuses = new Map<number, number>()
    let sent = 0
    for (let i = 0; i < REQUESTS; i++) {
      const r = gen(rand)
      // The SSE routes never end on their own: over inject only their refusals can be exercised.
      if (r.url.startsWith('/api/events/') && r.method === 'GET') continue
      if (process.env.FUZZ_TRACE === '1') process.stderr.write(`#${i} ${r.method} ${r.url.slice(0, 100)}\n`)
      const res = await h.app.inject({ method: r.method as 'GET', url: r.url, headers: r.headers, payload: r.payload })
      sent++
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      const where = `#${i} ${r.method} ${r.url.slice(0, 120)} ${JSON.stringify(r.headers).slice(0, 200)} -> ${res.statusCode} ${res.body.slice(0, 200)}`
      expect(res.statusCode, where).toBeLessThan(500)
      if (res.statusCode >= 400 && r.method !== 'HEAD') {
        const body = res.json()
        expect(Object.keys(body).sort(), where).toEqual(['error', 'message', 'retryable'])
        expect(typeof body.error, where).toBe('string')
      }
      expect(res.body, where).not.toContain(secretBefore)
      expect(res.headers['set-cookie'], where).toBeUndefined()
    }
    expect(sent).toBeGreaterThanOrEqual(2000)
    expect(statuses.get(200) ?? 0).toBeGreaterThan(100) // the generator reaches real handlers, not only refusals
    expect(errors).toEqual([])
  }, 120_000)

  it('hostile Last-Event-ID headers over real HTTP: 200 streams, no crash', async () => {
    const url = await h.listen()
    const rand = prng(SEED + 1)
    const cursors = ['0', '0-0', '-1', 'abc', '99999999999999999999-99999999999999999999', '1-', '-', '1-2-3', ' 0 ', '0'.repeat(2000), '1e9-1', 'NaN-NaN']
    for (let i = 0; i < 60; i++) {
      const c = await openSse(`${url}${pick(rand, ['/api/events/meta', '/api/events/files'])}`, { 'last-event-id': pick(rand, cursors) })
      expect(c.status).toBe(200)
      // Closed once its headers arrived: the server sends them as it starts the stream, and the start-up (the cursor
      // read, the first page) runs in the same turn, before this process can read them.
      c.close()
    }
    expect((await h.app.inject({ url: '/health' })).json().status).toBe('ok')
  }, 60_000)

  it('afterwards the node is healthy and the store holds only what its invariants allow', async () => {
    const { kv } = h.store
    expect((await h.app.inject({ url: '/health' })).json()).toMatchObject({ status: 'ok' })
    expect(kv.integrityCheck()).toBe('ok')
    expect(fs.readFileSync(path.join(h.dir, 'secret.txt'), 'utf8')).toBe(secretBefore)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()

    // Every record key is file:<record id>/<valid, non-deprecated field>; cids/ members are valid CIDs.
    const liveRoots = new Set<string>()
    for (const [k] of kv.iterate('file:', prefixEnd('file:'))) {
      const rest = k.slice(5)
      const slash = rest.indexOf('/')
      const root = rest.slice(0, slash)
      const field = rest.slice(slash + 1)
      expect(isRecordId(root), k).toBe(true)
      expect(() => { validateFieldPath(field); rejectDeprecatedField(field) }, k).not.toThrow()
      if (field.startsWith('cids/')) expect(isCid(field.slice(5)), k).toBe(true)
      liveRoots.add(root)
    }
    // The root index is exactly the roots that are records: with fields, and a live cids/ member (records' isRecord).
    const indexed = new Set(kv.keys('idx:roots/', prefixEnd('idx:roots/')).map(k => k.slice('idx:roots/'.length)))
    const records = [...liveRoots].filter(r => isRecord(new Map(Object.entries(kv.suffixes(`file:${r}/`))), VersionMap.parse(kv.get(`ver:${r}`))))
    expect([...indexed].sort()).toEqual(records.sort())
    // Every cid: entry is a valid CID pointing at a live root whose group holds that member.
    for (const [k, v] of kv.prefix('cid:')) {
      const cid = k.slice(4)
      expect(isCid(cid), k).toBe(true)
      expect(indexed.has(v), k).toBe(true)
      const group = [v, ...kv.keys(`idx:grpm/${v}/`, prefixEnd(`idx:grpm/${v}/`)).map(g => g.slice(`idx:grpm/${v}/`.length))]
      expect(group.some(m => kv.get(`file:${m}/cids/${cid}`) === 'true'), k).toBe(true)
    }
    // The visible-record counter matches the rows.
    let visible = 0
    for (const r of indexed) if ((kv.get(`idx:grp/${r}`) ?? r) === r) visible++
    expect(h.store.records.countRecords()).toBe(visible)
    // Every key and value is well-formed UTF-8: no lone surrogate and no stray byte got in.
    const rows = kv.prepare('SELECT CAST(k AS BLOB), CAST(v AS BLOB) FROM kv').raw().all() as Array<[Buffer, Buffer]>
    for (const [k, v] of rows) {
      expect(isUtf8(k), k.toString('hex')).toBe(true)
      expect(isUtf8(v), k.toString('utf8')).toBe(true)
    }
    // Raw kv writes landed only outside the store's namespaces (watch: is the watcher's own state).
    for (const k of kv.keys('', '\u{10FFFF}')) {
      expect(/^(file:|cid:|idx:|ver:|ev:|evhwm:|dup:|loc:|meta-core:|watch:|ok:)/.test(k), k).toBe(true)
    }
  })
})
