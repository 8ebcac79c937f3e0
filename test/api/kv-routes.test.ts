import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { META_EVENTS } from '../../src/records/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const CID_A = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const CID_B = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'

let h: ApiHarness
beforeEach(async () => { h = await startApi() })
afterEach(async () => { await h.close() })

async function get (url: string): Promise<any> {
  const r = await h.app.inject({ url })
  expect(r.statusCode, r.body).toBe(200)
  return r.json()
}

describe('/api/kv browser', () => {
  it('info counts records at once and keys/sizes after the background sweep', async () => {
    await h.store.records.mint('/files/a', 100, 1n, { title: 'a' })
    await h.store.records.mint('/files/b', 23, 1n)
    await h.store.records.mergeFlat(CID_A, { title: 'no file' })
    const first = await get('/api/kv/info')
    expect(first).toMatchObject({ prefix: 'file:', fileCount: 3 })
    await waitFor(async () => (await get('/api/kv/info')).keyCount !== null, { timeoutMs: 5000, what: 'the stats sweep' })
    expect(await get('/api/kv/info')).toMatchObject({ fileCount: 3, keyCount: 9, totalSize: 123 })
  })

  it('pages record keys with a cursor', async () => {
    const rids: string[] = []
    for (let i = 0; i < 5; i++) rids.push(await h.store.records.mint(`/files/${i}`, 1, 1n))
    const p1 = await get('/api/kv/keys?count=2')
    expect(p1).toEqual({ keys: rids.slice(0, 2).map(r => `file:${r}`), cursor: rids[1], hasMore: true })
    const p2 = await get(`/api/kv/keys?count=2&cursor=${p1.cursor as string}`)
    const p3 = await get(`/api/kv/keys?count=2&cursor=${p2.cursor as string}`)
    expect(p3).toEqual({ keys: [`file:${rids[4]}`], cursor: '0', hasMore: false })
    expect((await h.app.inject({ url: '/api/kv/keys?count=5000' })).statusCode).toBe(400)
  })

  it('reads a record as a hash and a plain key as a string', async () => {
    const rid = await h.store.records.mint('/files/a', 1, 2n, { title: 't' })
    expect(await get(`/api/kv/key/file:${rid}`)).toEqual({ key: `file:${rid}`, type: 'hash',
      value: { filePath: '/files/a', sizeByte: '1', mtimeNano: '2', title: 't' } })
    expect((await h.app.inject({ url: `/api/kv/key/cid:${CID_A}` })).json()).toMatchObject({ error: 'not_found' })
    await h.store.records.addAlias(rid, CID_A)
    expect(await get(`/api/kv/key/cid:${CID_A}`)).toEqual({ key: `cid:${CID_A}`, type: 'string', value: rid })
    expect((await h.app.inject({ url: '/api/kv/key/file:01M8MEPA2EEG293YKP4C18EGEW' })).json().error).toBe('unknown_root')
  })

  it('walks the key space one level at a time, with a cursor', async () => {
    const rid = await h.store.records.mint('/files/a', 1, 1n, { 'fileinfo/duration': '1', 'fileinfo/format': 'mkv' })
    const top = await get('/api/kv/tree?delimiter=:')
    expect(top.branches).toEqual(expect.arrayContaining(['file:', 'idx:', 'ver:', 'ev:']))
    const rec = await get(`/api/kv/tree?prefix=${encodeURIComponent(`file:${rid}/`)}`)
    expect(rec).toMatchObject({ branches: [`file:${rid}/fileinfo/`], leaves: [`file:${rid}/filePath`, `file:${rid}/mtimeNano`, `file:${rid}/sizeByte`],
      hasMore: false, cursor: '0' })
    const p1 = await get(`/api/kv/tree?prefix=${encodeURIComponent(`file:${rid}/`)}&max=2`)
    expect(p1.branches.length + p1.leaves.length).toBe(2)
    expect(p1.hasMore).toBe(true)
    const p2 = await get(`/api/kv/tree?prefix=${encodeURIComponent(`file:${rid}/`)}&max=2&cursor=${encodeURIComponent(p1.cursor as string)}`)
    expect([...p1.branches, ...p1.leaves, ...p2.branches, ...p2.leaves]).toEqual([`file:${rid}/fileinfo/`, `file:${rid}/filePath`, `file:${rid}/mtimeNano`,
      `file:${rid}/sizeByte`])
  })

  it('finds keys by name and record fields by value, continuing with a cursor', async () => {
    for (const t of ['Alien', 'Aliens', 'Heat']) await h.store.records.mint(`/files/${t}`, 1, 1n, { title: t })
    const s = await get('/api/kv/search?contains=TITLE')
    expect(s.keys).toHaveLength(3)
    expect(s.truncated).toBe(false)
    const f = await get('/api/kv/find?contains=alien&fields=title')
    expect(f.matches.map((m: { value: string }) => m.value)).toEqual(['Alien', 'Aliens'])
    const f1 = await get('/api/kv/find?contains=alien&fields=title&limit=1')
    expect(f1).toMatchObject({ truncated: true, matches: [{ value: 'Alien' }] })
    const f2 = await get(`/api/kv/find?contains=alien&fields=title&limit=1&cursor=${encodeURIComponent(f1.cursor as string)}`)
    expect(f2.matches.map((m: { value: string }) => m.value)).toEqual(['Aliens'])
  })

  it('writes file: keys through the record layer and the clients\' namespaces as plain rows', async () => {
    const rid = await h.store.records.mint('/files/a', 1, 1n)
    const events = h.store.kv.streamLength(META_EVENTS)
    const w = await h.app.inject({ method: 'PUT', url: '/api/kv/value', payload: { key: `file:${rid}/cids/${CID_A}`, value: 'true' } })
    expect(w.json()).toEqual({ key: `file:${rid}/cids/${CID_A}`, type: 'string', value: 'true', exists: true })
    // The alias, version and event came with it: the record is now addressable by that CID.
    expect((await h.app.inject({ url: `/api/meta/${CID_A}` })).statusCode).toBe(200)
    expect(h.store.kv.streamLength(META_EVENTS)).toBe(events + 1)
    expect(h.store.kv.get(`ver:${rid}`)).toContain(`cids/${CID_A}`)

    expect((await h.app.inject({ method: 'PUT', url: '/api/kv/value', payload: { key: 'btmagnet:abc', value: 'magnet:?xt=1' } })).statusCode).toBe(200)
    expect(await get('/api/kv/value?key=btmagnet:abc')).toEqual({ key: 'btmagnet:abc', type: 'string', value: 'magnet:?xt=1', exists: true })
    expect(await get('/api/kv/value?key=btmagnet:nope')).toEqual({ key: 'btmagnet:nope', type: 'none', value: null, exists: false })

    const d = await h.app.inject({ method: 'DELETE', url: `/api/kv/value?key=${encodeURIComponent(`file:${rid}/cids/${CID_A}`)}` })
    expect(d.json()).toEqual({ key: `file:${rid}/cids/${CID_A}`, deleted: true })
    expect((await h.app.inject({ url: `/api/meta/${CID_A}` })).statusCode).toBe(404)
    expect((await h.app.inject({ method: 'DELETE', url: '/api/kv/value?key=btmagnet:abc' })).json()).toEqual({ key: 'btmagnet:abc', deleted: true })
    expect((await h.app.inject({ method: 'DELETE', url: '/api/kv/value?key=btmagnet:abc' })).json()).toEqual({ key: 'btmagnet:abc', deleted: false })
    // The original's other services each keep their namespace (docs/design/data-model.md#shared-and-node-local).
    for (const key of ['searchcov:01/x', 'nzb:release/1']) {
      expect((await h.app.inject({ method: 'PUT', url: '/api/kv/value', payload: { key, value: 'v' } })).statusCode, key).toBe(200)
      expect(h.store.kv.get(key)).toBe('v')
    }
  })

  it('refuses writes outside the clients\' namespaces and record fields, and malformed keys, writing nothing', async () => {
    const rid = await h.store.records.mint('/files/a', 1, 1n)
    const rows = h.store.kv.count('', '\u{10FFFF}')
    const cases: Array<[unknown, unknown, string]> = [
      [`cid:${CID_B}`, rid, 'reserved_key'],
      [`idx:roots/${rid}`, '', 'reserved_key'],
      [`ver:${rid}`, '{}', 'reserved_key'],
      ['ev:meta:events/0000000000001-0000000000', '{}', 'reserved_key'],
      ['meta-core:schema-version', '3', 'reserved_key'],
      [`dup:${rid}/x`, '', 'reserved_key'],
      ['watch:f/plugin/x.srt', '1/2/cid', 'reserved_key'],
      // The layers' node-local rows, search's and anything outside the clients' namespaces.
      ['mesh:cursor/12D3KooWpeer', '{}', 'reserved_key'],
      [`loc:${rid}`, '{}', 'reserved_key'],
      ['fts_index', 'x', 'reserved_key'],
      ['plain', 'x', 'reserved_key'],
      ['btmagnet', 'x', 'reserved_key'],
      [`file:${CID_A}/title`, 'x', 'invalid_key'],
      [`file:${rid}`, 'x', 'invalid_key'],
      [`file:${rid}/midhash256`, 'x', 'deprecated_field'],
      [`file:${rid}/a//b`, 'x', 'invalid_field'],
      ['k\u0000', 'x', 'invalid_key'],
      ['x'.repeat(1025), 'x', 'invalid_key'],
      ['plain', 5, 'schema_violation'],
      [5, 'x', 'schema_violation']
    ]
    for (const [key, value, code] of cases) {
      const r = await h.app.inject({ method: 'PUT', url: '/api/kv/value', payload: { key, value } })
      expect([r.statusCode, r.json().error], String(key)).toEqual([400, code])
    }
    expect((await h.app.inject({ method: 'DELETE', url: `/api/kv/value?key=${encodeURIComponent(`cid:${CID_B}`)}` })).json().error).toBe('reserved_key')
    // The answer says what can be written, in the envelope every route uses.
    const plain = await h.app.inject({ method: 'DELETE', url: '/api/kv/value?key=plain' })
    expect(plain.statusCode).toBe(400)
    expect(plain.json()).toMatchObject({ error: 'reserved_key', retryable: false })
    expect(plain.json().message).toContain('btmagnet:, searchcov:, nzb:')
    expect(h.store.kv.count('', '\u{10FFFF}')).toBe(rows)
  })
})
