import { createHash } from 'node:crypto'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { encodeCidV1 } from '../../src/cid/index.js'
import { SchemaGateError, compareEventIds, parseEventId, prefixEnd } from '../../src/kv/index.js'
import {
  META_EVENTS, VersionMap, decodeChange, formatHlc, openNodeStore, presentChange, versionHlc, versionOrigin,
  type CommittedChange, type NodeStore, type NodeStoreOptions, type RecordId, type RemoteEntry
} from '../../src/records/index.js'
import { prng } from '../helpers/prng.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function store (opts: Partial<NodeStoreOptions> = {}): NodeStore {
  const t = tmpDir()
  const s = openNodeStore({ path: path.join(t.dir, 'c.db'), nodeId: 'node-a', ...opts })
  cleanups.push(() => { s.close(); t.cleanup() })
  return s
}

function cid (n: number): string {
  return encodeCidV1(0x55, 0x12, createHash('sha256').update(`change-log ${n}`).digest())
}

const hlcAt = (ms: number, c = 0): string => formatHlc({ ms, counter: c })
/** A root this node never held (a valid UUIDv7 id minted elsewhere). */
const FOREIGN = '01M8ME6YDNEBQ9WHRFBFD4HMGQ' as RecordId
const REMOTE = '01M8ME6YDNEBQ9WHRFBFD4HMGR' as RecordId

/**
 * The entry that answers for a key, as `ver:` and the `file:` row hold it:
 * the key with its own version, or the root tombstone when the key's own
 * version was dropped under it. What changesSince must report.
 */
function stored (s: NodeStore, key: string): RemoteEntry {
  const rest = key.slice(5)
  const slash = rest.indexOf('/')
  const rid = slash < 0 ? rest : rest.slice(0, slash)
  const vm = VersionMap.parse(s.kv.get(`ver:${rid}`))
  const own = slash < 0 ? undefined : vm.fields.get(rest.slice(slash + 1))
  if (own !== undefined) return { key, value: s.kv.get(key) ?? null, hlc: versionHlc(own), origin: versionOrigin(own) }
  if (vm.root === undefined) throw new Error(`no version for ${key}`)
  return { key: `file:${rid}`, value: null, hlc: versionHlc(vm.root), origin: versionOrigin(vm.root) }
}

/** Local writes, deletes, a group, DeleteRoot, and remote entries (a root tombstone for a root never held among them). */
async function workload (s: NodeStore): Promise<{ a: RecordId, b: RecordId, c: RecordId, d: RecordId }> {
  const now = Date.now()
  const a = await s.records.mint('/files/a.mkv', 10, 1, { title: 'A', year: '2001', [`cids/${cid(1)}`]: 'true' })
  const b = await s.records.mint('/files/b.mkv', 20, 2, { title: 'B', genre: 'Drama' })
  const c = await s.records.mint('/files/c.mkv', 30, 3, { title: 'C', [`cids/${cid(1)}`]: 'true' }) // joins a's group
  await s.records.mergeFlat(a, { title: 'A2' })
  await s.records.mergeFlat(a, { title: 'A3' }) // the same key twice
  await s.records.deleteProperty(b, 'genre')
  await s.records.setFlat(b, { rating: '5' }) // drops title
  const d = await s.records.mint('/files/d.mkv', 40, 4, { title: 'D' })
  await s.records.deleteRoot(d)
  await s.records.applyRemote([
    { key: `file:${REMOTE}/title`, value: 'from a peer', hlc: hlcAt(now), origin: 'peer-b' },
    { key: `file:${REMOTE}/gone`, value: null, hlc: hlcAt(now), origin: 'peer-b' },
    { key: `file:${a}/year`, value: '1999', hlc: hlcAt(now + 5000), origin: 'peer-b' },
    { key: `file:${FOREIGN}`, value: null, hlc: hlcAt(now), origin: 'peer-c' }
  ])
  return { a, b, c, d }
}

