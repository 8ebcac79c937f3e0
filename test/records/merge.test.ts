import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  META_EVENTS, InvalidRemoteEntryError, VersionMap, formatHlc, openNodeStore, type NodeStore, type RecordId, type RemoteEntry
} from '../../src/records/index.js'
import { prng, shuffle } from '../helpers/prng.js'
import { OP_CIDS, randomRecordOp, replicatedDoc, testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'
import { Mutator } from '../../src/records/mutation.js'
import { groupInvariantErrors } from './invariants.js'
import { fingerprintErrors } from './fingerprint-check.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function store (nodeId: string, now?: () => number): NodeStore {
  const t = tmpDir()
  const s = openNodeStore({ path: path.join(t.dir, 'm.db'), nodeId, now })
  cleanups.push(() => { s.close(); t.cleanup() })
  return s
}

const cid = testCid

const RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ' as RecordId
const hlcAt = (ms: number, c = 0): string => formatHlc({ ms, counter: c })

/** Every change a store logged (live keys, tombstones, root tombstones), read back through its change log in pages. */
function exportAll (s: NodeStore): RemoteEntry[] {
  const out: RemoteEntry[] = []
  let cursor: string | undefined
  for (;;) {
    const page = s.records.changesSince(cursor, { limit: 7 })
    expect(page.gap).toBe(false)
    out.push(...page.changes)
    if (page.next === cursor || page.next === page.head) return out
    cursor = page.next
  }
}

/** The replicated state and everything derived from it; excludes per-node bookkeeping (events, clock, dup paths). */
function state (s: NodeStore): Record<string, string> {
  const out: Record<string, string> = {}
  for (const p of ['file:', 'ver:', 'cid:', 'idx:roots/', 'idx:grp/', 'idx:grpm/', 'idx:schema/']) {
    for (const [k, v] of s.kv.prefix(p)) out[k] = v
  }
  out.count = String(s.records.countRecords())
  return out
}

