/**
 * The bulk path (records.applyBulk): pages of a peer's range, cut by bytes
 * anywhere (inside a root too), applied one transaction per page with
 * search's work deferred; after the last page the store equals one that
 * took the same entries through applyBatch, and search answers as the
 * reference scan, before and after its rebuild. A page's last root is held
 * back (and kept in the store) until the next page: no root is ever half
 * applied, even across a reopen between pages.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { prefixEnd } from '../../src/kv/index.js'
import { BULK_CARRY_KEY, formatHlc, newRecordId, openNodeStore, type NodeStore, type RemoteEntry } from '../../src/records/index.js'
import { createSearch, type Search, type SearchRequest } from '../../src/search/index.js'
import { referenceSearch } from '../../src/search/testing.js'
import { tmpDir } from '../helpers/tmp.js'
import { prng } from '../helpers/prng.js'
import { randomRecordOp } from '../helpers/record-ops.js'
import { fingerprintErrors } from './fingerprint-check.js'
import type { RecordId } from '../../src/records/index.js'
import { syntheticRecord } from '../../bench/lib/synthetic.js'

const RECORDS = 600
const baseMs = Date.now() - 3_600_000

/** The records as a peer exports its range: root by root in key order, a root's keys in key order. */
function range (): RemoteEntry[] {
  const out: RemoteEntry[] = []
  const roots = Array.from({ length: RECORDS }, (_, i) => ({ rid: newRecordId(baseMs + i), i })).sort((a, b) => a.rid < b.rid ? -1 : 1)
  for (const { rid, i } of roots) {
    const r = syntheticRecord(i)
    const hlc = formatHlc({ ms: baseMs + i, counter: 0 })
    for (const f of Object.keys(r.fields).sort()) out.push({ key: `file:${rid}/${f}`, value: r.fields[f], hlc, origin: 'peer-a' })
    // A tombstone for a key never held, as a range carries them.
    if (i % 50 === 0) out.push({ key: `file:${rid}/zz-gone`, value: null, hlc, origin: 'peer-a' })
  }
  return out
}

/** Pages cut every `n` entries, wherever that falls (inside roots). */
function pages (all: RemoteEntry[], n: number): RemoteEntry[][] {
  const out: RemoteEntry[][] = []
  for (let i = 0; i < all.length; i += n) out.push(all.slice(i, i + n))
  return out
}

const ridOf = (k: string): string => { const s = k.indexOf('/', 5); return s < 0 ? k.slice(5) : k.slice(5, s) }

/** Every root the store holds has all of its keys in the range (none half applied). */
function halfApplied (s: NodeStore, all: RemoteEntry[]): string[] {
  const want = new Map<string, number>()
  for (const e of all) if (e.value !== null) want.set(ridOf(e.key), (want.get(ridOf(e.key)) ?? 0) + 1)
  const have = new Map<string, number>()
  for (const k of s.kv.keys('file:', prefixEnd('file:'))) have.set(ridOf(k), (have.get(ridOf(k)) ?? 0) + 1)
  return [...have].filter(([rid, n]) => n !== want.get(rid)).map(([rid]) => rid)
}

const QUERIES: SearchRequest[] = [
  { query: 'river' },
  { filters: [{ property: 'imdbid', values: [syntheticRecord(RECORDS - 1).fields.imdbid], exact: true }] },
  { filters: [{ property: 'year', values: ['1999'], exact: true }], query: 'night' },
  { limit: 5 }
]

function expectReference (s: NodeStore, search: Search): void {
  for (const q of QUERIES) {
    const got = search.search(q)
    const ref = referenceSearch(s.records, q)
    expect(got.total, JSON.stringify(q)).toBe(ref.total)
    expect(got.results.map(r => r.hashId).sort(), JSON.stringify(q)).toEqual(ref.results.map(r => r.hashId).sort())
  }
}

let tmp: ReturnType<typeof tmpDir> | undefined
afterEach(() => { tmp?.cleanup(); tmp = undefined })