/** Reads the whole log with changesSince in pages of `limit`, checking each page's cursor bookkeeping. */
function pull (s: NodeStore, limit: number, maxBytes?: number): { changes: RemoteEntry[], pages: number } {
  const changes: RemoteEntry[] = []
  let cursor: string | undefined
  let pages = 0
  for (;;) {
    const page = s.records.changesSince(cursor, { limit, maxBytes })
    expect(page.gap).toBe(false)
    expect(page.head).toBe(s.kv.streamHead(META_EVENTS))
    const keys = page.changes.map(e => e.key)
    expect(new Set(keys).size).toBe(keys.length) // each key once per page
    changes.push(...page.changes)
    if (page.next === cursor) return { changes, pages }
    pages++
    cursor = page.next
    if (cursor === page.head) return { changes, pages }
  }
}

describe('changesSince', () => {
  it('reports every changed key once, with the value and version ver: holds, across local writes, deletes, DeleteRoot and applyRemote', async () => {
    const s = store()
    const { a, b, c, d } = await workload(s)
    const logged = s.records.readChangeLog(undefined, 10_000)
    const distinct = [...new Set(logged.map(e => e.key))]
    // The log has every kind of change this workload made.
    expect(distinct).toEqual(expect.arrayContaining([
      `file:${a}/title`, `file:${a}/year`, `file:${b}/genre`, `file:${b}/title`, `file:${b}/rating`,
      `file:${c}/title`, `file:${d}`, `file:${d}/title`, `file:${REMOTE}/title`, `file:${REMOTE}/gone`, `file:${FOREIGN}`
    ]))
    expect(logged.length).toBeGreaterThan(distinct.length) // some keys changed more than once

    const page = s.records.changesSince(undefined, { limit: 10_000 })
    expect(page.gap).toBe(false)
    expect(page.next).toBe(logged[logged.length - 1].id)
    expect(page.head).toBe(page.next)
    // Each key once, in log order; keys deleted with their root answer once, as the root tombstone.
    const answering = [...new Set(distinct.map(k => stored(s, k).key))]
    expect(page.changes.map(e => e.key)).toEqual(answering)
    for (const e of page.changes) expect(e).toEqual(stored(s, e.key))
    // Spot checks against what the workload did.
    const byKey = new Map(page.changes.map(e => [e.key, e]))
    expect(byKey.get(`file:${a}/title`)!.value).toBe('A3')
    expect(byKey.get(`file:${a}/year`)).toMatchObject({ value: '1999', origin: 'peer-b' })
    expect(byKey.get(`file:${b}/genre`)!.value).toBeNull()
    expect(byKey.get(`file:${c}/title`)!.value).toBe('C')
    expect(byKey.get(`file:${d}`)).toMatchObject({ value: null, origin: 'node-a' })
    expect(byKey.has(`file:${d}/title`)).toBe(false) // shadowed: the root tombstone answers for it
    expect(byKey.get(`file:${b}/title`)).toMatchObject({ value: null, origin: 'node-a' }) // dropped by setFlat: a key tombstone
    expect(byKey.get(`file:${FOREIGN}`)).toMatchObject({ value: null, origin: 'peer-c' })
    expect(byKey.get(`file:${REMOTE}/gone`)).toMatchObject({ value: null, origin: 'peer-b' })

    // Paged reads reach the same state: every key, each with its stored version, the cursor ending at the head.
    const paged = pull(s, 3)
    expect(paged.pages).toBeGreaterThan(3)
    expect(new Set(paged.changes.map(e => e.key))).toEqual(new Set(answering))
    for (const e of paged.changes) expect(e).toEqual(stored(s, e.key))
  })

  it('continues after a cursor, and answers an empty page at the head', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x' })
    const head = s.kv.streamHead(META_EVENTS)!
    await s.records.mergeFlat(rid, { title: 'y', year: '2000' })
    const page = s.records.changesSince(head, { limit: 100 })
    expect(page.changes.map(e => [e.key, e.value])).toEqual([[`file:${rid}/title`, 'y'], [`file:${rid}/year`, '2000']])
    const empty = s.records.changesSince(page.next, { limit: 100 })
    expect(empty).toEqual({ changes: [], next: page.next, head: page.next, gap: false })
    expect(s.records.changesSince(undefined, { limit: 100 }).changes).toHaveLength(5)
  })

  it('bounds a page by bytes, never below one change, and resumes where it stopped', async () => {
    const s = store()
    const big = 'v'.repeat(10_000)
    const rid = await s.records.mint('/files/a', 1, 1, { a: big, b: big, c: big, d: big })
    const first = s.records.changesSince(undefined, { limit: 100, maxBytes: 25_000 })
    expect(first.changes.length).toBeGreaterThanOrEqual(1)
    expect(first.changes.reduce((n, e) => n + (e.value?.length ?? 0), 0)).toBeLessThanOrEqual(25_000)
    const tiny = s.records.changesSince(undefined, { limit: 100, maxBytes: 1 })
    expect(tiny.changes).toHaveLength(1)
    const all = pull(s, 100, 25_000)
    expect(all.pages).toBeGreaterThan(1)
    expect(new Set(all.changes.map(e => e.key))).toEqual(new Set(['a', 'b', 'c', 'd', 'filePath', 'sizeByte', 'mtimeNano'].map(f => `file:${rid}/${f}`)))
  })

  it('reports a gap for a cursor ahead of the head (a log that never issued it)', async () => {
    const s = store()
    expect(s.records.changesSince('5-0', { limit: 10 })).toEqual({ changes: [], next: '5-0', head: undefined, gap: true })
    expect(s.records.changesSince('0-0', { limit: 10 }).gap).toBe(false)
    await s.records.mint('/files/a', 1, 1)
    const head = s.kv.streamHead(META_EVENTS)!
    const ahead = `${parseEventId(head).ms + 1000}-0`
    expect(s.records.changesSince(ahead, { limit: 10 }).gap).toBe(true)
    expect(s.records.changesSince(head, { limit: 10 }).gap).toBe(false)
  })

  it('reports a gap when retention trimmed entries after the cursor, and none for a cursor still covered', async () => {
    const s = store({ streamRetention: 10, trimEvery: 1 })
    // A store that never trimmed: even reading from the start is complete.
    await s.records.mint('/files/0', 1, 1)
    expect(s.records.changesSince(undefined, { limit: 100 }).gap).toBe(false)
    const early = s.kv.streamHead(META_EVENTS)!
    for (let i = 1; i <= 10; i++) await s.records.mint(`/files/${i}`, i, i)
    const first = s.kv.streamFirst(META_EVENTS)!
    expect(compareEventIds(parseEventId(early), parseEventId(first))).toBe(-1)
    for (const cursor of [undefined, '0', early]) {
      const page = s.records.changesSince(cursor, { limit: 100 })
      expect(page.gap, String(cursor)).toBe(true)
      expect(page.changes).toEqual([])
      expect(page.head).toBe(s.kv.streamHead(META_EVENTS))
    }
    // The newest removed id is still a complete cursor: everything after it is retained.
    const lost = s.kv.streamTrimmedThrough(META_EVENTS)!
    const page = s.records.changesSince(lost, { limit: 100 })
    expect(page.gap).toBe(false)
    expect(page.changes.length).toBeGreaterThan(0)
    expect(s.records.changesSince(s.kv.streamHead(META_EVENTS), { limit: 100 }).gap).toBe(false)
  })
})