describe('applyRemote', () => {
  it('applies an entry iff its (hlc, origin) is greater, idempotently', async () => {
    const s = store('local')
    const now = Date.now()
    const e = (v: string | null, ms: number, origin = 'peer'): RemoteEntry => ({ key: `file:${RID}/title`, value: v, hlc: hlcAt(ms), origin })
    expect((await s.records.applyRemote([e('b', now)])).applied).toBe(1)
    expect((await s.records.applyRemote([e('a', now - 10)])).applied).toBe(0)
    expect(s.records.getProperty(RID, 'title')).toBe('b')
    // Same hlc: origin breaks the tie.
    await s.records.applyRemote([e('z', now, 'aaa')])
    expect(s.records.getProperty(RID, 'title')).toBe('b')
    await s.records.applyRemote([e('c', now, 'zzz')])
    expect(s.records.getProperty(RID, 'title')).toBe('c')
    const events = s.kv.streamLength(META_EVENTS)
    expect((await s.records.applyRemote([e('c', now, 'zzz')])).applied).toBe(0)
    expect(s.kv.streamLength(META_EVENTS)).toBe(events)
  })

  it('lets a root tombstone shadow older keys that arrive later, and a newer write revive the record', async () => {
    const s = store('local')
    const now = Date.now()
    await s.records.applyRemote([
      { key: `file:${RID}/title`, value: 't', hlc: hlcAt(now - 100), origin: 'p' },
      { key: `file:${RID}/year`, value: '2000', hlc: hlcAt(now + 5), origin: 'p' },
      { key: `file:${RID}/cids/${cid(1)}`, value: 'true', hlc: hlcAt(now + 5), origin: 'p' },
      { key: `file:${RID}`, value: null, hlc: hlcAt(now), origin: 'p' }
    ])
    const c1 = { [`cids/${cid(1)}`]: 'true' }
    expect(s.records.getFlat(RID)).toEqual({ year: '2000', ...c1 })
    // A stale peer's older key does not come back.
    await s.records.applyRemote([{ key: `file:${RID}/genre`, value: 'x', hlc: hlcAt(now - 1), origin: 'q' }])
    expect(s.records.getFlat(RID)).toEqual({ year: '2000', ...c1 })
    await s.records.applyRemote([{ key: `file:${RID}/genre`, value: 'x', hlc: hlcAt(now + 1), origin: 'q' }])
    expect(s.records.getFlat(RID)).toEqual({ year: '2000', genre: 'x', ...c1 })
  })

  it('refuses versions too far ahead of local time and does not advance the clock', async () => {
    const now = 1_800_000_000_000
    const s = store('local', () => now)
    const r = await s.records.applyRemote([
      { key: `file:${RID}/a`, value: '1', hlc: hlcAt(now + 60_000), origin: 'p' },
      { key: `file:${RID}/b`, value: '2', hlc: hlcAt(now + 1_000), origin: 'p' }
    ])
    expect(r).toEqual({ applied: 1, skipped: 0, refused: 1 })
    expect(s.records.getFlat(RID)).toEqual({ b: '2' })
    expect(s.records.driftRefusedCount).toBe(1)
    expect(s.records.hlc.last() < hlcAt(now + 60_000)).toBe(true)
  })

  it('refuses a batch with any malformed entry and applies none of it', async () => {
    const s = store('local')
    const ok: RemoteEntry = { key: `file:${RID}/title`, value: 'x', hlc: hlcAt(Date.now()), origin: 'p' }
    const bad: RemoteEntry[] = [
      { ...ok, key: `cid:${cid(1)}` },
      { ...ok, key: 'file:not-a-root/title' },
      { ...ok, key: `file:${RID}/a//b` },
      { ...ok, key: `file:${RID}/cid_sha256` },
      { ...ok, key: `file:${RID}/cids/notacid` },
      { ...ok, key: `file:${RID}/${'x'.repeat(1100)}` },
      { ...ok, value: 'v'.repeat(256 * 1024 + 1) },
      { ...ok, value: 'half a pair: \ud800' }, // what a JSON frame's escape can carry; SQLite would store U+FFFD
      { ...ok, hlc: 'nothex' },
      { ...ok, origin: '' },
      { ...ok, key: `file:${RID}`, value: 'root entries are tombstones' }
    ]
    for (const b of bad) {
      await expect(s.records.applyRemote([ok, b]), JSON.stringify(b).slice(0, 80)).rejects.toBeInstanceOf(InvalidRemoteEntryError)
    }
    expect(s.kv.prefix('file:')).toEqual([])
  })

  it('passes on version-only changes and unseen tombstones so peers pulling from this node learn them', async () => {
    const s = store('local')
    const now = Date.now()
    await s.records.applyRemote([{ key: `file:${RID}/t`, value: 'same', hlc: hlcAt(now), origin: 'p' }])
    const n = s.kv.streamLength(META_EVENTS)
    await s.records.applyRemote([
      { key: `file:${RID}/t`, value: 'same', hlc: hlcAt(now + 1), origin: 'p' },
      { key: `file:${RID}/never`, value: null, hlc: hlcAt(now + 1), origin: 'p' }
    ])
    expect(s.kv.streamLength(META_EVENTS)).toBe(n + 2)
    const vm = VersionMap.parse(s.kv.get(`ver:${RID}`))
    expect(vm.fields.get('t')).toBe(hlcAt(now + 1) + 'p')
    expect(vm.fields.get('never')).toBe(hlcAt(now + 1) + 'p')
  })

  it('groups two roots minted for the same content on two nodes identically on both', async () => {
    const a = store('node-a')
    const b = store('node-b')
    const shared = cid(42)
    const ra = await a.records.mint('/files/x.mkv', 5, 1, { [`cids/${shared}`]: 'true', title: 'from a' })
    const rb = await b.records.mint('/files/y.mkv', 5, 2, { [`cids/${shared}`]: 'true', year: '1999' })
    const ea = exportAll(a)
    const eb = exportAll(b)
    await a.records.applyRemote(eb)
    await b.records.applyRemote(ea)
    expect(state(a)).toEqual(state(b))
    const canon = ra < rb ? ra : rb
    for (const s of [a, b]) {
      expect(s.records.resolveRoot(shared)).toBe(canon)
      expect(s.records.countRecords()).toBe(1)
      const doc = s.records.getDocument(shared)!
      expect(doc.metadata.title).toBe('from a')
      expect(doc.metadata.year).toBe('1999')
    }
    // Each node shows its own copy's location (local-location.ts); everything else reads the same.
    expect(a.records.getDocument(shared)!.metadata).toMatchObject({ filePath: '/files/x.mkv', mtimeNano: '1' })
    expect(b.records.getDocument(shared)!.metadata).toMatchObject({ filePath: '/files/y.mkv', mtimeNano: '2' })
    expect(replicatedDoc(a.records.getDocument(shared))).toEqual(replicatedDoc(b.records.getDocument(shared)))
  })
})