async function open (file: string): Promise<{ s: NodeStore, search: Search }> {
  const s = openNodeStore({ path: file, nodeId: 'node-b' })
  const search = createSearch({ kv: s.kv, records: s.records }, { internal: { syncRepairMaxRoots: 0 } })
  await search.start()
  return { s, search }
}

describe('records.applyBulk', () => {
  it('applies pages cut inside roots whole root by whole root, and ends equal to applyBatch with search as the reference', async () => {
    tmp = tmpDir('mc-bulk-')
    const all = range()
    const ref = openNodeStore({ path: path.join(tmp.dir, 'ref.db'), nodeId: 'node-r' })
    await ref.records.applyBatch(all)
    const { s, search } = await open(path.join(tmp.dir, 'b.db'))
    const ps = pages(all, 997)
    for (let i = 0; i < ps.length; i++) {
      await s.records.applyBulk(ps[i], { done: i === ps.length - 1, expectedRecords: RECORDS })
      expect(halfApplied(s, all)).toEqual([])
      if (i < ps.length - 1) {
        // Records are readable as they arrive; search says it is building and answers as the reference meanwhile.
        expect(search.building?.()).toBeDefined()
        expect(s.kv.get(BULK_CARRY_KEY)).toBeDefined()
        expect(search.pendingCount()).toBe(0)
        if (i === 3) expectReference(s, search)
      }
    }
    const p = s.records.bulkProgress()
    expect(p).toMatchObject({ active: false, records: RECORDS, keys: all.length, expectedRecords: RECORDS, secondsLeft: 0 })
    expect(s.kv.get(BULK_CARRY_KEY)).toBeUndefined()
    expect(s.records.countRecords()).toBe(RECORDS)
    expect(s.records.digest()).toEqual(ref.records.digest())
    expectReference(s, search)
    await search.whenIdle()
    expect(search.building?.()).toBeUndefined()
    expect(search.ftsRowCount()).toBe(RECORDS)
    expectReference(s, search)
    await search.stop()
    s.close()
    ref.close()
  })

  it('continues after a reopen between pages: the held-back root is kept in the store, and search rebuilds at open', async () => {
    tmp = tmpDir('mc-bulk-')
    const all = range()
    const file = path.join(tmp.dir, 'b.db')
    const ps = pages(all, 1500)
    const half = Math.floor(ps.length / 2)
    let { s, search } = await open(file)
    for (let i = 0; i < half; i++) await s.records.applyBulk(ps[i])
    // Stopped halfway (no goodbye for the bulk: no last page): what is on disk is whole roots and the held-back entries.
    await search.stop()
    s.close();
    ({ s, search } = await open(file))
    expect(halfApplied(s, all)).toEqual([])
    // The store says records came in bulk unindexed: search rebuilds, answering as the reference meanwhile.
    expectReference(s, search)
    // The page last applied is taken again (its cursor was not saved), then the rest.
    for (let i = half - 1; i < ps.length; i++) {
      await s.records.applyBulk(ps[i], { done: i === ps.length - 1 })
      expect(halfApplied(s, all)).toEqual([])
    }
    expect(s.records.countRecords()).toBe(RECORDS)
    await search.whenIdle()
    expect(search.building?.()).toBeUndefined()
    expectReference(s, search)
    const ref = openNodeStore({ path: path.join(tmp.dir, 'ref.db'), nodeId: 'node-r' })
    await ref.records.applyBatch(all)
    expect(s.records.digest()).toEqual(ref.records.digest())
    ref.close()
    await search.stop()
    s.close()
    // Built: the next open takes the index as it is.
    ;({ s, search } = await open(file))
    expect(search.building?.()).toBeUndefined()
    await search.stop()
    s.close()
  })

  it('checks entries unless the caller screened them (`checked`), and checks a held-back root whatever the page says', async () => {
    tmp = tmpDir('mc-bulk-')
    const { s, search } = await open(path.join(tmp.dir, 'c.db'))
    const hlc = formatHlc({ ms: baseMs, counter: 0 })
    const [r1, r2, r3, r4] = Array.from({ length: 4 }, (_, i) => newRecordId(baseMs + i))
    // `canonical_cid` is derived on read: no peer may write it.
    const bad = (rid: string): RemoteEntry => ({ key: `file:${rid}/canonical_cid`, value: 'x', hlc, origin: 'peer-a' })
    const good = (rid: string): RemoteEntry => ({ key: `file:${rid}/title`, value: 'ok', hlc, origin: 'peer-a' })
    await expect(s.records.applyBatch([good(r1), bad(r1)])).rejects.toThrow(/remote entry refused/)
    expect(s.records.getFlat(r1)).toBeUndefined()
    // Screened by the caller: taken as they are, with no second check (what the mesh passes has passed checkEntries).
    await s.records.applyBatch([good(r1)], { checked: true })
    expect(s.records.getFlat(r1)).toMatchObject({ title: 'ok' })
    // An unchecked page's last root is held back unchecked; a checked page after it still checks it.
    await s.records.applyBulk([good(r2), bad(r3)])
    await expect(s.records.applyBulk([good(r4)], { checked: true, done: true })).rejects.toThrow(/remote entry refused/)
    expect(s.records.getFlat(r4)).toBeUndefined()
    await search.stop()
    s.close()
  })

  it('inserts the roots it holds nothing of as they are, and ends with the state a merge of the same entries leaves, derived rows included', async () => {
    tmp = tmpDir('mc-bulk-')
    // A peer's history: groups (roots sharing CIDs), deleted records, deleted fields and members, holders released.
    const src = openNodeStore({ path: path.join(tmp.dir, 'src.db'), nodeId: 'peer-s' })
    const rand = prng(5)
    const known: RecordId[] = []
    for (let i = 0; i < 500; i++) await randomRecordOp(src, rand, known, i)
    const all: RemoteEntry[] = []
    for (let after: string | undefined; ;) {
      const page = src.records.exportRange(after, { limit: 211 })
      all.push(...page.entries)
      if (page.next === undefined) break
      after = page.next
    }
    // What gossip brings meanwhile: newer versions of roots the range holds (some before their page, some after), and a new root.
    const later = src.records.hlc.now()
    const gossip: RemoteEntry[] = [
      ...known.slice(0, 12).map(rid => ({ key: `file:${rid}/title`, value: 'gossip', hlc: later, origin: 'peer-g' })),
      { key: `file:${known[3]}/cids/${'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'}`, value: 'true', hlc: later, origin: 'peer-g' }
    ]
    const ref = openNodeStore({ path: path.join(tmp.dir, 'ref.db'), nodeId: 'node-r' })
    await ref.records.applyBatch(all)
    await ref.records.applyRemote(gossip)
    const { s, search } = await open(path.join(tmp.dir, 'b.db'))
    const ps = pages(all, 150)
    for (let i = 0; i < ps.length; i++) {
      if (i === Math.floor(ps.length / 2)) await s.records.applyRemote(gossip)
      await s.records.applyBulk(ps[i], { done: i === ps.length - 1 })
    }
    const state = (x: NodeStore): Record<string, string> => {
      const out: Record<string, string> = {}
      for (const p of ['file:', 'ver:', 'cid:', 'idx:roots/', 'idx:grp/', 'idx:grpm/', 'idx:schema/']) for (const [k, v] of x.kv.prefix(p)) out[k] = v
      out.count = String(x.records.countRecords())
      return out
    }
    expect(state(s)).toEqual(state(ref))
    expect(s.records.digest()).toEqual(ref.records.digest())
    expect(fingerprintErrors(s)).toEqual([])
    // What waited for the end is gone; most roots went in as they were (they wrote no change-log entries).
    expect(s.kv.prefix('idx:bulk/')).toEqual([])
    expect(s.kv.streamLength('meta:events')).toBeLessThan(ref.kv.streamLength('meta:events') / 4)
    await search.whenIdle()
    expectReference(s, search)
    await search.stop()
    s.close()
    ref.close()
    src.close()
  })
})