describe('onChanges', () => {
  it('hands each commit\'s change-log entries to listeners after COMMIT, with values and versions', async () => {
    const s = store()
    const heard: CommittedChange[][] = []
    const visible: boolean[] = []
    const off = s.records.onChanges(batch => {
      heard.push([...batch])
      // After COMMIT: the change is readable when the listener runs.
      visible.push(batch.every(c => (s.kv.get(c.key) ?? null) === c.value || c.key.indexOf('/', 5) < 0))
    })
    const head = s.kv.streamHead(META_EVENTS)
    // Two writes in one turn share one group commit: one delivery.
    const [rid] = await Promise.all([
      s.records.mint('/files/a', 1, 1, { title: 'x' }),
      s.records.mint('/files/b', 2, 2)
    ])
    expect(heard).toHaveLength(1)
    const now = Date.now()
    await s.records.applyRemote([
      { key: `file:${rid}/title`, value: 'remote', hlc: hlcAt(now + 5), origin: 'peer-b' },
      { key: `file:${FOREIGN}`, value: null, hlc: hlcAt(now), origin: 'peer-c' }
    ])
    await s.records.deleteRoot(rid)
    const all = heard.flat()
    const logged = s.records.readChangeLog(head, 1000)
    // Exactly the log's rows, in order, each with the version its row carries.
    expect(all.map(c => c.id)).toEqual(logged.map(e => e.id))
    expect(all.map(c => c.key)).toEqual(logged.map(e => e.key))
    for (const [i, c] of all.entries()) expect(c.hlc + c.origin).toBe(logged[i].version)
    expect(all.find(c => c.key === `file:${rid}/title` && c.origin === 'peer-b')!.value).toBe('remote')
    expect(all.find(c => c.key === `file:${FOREIGN}`)).toMatchObject({ value: null, origin: 'peer-c' })
    expect(all.filter(c => c.key === `file:${rid}`)).toHaveLength(1)
    expect(visible.every(Boolean)).toBe(true)
    // A write of the values already held commits nothing and is not heard; after unsubscribing nothing is.
    const n = heard.length
    await s.records.mergeFlat(await s.records.mint('/files/c', 3, 3, { t: '1' }), { t: '1' })
    expect(heard.length).toBe(n + 1)
    off()
    await s.records.mint('/files/d', 4, 4)
    expect(heard.length).toBe(n + 1)
  })

  it('does not stop other listeners when one throws', async () => {
    const s = store()
    let heard = 0
    s.records.onChanges(() => { throw new Error('broken listener') })
    s.records.onChanges(batch => { heard += batch.length })
    await s.records.mint('/files/a', 1, 1)
    expect(heard).toBe(3)
  })
})