describe('applyBatch', () => {
  /** Every change of a store with a few hundred records, groups and tombstones included. */
  async function history (): Promise<RemoteEntry[]> {
    const src = store('src')
    const rand = prng(99)
    const known: RecordId[] = []
    for (let i = 0; i < 120; i++) await randomRecordOp(src, rand, known, i)
    return exportAll(src)
  }

  it('ends in the state applyRemote gives, derived rows included, over many transactions', async () => {
    const entries = await history()
    const one = store('one')
    await one.records.applyRemote(entries)
    const batched = store('batched')
    let commits = 0
    batched.kv.onCommit(() => { commits++ })
    const r = await batched.records.applyBatch(shuffle(prng(3), entries), { rootsPerTransaction: 7 })
    expect(state(batched)).toEqual(state(one))
    expect(groupInvariantErrors(batched)).toEqual([])
    const roots = new Set(entries.map(e => e.key.slice(5, 31))).size
    expect(commits).toBe(Math.ceil(roots / 7))
    expect(r.refused).toBe(0)
    expect(r.applied + r.skipped).toBe(entries.length)
    // Again: nothing changes, nothing is logged.
    const logged = batched.kv.streamLength(META_EVENTS)
    expect((await batched.records.applyBatch(entries)).applied).toBe(0)
    expect(batched.kv.streamLength(META_EVENTS)).toBe(logged)
  })

  it('caps a transaction by entries without splitting a root', async () => {
    const entries = await history()
    const s = store('capped')
    let commits = 0
    s.kv.onCommit(() => { commits++ })
    await s.records.applyBatch(entries, { rootsPerTransaction: Infinity, entriesPerTransaction: 1 })
    // A root's field entries count; a root with only its tombstone rides along with a neighbour.
    const withFields = new Set(entries.filter(e => e.key.length > 31).map(e => e.key.slice(5, 31))).size
    expect(withFields).toBeGreaterThan(10)
    expect(commits).toBe(withFields)
    commits = 0
    const whole = store('whole')
    whole.kv.onCommit(() => { commits++ })
    await whole.records.applyBatch(entries, { rootsPerTransaction: Infinity, entriesPerTransaction: Infinity })
    expect(commits).toBe(1)
    expect(state(whole)).toEqual(state(s))
  })

  it('refuses the whole call for one malformed entry, before writing anything', async () => {
    const s = store('local')
    const good: RemoteEntry = { key: `file:${RID}/title`, value: 'x', hlc: hlcAt(Date.now()), origin: 'peer' }
    await expect(s.records.applyBatch([good, { ...good, key: 'file:not-a-root/title' }])).rejects.toBeInstanceOf(InvalidRemoteEntryError)
    expect(s.records.getFlat(RID)).toBeUndefined()
    expect(s.kv.streamLength(META_EVENTS)).toBe(0)
  })

  it('counts and skips entries too far ahead of the clock, applying the rest', async () => {
    const s = store('local')
    const now = Date.now()
    const r = await s.records.applyBatch([
      { key: `file:${RID}/title`, value: 'x', hlc: hlcAt(now), origin: 'peer' },
      { key: `file:${RID}/year`, value: '3000', hlc: hlcAt(now + 3_600_000), origin: 'peer' }
    ])
    expect(r).toEqual({ applied: 1, skipped: 0, refused: 1 })
    expect(s.records.getFlat(RID)).toEqual({ title: 'x' })
    expect(s.records.driftRefusedCount).toBe(1)
  })
})

