import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { META_EVENTS, isRecordId } from '../../src/records/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const CID_A = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const CID_B = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
const MIDHASH = 'bagacbabaecxvk4hvugaqw6xxrsxuxrykmyhq35i6ik5pshkn4wzdfdpa5a67y'

let h: ApiHarness
beforeEach(async () => { h = await startApi() })
afterEach(async () => { await h.close() })

function kvRows (): number {
  return h.store.kv.count('', '\u{10FFFF}')
}

async function req (method: string, url: string, payload?: unknown, headers?: Record<string,
  string>): Promise<{ status: number, json: any, body: string, headers: Record<string, unknown> }> {
  const res = await h.app.inject({ method: method as 'GET', url, payload: payload as string, headers })
  let json: unknown
  try { json = JSON.parse(res.body) } catch { json = undefined }
  return { status: res.statusCode, json, body: res.body, headers: res.headers }
}

/** Asserts a write was refused with `code` and left the store untouched (no rows, no events). */
async function expectRefused (method: string, url: string, payload: unknown, status: number, code: string, headers?: Record<string, string>): Promise<void> {
  const rows = kvRows()
  const events = h.store.kv.streamLength(META_EVENTS)
  const r = await req(method, url, payload, headers)
  expect(r.status, r.body).toBe(status)
  expect(r.json).toMatchObject({ error: code, retryable: false })
  expect(typeof r.json.message).toBe('string')
  expect(kvRows()).toBe(rows)
  expect(h.store.kv.streamLength(META_EVENTS)).toBe(events)
}