describe('exportRange', () => {
  it('pages the whole replicated range in root order, tombstoned roots included, and rebuilds an identical replica', async () => {
    const s = store()
    await workload(s)
    const roots = s.kv.keys('ver:', prefixEnd('ver:')).map(k => k.slice(4) as RecordId)
    expect(roots).toContain(FOREIGN) // a root known only by its tombstone
    const whole = roots.flatMap(r => s.records.exportRoot(r))
    expect(whole.map(e => e.key)).toEqual(whole.map(e => e.key).sort()) // key order, root tombstone first
    const head = s.kv.streamHead(META_EVENTS)
    for (const [limit, maxBytes] of [[3, undefined], [1000, 1], [1000, 400], [10_000, undefined]] as const) {
      const entries: RemoteEntry[] = []
      let after: string | undefined
      let pages = 0
      for (; pages < 1000; pages++) {
        const page = s.records.exportRange(after, { limit, maxBytes })
        expect(page.head).toBe(head)
        expect(page.entries.length).toBeLessThanOrEqual(limit)
        entries.push(...page.entries)
        if (page.next === undefined) break
        expect(page.next).toBe(page.entries[page.entries.length - 1].key)
        after = page.next
      }
      expect(entries, `${limit} ${maxBytes}`).toEqual(whole)
      if (limit < whole.length) expect(pages).toBeGreaterThan(1)
    }
    const entries = whole
    expect(entries).toContainEqual(expect.objectContaining({ key: `file:${FOREIGN}`, value: null, origin: 'peer-c' }))
    // A fresh node that applies the export holds the same replicated rows.
    const fresh = store({ nodeId: 'node-z' })
    await fresh.records.applyRemote(entries)
    for (const p of ['file:', 'ver:', 'cid:', 'idx:roots/', 'idx:grp']) expect(fresh.kv.prefix(p), p).toEqual(s.kv.prefix(p))
  })

  it('bounds a page by bytes but always returns at least one entry, and continues within a root', async () => {
    const s = store()
    const rid = await s.records.mint('/files/0', 0, 0, { blob: 'x'.repeat(5000), more: 'y'.repeat(5000) })
    const page = s.records.exportRange(undefined, { limit: 10, maxBytes: 1 })
    expect(page.entries.map(e => e.key)).toEqual([`file:${rid}/blob`])
    const rest = s.records.exportRange(page.next, { limit: 10, maxBytes: 5300 })
    expect(rest.entries.map(e => e.key)).toEqual([`file:${rid}/filePath`, `file:${rid}/more`])
    const last = s.records.exportRange(rest.next, { limit: 10 })
    expect(last.entries.map(e => e.key)).toEqual([`file:${rid}/mtimeNano`, `file:${rid}/sizeByte`])
    expect(last.next).toBeUndefined()
  })
})