describe('roots held nowhere yet', () => {
  type Unheld = (this: Mutator, ...args: unknown[]) => unknown
  const proto = Mutator.prototype as unknown as { mutateUnheld: Unheld }
  const shortcut = proto.mutateUnheld

  /** Runs `fn` with mutate's path for unheld roots counted (taken, or declined for the general path), or turned off. */
  async function withUnheldPath<T> (mode: 'counted' | 'off', fn: () => Promise<T>): Promise<{ out: T, taken: number, declined: number }> {
    let taken = 0
    let declined = 0
    proto.mutateUnheld = mode === 'off'
      ? () => undefined
      : function (this: Mutator, ...args: unknown[]) {
        const r = shortcut.apply(this, args)
        if (r === undefined) declined++
        else taken++
        return r
      }
    try {
      return { out: await fn(), taken, declined }
    } finally {
      proto.mutateUnheld = shortcut
    }
  }

  /** The state, every change-log entry in log order, and what the calls returned. */
  function snapshot (s: NodeStore, results: unknown[]): unknown {
    return { state: state(s), log: exportAll(s), results }
  }

  it('leaves rows, derived state and change log exactly as the general path does, for remote and local writes', async () => {
    const t0 = 1_700_000_000_000
    const rid = (n: number): RecordId => `01M8ME6YDNEBQ9WHRFBFD4H${String(n).padStart(3, '0')}` as RecordId
    // A peer's history (groups, tombstones, root tombstones), then roots whose lists name a field twice:
    // two versions of one field, a set and a later tombstone, one version twice, a tombstone before a set.
    const src = store('src')
    const rand = prng(7)
    const known: RecordId[] = []
    for (let i = 0; i < 400; i++) await randomRecordOp(src, rand, known, i)
    // Its whole state, as a full resync pulls it (each key once), and its change log, as catch-up pulls it (a key once per change).
    const entries: RemoteEntry[] = []
    for (let after: string | undefined; ;) {
      const page = src.records.exportRange(after, { limit: 50 })
      entries.push(...page.entries)
      if (page.next === undefined) break
      after = page.next
    }
    const logged = exportAll(src)
    const e = (n: number, field: string, value: string | null, ms: number, origin = 'peer'): RemoteEntry =>
      ({ key: `file:${rid(n)}/${field}`, value, hlc: hlcAt(t0 + ms), origin })
    const twice = [
      e(1, 'title', 'old', 1), e(1, 'title', 'new', 2), e(1, 'year', '2001', 1),
      e(2, 'title', 'gone', 1), e(2, 'title', null, 2), e(2, 'year', '1999', 1),
      e(3, 'title', 'same', 1), e(3, 'title', 'same', 1),
      e(4, 'title', null, 1), e(4, 'title', 'back', 2), e(4, `cids/${cid(1)}`, 'true', 2),
      e(5, 'tmp', null, 3), e(5, 'other', null, 3)
    ]
    const apply = async (s: NodeStore): Promise<unknown[]> => [
      await s.records.applyBatch(shuffle(prng(5), entries), { rootsPerTransaction: 9 }),
      await s.records.applyRemote(twice),
      await s.records.applyBatch(logged)
    ]
    const fast = store('fast')
    const a = await withUnheldPath('counted', async () => await apply(fast))
    const general = store('general')
    const b = await withUnheldPath('off', async () => await apply(general))
    expect(a.taken).toBeGreaterThanOrEqual(10)
    // Roots 1 to 4 go the general way: each names a field twice.
    expect(a.declined).toBeGreaterThanOrEqual(4)
    expect(snapshot(fast, a.out)).toEqual(snapshot(general, b.out))
    expect(groupInvariantErrors(fast)).toEqual([])

    // Local writes: two stores with the same clock and id source make the same calls and mint the same roots.
    const local = async (name: string, mode: 'counted' | 'off'): Promise<{ snap: unknown, taken: number }> => {
      let ms = t0
      const t = tmpDir()
      const s = openNodeStore({ path: path.join(t.dir, `${name}.db`), nodeId: 'local', now: () => ms++, random: prng(11) })
      cleanups.push(() => { s.close(); t.cleanup() })
      const r = await withUnheldPath(mode, async () => {
        const opRand = prng(13)
        const mine: RecordId[] = []
        for (let i = 0; i < 150; i++) await randomRecordOp(s, opRand, mine, i)
        return mine
      })
      return { snap: snapshot(s, r.out), taken: r.taken }
    }
    const lf = await local('local-fast', 'counted')
    const lg = await local('local-general', 'off')
    expect(lf.taken).toBeGreaterThan(20)
    expect(lf.snap).toEqual(lg.snap)
  })

  it('takes a write to a new CID whose fields name that CID, the member once and true, in its place', async () => {
    const c = cid(3)
    const write = async (mode: 'counted' | 'off'): Promise<{ snap: unknown, taken: number }> => {
      const t = tmpDir()
      const s = openNodeStore({ path: path.join(t.dir, `own-${mode}.db`), nodeId: 'local', now: () => 1_700_000_000_000, random: prng(17) })
      cleanups.push(() => { s.close(); t.cleanup() })
      const r = await withUnheldPath(mode, async () => await s.records.mergeFlat(c, { title: 't', [`cids/${c}`]: 'x', year: '2001' }))
      expect(s.records.getFlat(r.out.rid)).toEqual({ title: 't', [`cids/${c}`]: 'true', year: '2001' })
      expect(exportAll(s).map(e => e.key.slice(32))).toEqual(['title', `cids/${c}`, 'year'])
      return { snap: snapshot(s, [r.out]), taken: r.taken }
    }
    const fast = await write('counted')
    expect(fast.taken).toBe(1)
    expect(fast.snap).toEqual((await write('off')).snap)
  })
})

