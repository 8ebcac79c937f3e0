/**
 * The cache as a holder (byte-cache.ts, records `holdCachedCopy` /
 * `releaseCachedCopy`), on real stores and real files: a record another
 * node holds reaches this store through the mesh's apply path; the cache
 * keeps its bytes. While it does, this node's `holders/<id>` member is
 * there; when the entry goes (evicted, its file removed, gone at start, or
 * the node runs without a cache) the member goes, unless a library copy of
 * the record is also here; and a library copy going leaves the member the
 * cache holds. Both orders.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { ByteCache, releaseCachedCopies } from '../../src/api/index.js'
import { RecordReplica } from '../../src/mesh/replica-store.js'
import { openNodeStore, type NodeStore, type RemoteEntry } from '../../src/records/index.js'
import { testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'

const t = tmpDir('mc-cache-holders-')
afterAll(() => { t.cleanup() })
let seq = 0
const SIZE = 4096

function open (nodeId: string): NodeStore {
  return openNodeStore({ path: path.join(t.dir, `s${seq++}.db`), nodeId, backgroundCheckpoint: false })
}

function changes (s: NodeStore): RemoteEntry[] {
  const out: RemoteEntry[] = []
  let cursor: string | undefined
  for (;;) {
    const page = s.records.changesSince(cursor, { limit: 100 })
    out.push(...page.changes)
    if (page.next === undefined || page.next === cursor || page.next === page.head) return out
    cursor = page.next
  }
}

/** Node B's store holding record(s) that only node A holds, learnt from A. */
async function learnt (n: number): Promise<{ a: NodeStore, b: NodeStore, cids: string[], rids: string[] }> {
  const a = open('A')
  const cids: string[] = []
  for (let i = 0; i < n; i++) {
    const cid = testCid(1000 + seq * 10 + i)
    await a.records.mint(`/files/film${i}.mkv`, SIZE, 1, { [`cids/${cid}`]: 'true', 'holders/A': 'true', title: `Film ${i}` })
    cids.push(cid)
  }
  const b = open('B')
  await new RecordReplica(b.records).apply(changes(a))
  return { a, b, cids, rids: cids.map(c => b.records.resolveRoot(c)!) }
}

const holds = (s: NodeStore, cid: string, id = 'B'): boolean => s.records.getFlat(cid)?.[`holders/${id}`] === 'true'

/** Keeps `size` bytes for `rid` in `cache`, as a whole checked transfer does. */
async function keep (cache: ByteCache, rid: string, size = SIZE): Promise<void> {
  const w = await cache.writer(rid, size)
  if (w === undefined) throw new Error('no writer')
  await w.write(Buffer.alloc(size, 7))
  await w.commit()
}