describe('deterministic runs', () => {
  it('two stores with the same virtual clock and seed write byte-identical files', async () => {
    const run = async (): Promise<Array<[string, string]>> => {
      let t = 1_800_000_000_000
      const s = store({ nodeId: 'sim-1', now: () => t, random: prng(7) })
      for (let i = 0; i < 20; i++) {
        t += i % 3 // several ids in one millisecond too
        const rid = await s.records.mint(`/files/${i}`, i, i, { title: `t${i}` })
        if (i % 4 === 0) await s.records.mergeFlat(cid(100 + i), { year: String(i) }) // an unknown CID mints a root
        if (i % 5 === 0) await s.records.deleteRoot(rid)
      }
      return s.kv.range('', '\u{10FFFF}')
    }
    const a = await run()
    const b = await run()
    expect(b).toEqual(a)
    expect(a.filter(([k]) => k.startsWith('idx:roots/')).length).toBeGreaterThan(10)
  })
})

describe('the SSE view of the log and older rows', () => {
  it('shows field rows as {type, key, ts} with ts the id\'s milliseconds, hides root tombstones, and reads rows from before versions', () => {
    const id = '1748000000123-4'
    const set = presentChange({ stream: META_EVENTS, id: id as never, fields: { t: 's', k: 'file:R/title', v: '0000000000000000n' } })
    expect(set!.fields).toEqual({ type: 'set', key: 'file:R/title', ts: '1748000000123' })
    const del = presentChange({ stream: META_EVENTS, id: id as never, fields: { t: 'd', k: 'file:R/title', v: '0000000000000000n' } })
    expect(del!.fields.type).toBe('del')
    expect(presentChange({ stream: META_EVENTS, id: id as never, fields: { t: 'd', k: `file:${FOREIGN}`, v: '0000000000000000n' } })).toBeUndefined()
    const legacy = { stream: META_EVENTS, id: id as never, fields: { type: 'set', key: 'file:R/year', ts: '1700000000000' } }
    expect(presentChange(legacy)).toEqual(legacy)
    expect(decodeChange(legacy)).toEqual({ id, op: 'set', key: 'file:R/year' })
  })
})

describe('schema gate', () => {
  it('hands a commit listener that names its streams only their entries, shaped, and never a commit without them', async () => {
    const s = store()
    const heard: Array<Array<[string, string | undefined]>> = []
    const wanted = new Set<string>()
    const stop = s.records.events.onCommit(entries => { heard.push(entries.map(e => [e.stream, e.fields?.type])) }, st => wanted.has(st))
    const a = await s.records.mint('/files/w.mkv', 1, 1, { title: 'W' })
    await s.records.local.write(tx => { tx.appendEvent('file:events', { type: 'add' }) })
    expect(heard).toEqual([]) // nobody follows a stream yet
    wanted.add('file:events')
    await Promise.all([s.records.mergeFlat(a, { year: '2001' }), s.records.local.write(tx => { tx.appendEvent('file:events', { type: 'change' }) })])
    expect(heard).toEqual([[['file:events', 'change']]]) // the change-log entries left out, in whichever commit they went
    wanted.add(META_EVENTS)
    await s.records.mergeFlat(a, { year: '2002' })
    expect(heard[1]).toEqual([[META_EVENTS, 'set']]) // shown as clients of the original see it
    stop()
  })

  it('refuses a file with records and no schema version, naming the file, without stamping it', () => {
    for (const key of ['idx:roots/X', `file:${FOREIGN}/title`]) {
      const t = tmpDir()
      cleanups.push(t.cleanup)
      const file = path.join(t.dir, 'legacy.db')
      const raw = new Database(file)
      raw.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID')
      raw.prepare('INSERT INTO kv VALUES (?, ?)').run(key, '')
      raw.close()
      expect(() => openNodeStore({ path: file })).toThrow(SchemaGateError)
      expect(() => openNodeStore({ path: file })).toThrow(file)
      expect(() => openNodeStore({ path: file })).toThrow(/holds records/)
    }
  })
})