describe('convergence (property)', () => {
  const CIDS = OP_CIDS

  async function randomOps (s: NodeStore, rand: () => number, known: RecordId[], n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      await randomRecordOp(s, rand, known, i)
      const errs = groupInvariantErrors(s)
      if (errs.length > 0) throw new Error(`derived state broke after local op ${i}: ${errs.join('; ')}`)
    }
  }

  async function applyInRandomBatches (s: NodeStore, entries: RemoteEntry[], rand: () => number): Promise<void> {
    const shuffled = shuffle(rand, entries)
    while (shuffled.length > 0) {
      const batch = shuffled.splice(0, 1 + Math.floor(rand() * 12))
      const before = groupInvariantErrors(s)
      await s.records.applyRemote(batch)
      const errs = groupInvariantErrors(s)
      if (errs.length > 0 && before.length === 0) throw new Error(`derived state broke applying ${JSON.stringify(batch, null, 1)}:\n${errs.join('\n')}`)
    }
  }

  it('random operations on three nodes, exchanged in random orders and batches, end in identical states', async () => {
    // META_CORE_PROPERTY_SEEDS runs more seeds (a few hundred take a minute or two).
    const seeds = Number(process.env.META_CORE_PROPERTY_SEEDS ?? 25)
    for (let seed = 1; seed <= seeds; seed++) {
      const rand = prng(seed)
      const nodes = [store('n1'), store('n2'), store('n3')]
      const known: RecordId[] = []
      for (let round = 0; round < 3; round++) {
        for (const n of nodes) await randomOps(n, rand, known, 8)
        // A partial exchange: one random pair syncs one way, in a random order.
        const [from, to] = shuffle(rand, nodes)
        await applyInRandomBatches(to, exportAll(from), rand)
      }
      const all = nodes.flatMap(exportAll)
      for (const n of nodes) await applyInRandomBatches(n, all, rand)
      const ref = state(nodes[0])
      for (const n of nodes.slice(1)) expect(state(n), `seed ${seed}`).toEqual(ref)
      // The fingerprints were kept up to date through every write and merge, and the equal states have equal digests.
      for (const n of nodes) expect(fingerprintErrors(n), `seed ${seed}`).toEqual([])
      for (const n of nodes.slice(1)) expect(n.records.digest(), `seed ${seed}`).toEqual(nodes[0].records.digest())
      // Documents read the same everywhere too, by any CID.
      for (const c of CIDS) {
        const docs = nodes.map(n => n.records.getDocument(c))
        // But for the location each node shows of its own copy.
        expect(replicatedDoc(docs[1]), `seed ${seed} cid ${c}`).toEqual(replicatedDoc(docs[0]))
        expect(replicatedDoc(docs[2]), `seed ${seed} cid ${c}`).toEqual(replicatedDoc(docs[0]))
        // The one-statement JSON read (the public route's) agrees with the general read.
        for (const [i, n] of nodes.entries()) {
          const json = n.records.getDocumentJson(c)
          if (docs[i] === undefined) {
            expect(json, `seed ${seed} cid ${c}`).toBeUndefined()
            continue
          }
          const { metadataJson, ...rest } = json!
          const { metadata, ...expected } = docs[i]
          expect(JSON.parse(metadataJson), `seed ${seed} cid ${c}`).toEqual(metadata)
          expect(rest, `seed ${seed} cid ${c}`).toEqual(expected)
        }
      }
      // The derived state equals a rebuild from scratch: the counters match the rows.
      for (const n of nodes) {
        const liveCanon = n.records.listRoots().length
        expect(n.records.countRecords(), `seed ${seed}`).toBe(liveCanon)
        expect(n.kv.integrityCheck()).toBe('ok')
      }
      for (const n of nodes) n.close()
    }
  }, 600_000)
})

