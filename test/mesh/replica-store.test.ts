/**
 * The ReplicaStore over real record stores: the change log answers each key
 * once with its current version (root tombstones included), the range
 * export pages through everything exactly once, the digest is equal
 * exactly when the replicated ranges are, and a page is checked whole.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { RecordReplica } from '../../src/mesh/index.js'
import { formatHlc, newRecordId, openNodeStore, VersionMap, type NodeStore, type RecordId, type RemoteEntry } from '../../src/records/index.js'
import { prng } from '../../src/mesh/testing/index.js'
import { randomRecordOp, testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function open (nodeId: string, opts: { streamRetention?: number, trimEvery?: number } = {}): { s: NodeStore, r: RecordReplica } {
  const t = tmpDir()
  const s = openNodeStore({ path: path.join(t.dir, 'r.db'), nodeId, backgroundCheckpoint: false, ...opts })
  cleanups.push(() => { s.close(); t.cleanup() })
  return { s, r: new RecordReplica(s.records) }
}

function allChanges (r: RecordReplica, cursor: string | null, limit = 7, maxBytes = 300): { entries: RemoteEntry[], pages: number, next: string | null } {
  const entries: RemoteEntry[] = []
  let pages = 0
  for (;;) {
    const p = r.changesSince(cursor, { limit, maxBytes })
    expect(p.gap).toBe(false)
    // Within a page each key comes once (across pages a key changed again comes again).
    expect(new Set(p.changes.map(e => e.key)).size).toBe(p.changes.length)
    pages++
    entries.push(...p.changes)
    if (p.next === p.head || p.changes.length === 0) return { entries, pages, next: p.next }
    cursor = p.next
  }
}

function allRange (r: RecordReplica, maxBytes: number): RemoteEntry[] {
  const out: RemoteEntry[] = []
  let after: string | null = null
  for (let i = 0; i < 10_000; i++) {
    const p = r.exportRange(after, { maxBytes })
    out.push(...p.entries)
    if (p.next === null) return out
    after = p.next
  }
  throw new Error('range export does not end')
}

describe('RecordReplica', () => {
  it('answers changes with each key once, at its current version, root tombstones included', async () => {
    const { s, r } = open('nodeA')
    const rid = await s.records.mint('/f/a', 1, 1, { title: 'x', year: '1999' })
    await s.records.mergeFlat(rid, { title: 'y' })
    await s.records.mergeFlat(rid, { title: 'z', genre: 'g' })
    await s.records.deleteProperty(rid, 'year')
    const other = await s.records.mint('/f/b', 1, 1, { title: 'gone' })
    await s.records.deleteRoot(other)
    const { entries, pages } = allChanges(r, null)
    expect(pages).toBeGreaterThan(1)
    const keys = [...new Set(entries.map(e => e.key))]
    // The last answer for a key is its current state.
    const byKey = new Map(entries.map(e => [e.key, e]))
    const vm = VersionMap.parse(s.kv.get(`ver:${rid}`))
    for (const f of ['title', 'genre', 'year', 'filePath']) {
      const e = byKey.get(`file:${rid}/${f}`)!
      expect(e.hlc + e.origin, f).toBe(vm.fields.get(f))
      expect(e.value, f).toBe(s.kv.get(`file:${rid}/${f}`) ?? null)
    }
    expect(byKey.get(`file:${rid}/year`)!.value).toBeNull()
    // The deleted root answers with its root tombstone (its keys' own versions were dropped under it).
    const rt = VersionMap.parse(s.kv.get(`ver:${other}`)).root!
    expect(byKey.get(`file:${other}`)).toEqual({ key: `file:${other}`, value: null, hlc: rt.slice(0, 16), origin: 'nodeA' })
    expect(keys.filter(k => k.startsWith(`file:${other}/`))).toEqual([])
  })

  it('pages the whole range exactly once whatever the page size, and a copy applied from it has the same digest', async () => {
    const { s, r } = open('nodeA')
    const rand = prng(11)
    const known: RecordId[] = []
    for (let i = 0; i < 120; i++) await randomRecordOp(s, rand, known, i)
    await s.records.mergeFlat(known[0], { big: 'v'.repeat(5000) })
    const whole = allRange(r, 1 << 20)
    for (const maxBytes of [1, 50, 400, 4096]) {
      const paged = allRange(r, maxBytes)
      expect(paged.map(e => e.key)).toEqual(whole.map(e => e.key))
    }
    const { s: s2, r: r2 } = open('nodeB')
    await s2.records.applyRemote(whole)
    expect(r2.digest()).toEqual(r.digest())
    expect(r.digest().keys).toBe(whole.length)
  })

  it('exports, a few dozen roots at a time, exactly what each root exports alone: tombstones, root tombstones and prototype-named fields included', async () => {
    const { s, r } = open('nodeA')
    for (let i = 0; i < 100; i++) {
      await s.records.mergeFlat(testCid(i), { title: `t${i}`, constructor: `c${i}`, ...(i % 3 === 0 ? { year: String(1900 + i), 'a/toString': 'x' } : {}) })
    }
    for (let i = 0; i < 100; i += 7) await s.records.deleteProperty(testCid(i), 'title')
    for (let i = 3; i < 100; i += 11) await s.records.deleteRoot(testCid(i))
    const alone = s.kv.keys('ver:', 'ver;').flatMap(k => s.records.exportRoot(k.slice(4) as RecordId))
    expect(alone.some(e => e.value === null && e.key.endsWith('/title'))).toBe(true)
    expect(alone.some(e => e.value === null && e.key.split('/').length === 1)).toBe(true)
    expect(alone.filter(e => e.key.endsWith('/constructor') && e.value !== null).length).toBeGreaterThan(80)
    for (const maxBytes of [1, 700, 1 << 20]) expect(allRange(r, maxBytes)).toEqual(alone)
  })

  it('has a digest equal exactly when the replicated ranges are: duplicates and derived rows do not count, versions do', async () => {
    const a = open('nodeA')
    const b = open('nodeB')
    expect(a.r.digest()).toEqual(b.r.digest())
    const rid = await a.s.records.mint('/f/a', 1, 1, { title: 'x', [`cids/${testCid(1)}`]: 'true' })
    expect(a.r.digest().digest).not.toBe(b.r.digest().digest)
    await b.s.records.applyRemote(allRange(a.r, 1 << 20))
    expect(b.r.digest()).toEqual(a.r.digest())
    await b.s.records.addDuplicatePath(rid, '/elsewhere/copy')
    expect(b.r.digest()).toEqual(a.r.digest())
    // Same value, newer version: the ranges differ.
    await b.s.records.applyRemote([{ key: `file:${rid}/title`, value: 'x', hlc: b.s.records.hlc.now(), origin: 'nodeB' }])
    expect(b.r.digest().digest).not.toBe(a.r.digest().digest)
  })

  it('reports a gap for a cursor the log no longer holds or never issued', async () => {
    const { s, r } = open('nodeA', { streamRetention: 10, trimEvery: 5 })
    expect(r.changesSince(r.head(), { limit: 10, maxBytes: 1000 })).toMatchObject({ changes: [], gap: false })
    const rid = await s.records.mint('/f/a', 1, 1, { title: 'x' })
    const early = r.head()
    for (let i = 0; i < 40; i++) await s.records.mergeFlat(rid, { [`f${i}`]: 'v' })
    expect(r.changesSince(early, { limit: 10, maxBytes: 1000 }).gap).toBe(true)
    expect(r.changesSince('9999999999999-0', { limit: 10, maxBytes: 1000 }).gap).toBe(true)
    expect(r.changesSince(r.head(), { limit: 10, maxBytes: 1000 })).toMatchObject({ changes: [], gap: false })
  })

  it('checks a page whole: what repeats across entries is checked once, and any malformed entry refuses it with its reason', async () => {
    const { r } = open('n1')
    const rid = newRecordId(Date.now())
    const hlc = formatHlc({ ms: Date.now(), counter: 0 })
    const at = (field: string, over: Partial<RemoteEntry> = {}): RemoteEntry => ({ key: `file:${rid}/${field}`, value: 'v', hlc, origin: 'peer-a', ...over })
    const good = [at('title'), at('year'), at('cids/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', { value: '' })]
    expect(r.checkEntries(good)).toBeUndefined()
    expect(r.checkEntries([])).toBeUndefined()
    // The same root, clock and origin as the entries before, each bad in another way: the cache must not let it through.
    expect(r.checkEntries([...good, at('cid_sha256')])).toMatch(/deprecated|cid_sha256/)
    expect(r.checkEntries([...good, at('a/__proto__')])).toMatch(/__proto__/)
    expect(r.checkEntries([...good, at('title', { origin: 'bad origin!' })])).toMatch(/origin/)
    expect(r.checkEntries([...good, at('title', { hlc: 'not-a-clock' })])).toMatch(/hlc/)
    expect(r.checkEntries([...good, { ...at('title'), key: `file:${rid.slice(0, -1)}x/title` }])).toMatch(/record id/)
    expect(r.checkEntries([...good, at('title', { value: 'a\uD800b' })])).toMatch(/surrogate/)
    expect(r.checkEntries([at('cids/not-a-cid', { value: '' }), ...good])).toMatch(/cid/)
  })

  it('hears committed changes, local and remote, with their versions', async () => {
    const { s, r } = open('nodeA')
    const heard: RemoteEntry[] = []
    const off = r.onChanges(ch => { heard.push(...ch) })
    const rid = await s.records.mint('/f/a', 1, 1, { title: 'x' })
    await s.records.applyRemote([{ key: `file:${rid}/year`, value: '2001', hlc: s.records.hlc.now(), origin: 'nodeB' }])
    off()
    await s.records.mergeFlat(rid, { after: 'unsubscribed' })
    expect(heard.map(e => `${e.key.split('/')[1]} ${e.origin}`).sort()).toEqual(['filePath nodeA', 'mtimeNano nodeA', 'sizeByte nodeA', 'title nodeA',
      'year nodeB'])
    for (const e of heard) expect(e.hlc + e.origin).toBe(VersionMap.parse(s.kv.get(`ver:${rid}`)).fields.get(e.key.split('/')[1]))
  })
})