describe('/meta records', () => {
  it('PATCH to an unknown CID creates a record that every address reads back', async () => {
    const w = await req('PATCH', `/meta/${CID_A}`, { title: 'Inception', year: '2010' })
    expect(w.status).toBe(200)
    expect(w.json).toMatchObject({ success: true, created: true, updated: 3 })
    expect(isRecordId(w.json.hashId)).toBe(true)

    const byCid = await req('GET', `/meta/${CID_A}`)
    const byRid = await req('GET', `/meta/${w.json.hashId as string}`)
    expect(byCid.status).toBe(200)
    expect(byCid.json).toEqual({ hashId: w.json.hashId, metadata: { title: 'Inception', year: '2010', [`cids/${CID_A}`]: 'true' } })
    expect(byRid.json).toEqual(byCid.json)
  })

  it('PATCH merges; PUT replaces but keeps the fields the store owns', async () => {
    const rid = await h.store.records.mint('/files/a.mkv', 10, 5n, { [`cids/${CID_A}`]: 'true', title: 'Old', genre: 'drama' })
    const p = await req('PATCH', `/meta/${CID_A}`, { year: '1999' })
    expect(p.json).toMatchObject({ hashId: rid, updated: 1, created: false })
    expect((await req('GET', `/meta/${rid}`)).json.metadata).toMatchObject({ title: 'Old', genre: 'drama', year: '1999' })

    const put = await req('PUT', `/meta/${rid}`, { title: 'New' })
    expect(put.status).toBe(200)
    expect(put.json).toMatchObject({ success: true, hashId: rid })
    expect((await req('GET', `/meta/${CID_A}`)).json.metadata).toEqual({
      title: 'New', filePath: '/files/a.mkv', sizeByte: '10', mtimeNano: '5', [`cids/${CID_A}`]: 'true'
    })
  })

  it('refuses deprecated fields on every write route, writing nothing', async () => {
    await req('PATCH', `/meta/${CID_A}`, { title: 'x' })
    for (const field of ['midhash256', 'canonical_cid', 'cid_sha256']) {
      await expectRefused('PATCH', `/meta/${CID_A}`, { title: 'y', [field]: MIDHASH }, 400, 'deprecated_field')
      await expectRefused('PUT', `/meta/${CID_A}`, { [field]: MIDHASH }, 400, 'deprecated_field')
      await expectRefused('PUT', `/meta/${CID_A}/${field}`, { value: MIDHASH }, 400, 'deprecated_field')
      await expectRefused('POST', `/meta/${CID_A}/_add/${field}`, { value: MIDHASH }, 400, 'deprecated_field')
    }
  })

  it('refuses wrong types, bad field names, bad addresses and oversized input with a 4xx and no write', async () => {
    await expectRefused('PATCH', `/meta/${CID_A}`, { title: 5 }, 400, 'schema_violation')
    await expectRefused('PATCH', `/meta/${CID_A}`, { title: null }, 400, 'schema_violation')
    await expectRefused('PATCH', `/meta/${CID_A}`, { title: { nested: 'x' } }, 400, 'schema_violation')
    await expectRefused('PATCH', `/meta/${CID_A}`, ['a'], 400, 'schema_violation')
    await expectRefused('PATCH', `/meta/${CID_A}`, '{"title": "x"', 400, 'schema_violation', { 'content-type': 'application/json' })
    await expectRefused('PATCH', `/meta/${CID_A}`, 'title=x', 415, 'unsupported_media_type', { 'content-type': 'application/x-www-form-urlencoded' })
    await expectRefused('PATCH', `/meta/${CID_A}`, { 'a//b': 'x' }, 400, 'invalid_field')
    await expectRefused('PATCH', `/meta/${CID_A}`, { ['x'.repeat(513)]: 'x' }, 400, 'invalid_field')
    await expectRefused('PATCH', `/meta/${CID_A}`, { 'bad\u0001name': 'x' }, 400, 'invalid_field')
    await expectRefused('PATCH', `/meta/${CID_A}`, { 'cids/not-a-cid': 'true' }, 400, 'invalid_field')
    // A __proto__ segment could never be read back (api.md, field names). As a key of the JSON body the parser refuses it first.
    await expectRefused('PATCH', `/meta/${CID_A}`, '{"title": "x", "__proto__": "y"}', 400, 'schema_violation', { 'content-type': 'application/json' })
    await expectRefused('PATCH', `/meta/${CID_A}`, { 'a/__proto__/b': 'x' }, 400, 'invalid_field')
    await expectRefused('PUT', `/meta/${CID_A}/__proto__`, { value: 'x' }, 400, 'invalid_field')
    await expectRefused('PATCH', `/meta/${CID_A}`, { title: 'x'.repeat(256 * 1024 + 1) }, 400, 'invalid_value')
    await expectRefused('PATCH', `/meta/${CID_A}`, { title: 'x'.repeat(5 * 1024 * 1024) }, 413, 'payload_too_large')
    await expectRefused('PATCH', '/meta/not-a-cid', { title: 'x' }, 400, 'invalid_address')
    await expectRefused('PATCH', '/meta/Qmabc', { title: 'x' }, 400, 'invalid_address')
    await expectRefused('PATCH', '/meta/midhash256:' + MIDHASH, { title: 'x' }, 400, 'invalid_address')
    const many: Record<string, string> = {}
    for (let i = 0; i <= 10_000; i++) many[`f${i}`] = 'v'
    await expectRefused('PATCH', `/meta/${CID_A}`, many, 400, 'schema_violation')
  })

  it('answers 404 unknown_root for a valid address with no record, and 400 for an invalid one', async () => {
    const g = await req('GET', `/meta/${CID_B}`)
    expect(g.status).toBe(404)
    expect(g.json).toEqual({ error: 'unknown_root', message: 'metadata not found', retryable: false })
    expect((await req('GET', '/meta/01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(400) // a ULID, not a UUIDv7
    expect((await req('GET', '/meta/garbage')).json.error).toBe('invalid_address')
  })

  it('DELETE removes the record and answers 200 even when there is nothing', async () => {
    const w = await req('PATCH', `/meta/${CID_A}`, { title: 'x', year: '1' })
    const d = await req('DELETE', `/meta/${CID_A}`)
    expect(d.json).toEqual({ success: true, hashId: w.json.hashId, deleted: 3 })
    expect((await req('GET', `/meta/${CID_A}`)).status).toBe(404)
    expect(h.store.kv.get(`cid:${CID_A}`)).toBeUndefined()
    const again = await req('DELETE', `/meta/${CID_A}`)
    expect(again.json).toEqual({ success: true, hashId: CID_A, deleted: 0 })
  })

  it('lists record ids, all at once or in pages', async () => {
    const rids: string[] = []
    for (const cid of [CID_A, CID_B, MIDHASH]) rids.push((await req('PATCH', `/meta/${cid}`, { t: cid })).json.hashId)
    rids.sort()
    expect((await req('GET', '/meta')).json).toEqual({ hashIds: rids, count: 3, total: 3 })
    const p1 = await req('GET', '/meta?limit=2')
    expect(p1.json).toEqual({ hashIds: rids.slice(0, 2), count: 2, total: 3, nextAfter: rids[1] })
    const p2 = await req('GET', `/meta?limit=2&after=${p1.json.nextAfter as string}`)
    expect(p2.json).toEqual({ hashIds: rids.slice(2), count: 1, total: 3 })
    expect((await req('GET', '/meta?limit=0')).status).toBe(400)
    expect((await req('GET', '/meta?limit=abc')).status).toBe(400)
  })
})

describe('/meta/{hash}/{key…} properties', () => {
  it('reads a field as text/plain; a key may contain slashes and encoded segments', async () => {
    await req('PATCH', `/meta/${CID_A}`, { 'fileinfo/duration': '8878.5', 'titles/fra': 'Été', empty: '' })
    const r = await h.app.inject({ method: 'GET', url: `/meta/${CID_A}/fileinfo/duration` })
    expect(r.statusCode).toBe(200)
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect(r.body).toBe('8878.5')
    expect((await h.app.inject({ method: 'GET', url: `/meta/${CID_A}/titles%2Ffra` })).body).toBe('Été')
    const empty = await h.app.inject({ method: 'GET', url: `/meta/${CID_A}/empty` })
    expect(empty.statusCode).toBe(200)
    expect(empty.body).toBe('')
    const missing = await req('GET', `/meta/${CID_A}/nope`)
    expect(missing.status).toBe(404)
    expect(missing.json.error).toBe('unknown_property')
    expect((await req('GET', `/meta/${CID_B}/title`)).json.error).toBe('unknown_root')
  })

  it('PUT stores a JSON value (the empty string included) or the raw body', async () => {
    const w = await req('PUT', `/meta/${CID_A}/a/b`, { value: 'v1' })
    expect(w.json).toMatchObject({ success: true, property: 'a/b', created: true })
    await req('PUT', `/meta/${CID_A}/empty`, { value: '' })
    await req('PUT', `/meta/${CID_A}/raw`, 'raw text\nline 2', { 'content-type': 'text/plain' })
    await req('PUT', `/meta/${CID_A}/bin`, 'ÿ octets', { 'content-type': 'application/octet-stream' })
    const flat = h.store.records.getFlat(CID_A)!
    expect(flat['a/b']).toBe('v1')
    expect(flat.empty).toBe('')
    expect(flat.raw).toBe('raw text\nline 2')
    expect(flat.bin).toBe('ÿ octets')
  })

  it('PUT refuses a value that is missing, not a string, or not UTF-8', async () => {
    await req('PATCH', `/meta/${CID_A}`, { title: 'x' })
    await expectRefused('PUT', `/meta/${CID_A}/k`, { value: 5 }, 400, 'schema_violation')
    await expectRefused('PUT', `/meta/${CID_A}/k`, { other: 'x' }, 400, 'schema_violation')
    await expectRefused('PUT', `/meta/${CID_A}/k`, undefined, 400, 'schema_violation')
    await expectRefused('PUT', `/meta/${CID_A}/k`, Buffer.from([0x61, 0xff, 0xfe]), 400, 'invalid_value',
      { 'content-type': 'application/octet-stream' })
    await expectRefused('PUT', `/meta/${CID_A}/k`, 'x'.repeat(1024 * 1024 + 10), 413, 'payload_too_large', { 'content-type': 'text/plain' })
    await expectRefused('PUT', `/meta/${CID_A}/a//b`, { value: 'x' }, 400, 'invalid_field')
  })

  it('_add keeps a pipe-delimited set: new members appended, repeats are no-ops', async () => {
    const a1 = await req('POST', `/meta/${CID_A}/_add/tags`, { value: 'x' })
    expect(a1.json).toMatchObject({ success: true, property: 'tags', added: true })
    expect((await req('POST', `/meta/${CID_A}/_add/tags`, 'y', { 'content-type': 'text/plain' })).json.added).toBe(true)
    expect((await req('POST', `/meta/${CID_A}/_add/tags`, { value: 'x' })).json.added).toBe(false)
    expect(h.store.records.getProperty(CID_A, 'tags')).toBe('x|y')
    await expectRefused('POST', `/meta/${CID_A}/_add/tags`, { value: 'a|b' }, 400, 'invalid_value')
    await expectRefused('POST', `/meta/${CID_A}/_add/tags`, { value: '' }, 400, 'schema_violation')
    // A GET of a field literally named _add/… is a plain property read.
    await req('PUT', `/meta/${CID_A}/_add/odd`, { value: 'ok' })
    expect((await h.app.inject({ method: 'GET', url: `/meta/${CID_A}/_add/odd` })).body).toBe('ok')
  })

  it('DELETE removes one field', async () => {
    await req('PATCH', `/meta/${CID_A}`, { title: 'x', year: '1' })
    const d = await req('DELETE', `/meta/${CID_A}/year`)
    expect(d.json).toMatchObject({ success: true, property: 'year', deleted: true })
    expect(h.store.records.getFlat(CID_A)).toEqual({ title: 'x', [`cids/${CID_A}`]: 'true' })
    expect((await req('DELETE', `/meta/${CID_A}/year`)).json.deleted).toBe(false)
  })
})