describe('VersionMap', () => {
  it('serializes canonically whatever the insertion order, one version or several, with or without a root tombstone', () => {
    const v1 = `${hlcAt(1_700_000_000_000)}p`
    const v2 = `${hlcAt(1_700_000_000_001)}q`
    const one = new VersionMap(undefined, new Map([['title', v1], ['cids/x', v1], ['a', v1]]))
    expect(one.serialize()).toBe(JSON.stringify({ g: { [v1]: ['a', 'cids/x', 'title'] } }))
    const two = new VersionMap(v1, new Map([['z', v2], ['title', v1], ['b', v2], ['a', v1]]))
    expect(two.serialize()).toBe(JSON.stringify({ r: v1, g: { [v1]: ['a', 'title'], [v2]: ['b', 'z'] } }))
    expect(new VersionMap(v2).serialize()).toBe(JSON.stringify({ r: v2, g: {} }))
    expect(new VersionMap().serialize()).toBe('{"g":{}}')
    const back = VersionMap.parse(one.serialize())
    expect(back.root).toBe(one.root)
    expect(new Map([...back.fields].sort())).toEqual(new Map([...one.fields].sort()))
    // A map written unfolded (key versions at or below its root tombstone) reads folded: only what the root does not shadow.
    const folded = VersionMap.parse(two.serialize())
    expect(folded.root).toBe(v1)
    expect(new Map([...folded.fields].sort())).toEqual(new Map([['b', v2], ['z', v2]]))
    expect(folded.serialize()).toBe(JSON.stringify({ r: v1, g: { [v2]: ['b', 'z'] } }))
  })
})