describe('the cache says so in holders while it keeps the bytes', () => {
  it('a kept entry adds the member (replicated to the peer), a peer can open it, eviction releases it', async () => {
    const { a, b, cids, rids } = await learnt(2)
    const dir = path.join(t.dir, `cache${seq++}`)
    const cache = new ByteCache(dir, SIZE + 1, silentLogger, { records: b.records, holderId: 'B' })
    expect(holds(b, cids[0])).toBe(false)
    expect(await cache.openForPeer(cids[0])).toBeUndefined()

    const head = b.records.changeLogHead()
    await keep(cache, rids[0])
    expect(holds(b, cids[0])).toBe(true)
    expect(b.records.cachedCopies()).toEqual([rids[0]])
    // The member is an ordinary replicated write: A learns that B holds the bytes.
    const since: RemoteEntry[] = b.records.changesSince(head, { limit: 100 }).changes
    await new RecordReplica(a.records).apply(since)
    expect(holds(a, cids[0])).toBe(true)
    // The byte protocol's opener finds the cached bytes, by any CID of the record.
    const f = await cache.openForPeer(cids[0])
    expect(f?.size).toBe(SIZE)
    expect(f?.ext).toBe('.mkv')
    await f?.fh.close()

    // The second entry does not fit beside the first: the first goes, and with it the member (A holds on).
    await keep(cache, rids[1])
    expect(fs.readdirSync(dir)).toEqual([rids[1]])
    expect(holds(b, cids[0])).toBe(false)
    expect(holds(b, cids[1])).toBe(true)
    expect(b.records.getFlat(cids[0])?.['holders/A']).toBe('true')
    expect(await cache.openForPeer(cids[0])).toBeUndefined()
    expect(b.records.cachedCopies()).toEqual([rids[1]])
    a.close()
    b.close()
  })

  it('the cache as the only holder: its release deletes the record as a last library copy\'s does', async () => {
    const { a, b, cids, rids } = await learnt(1)
    const cache = new ByteCache(path.join(t.dir, `cache${seq++}`), SIZE, silentLogger, { records: b.records, holderId: 'B' })
    const bHead = b.records.changeLogHead()
    await keep(cache, rids[0])
    await new RecordReplica(a.records).apply(b.records.changesSince(bHead, { limit: 100 }).changes)
    // A's last copy goes, and B learns it: B's cache is the record's only holder now.
    const head = a.records.changeLogHead()
    expect((await a.records.releaseCopy(cids[0], '/files/film0.mkv', 'A')).kind).toBe('released')
    await new RecordReplica(b.records).apply(a.records.changesSince(head, { limit: 100 }).changes)
    expect(b.records.getFlat(cids[0])?.title).toBe('Film 0')
    expect((await b.records.releaseCachedCopy(rids[0], 'B')).kind).toBe('deleted')
    expect(b.records.getFlat(cids[0])).toBeUndefined()
    a.close()
    b.close()
  })

  it('a library copy deleted while the cache keeps the bytes keeps the member; the cache\'s release then takes it', async () => {
    const { a, b, cids, rids } = await learnt(1)
    const cache = new ByteCache(path.join(t.dir, `cache${seq++}`), SIZE * 4, silentLogger, { records: b.records, holderId: 'B' })
    await keep(cache, rids[0])
    // Then the file lands in B's library too (the watcher records it: its own location and member).
    await b.records.mergeFlat(cids[0], { filePath: '/files/mine.mkv', sizeByte: String(SIZE), mtimeNano: '5', 'holders/B': 'true' })
    expect(b.records.ownLocation(cids[0])?.filePath).toBe('/files/mine.mkv')
    // The library copy goes (the watcher's call): the cache still keeps the bytes, so the member stays.
    const r = await b.records.releaseCopy(cids[0], '/files/mine.mkv', 'B')
    expect(r.kind).toBe('kept')
    expect(holds(b, cids[0])).toBe(true)
    expect(b.records.ownLocation(cids[0])).toBeUndefined()
    // The entry's file is removed by hand and noticed: now the member goes.
    fs.rmSync(cache.pathOf(rids[0])!)
    expect(await cache.openForPeer(cids[0])).toBeUndefined()
    expect(holds(b, cids[0])).toBe(false)
    expect(b.records.cachedCopies()).toEqual([])
    a.close()
    b.close()
  })

  it('an entry evicted while a library copy is here leaves the member to the library copy', async () => {
    const { a, b, cids, rids } = await learnt(2)
    const cache = new ByteCache(path.join(t.dir, `cache${seq++}`), SIZE, silentLogger, { records: b.records, holderId: 'B' })
    await keep(cache, rids[0])
    await b.records.mergeFlat(cids[0], { filePath: '/files/mine.mkv', sizeByte: String(SIZE), mtimeNano: '5', 'holders/B': 'true' })
    await keep(cache, rids[1]) // evicts the first entry
    expect(b.records.cachedCopies()).toEqual([rids[1]])
    expect(holds(b, cids[0])).toBe(true)
    // Its last library copy going releases it as always.
    expect((await b.records.releaseCopy(cids[0], '/files/mine.mkv', 'B')).kind).toBe('released')
    expect(holds(b, cids[0])).toBe(false)
    // The same for a duplicate path: a `dup:` row is a library copy too.
    await b.records.mergeFlat(cids[1], { filePath: '/files/second.mkv', sizeByte: String(SIZE), mtimeNano: '5' })
    await b.records.addDuplicatePath(cids[1], '/files/second copy.mkv')
    expect((await b.records.releaseCopy(cids[1], '/files/second.mkv', 'B')).kind).toBe('kept')
    expect((await b.records.releaseCachedCopy(rids[1], 'B')).kind).toBe('kept')
    expect(holds(b, cids[1])).toBe(true)
    a.close()
    b.close()
  })

  it('at start: an entry gone from the folder is released, a file without its row is held, and no cache at all releases every one', async () => {
    const { a, b, cids, rids } = await learnt(3)
    const dir = path.join(t.dir, `cache${seq++}`)
    const holding = { records: b.records, holderId: 'B' }
    const first = new ByteCache(dir, SIZE * 8, silentLogger, holding)
    await keep(first, rids[0])
    await keep(first, rids[1])
    // Stopped; the first file removed by hand; a file kept just before a crash, its row never written.
    fs.rmSync(path.join(dir, rids[0]))
    fs.writeFileSync(path.join(dir, rids[2]), Buffer.alloc(SIZE, 1))
    const again = new ByteCache(dir, SIZE * 8, silentLogger, holding)
    await again.reconcile()
    expect([holds(b, cids[0]), holds(b, cids[1]), holds(b, cids[2])]).toEqual([false, true, true])
    expect(b.records.cachedCopies().sort()).toEqual([rids[1], rids[2]].sort())
    // The node starts without a cache: what it kept is not served any more, so it is no holder of it.
    expect(await releaseCachedCopies(holding, silentLogger)).toBe(2)
    expect([holds(b, cids[0]), holds(b, cids[1]), holds(b, cids[2])]).toEqual([false, false, false])
    expect(b.records.cachedCopies()).toEqual([])
    a.close()
    b.close()
  })
})
