/**
 * `--preload N`: stores that start with a library of N records, before the
 * clock starts, as if the mesh had been running and in sync for a while.
 *
 * The records are written once, through the records API (`mergeFlat`, many
 * at a time so the store's group commit batches them), into an origin store
 * of its own: seeded root ids, a fixed clock an hour before virtual time 0,
 * an origin id shaped like a peer id that is no node's. That store is then
 * copied whole (SQLite's serialization) into each preloaded node, which
 * costs a memory copy instead of N applies per node. Each node then mints
 * its own change-log id (the replica does, as on any store), and each
 * preloaded node holds, for each preloaded peer it connects to, the cursor a
 * finished sync leaves (`mesh:cursor/<peer>`: that peer's log at its head),
 * so the run starts from a mesh in sync, not from every node resyncing every
 * peer. A fresh node joining it has none of this: it pulls it all.
 *
 * Record shapes (`--record-shape`): `library`, the benches' synthetic library
 * records (bench/lib/synthetic.ts: about 40 fields, paths, CIDs, file info
 * and streams, ≈ 2 KB of fields), or `small`, the load's own new-record
 * shape (a title and a size).
 */
import { KvStore } from '../src/kv/index.js'
import { CURSOR_PREFIX } from '../src/mesh/protocol/index.js'
import { RecordStore } from '../src/records/index.js'
import { Prng } from '../src/mesh/testing/index.js'
import { shapedRecord, type RecordShape } from './workload.js'

/** The preload's versions carry this clock: an hour before virtual time 0. */
const PRELOAD_AGE_MS = 3_600_000
/** Writes in flight at once while authoring (the group commit batches them). */
const AUTHOR_PARALLEL = 1_000

interface PreloadImage {
  /** The origin store's database, to open a copy of (KvStore `image`). */
  image: Buffer
  /** The records' CIDs, in order (the load updates them too). */
  cids: string[]
}

const cache = new Map<string, PreloadImage>()

/** Authors the N records once per shape and size in this process (a sweep reuses them). */
export async function preloadImage (n: number, shape: RecordShape, epochMs: number, titleBytes: number): Promise<PreloadImage> {
  const key = `${shape}/${n}/${epochMs}/${titleBytes}`
  const hit = cache.get(key)
  if (hit !== undefined) return hit
  const rng = new Prng(`preload/${key}`)
  const ids = rng.fork('root-ids')
  const now = (): number => epochMs - PRELOAD_AGE_MS
  const kv = new KvStore({ path: ':memory:', cacheKiB: 65_536, backgroundCheckpoint: false, now })
  const records = new RecordStore(kv, { nodeId: '12D3KooWPreloadOrigin0000000000000000000000000000000', now, random: () => ids.next() })
  const cids: string[] = []
  const shapes = rng.fork('records')
  try {
    let inFlight: Array<Promise<unknown>> = []
    for (let i = 0; i < n; i++) {
      const r = shapedRecord(shape, i, shapes, titleBytes)
      cids.push(r.cid)
      inFlight.push(records.mergeFlat(r.cid, r.fields))
      if (inFlight.length >= AUTHOR_PARALLEL) {
        await Promise.all(inFlight)
        inFlight = []
      }
    }
    await Promise.all(inFlight)
    const out = { image: kv.serialize(), cids }
    cache.set(key, out)
    return out
  } finally {
    kv.close()
  }
}

/** What a finished sync with `peer` leaves in a store: the cursor at the head of that peer's log. */
export function syncedCursor (peer: { peerId: string, replica: { logId: () => string, head: () => string | null } }): [string, string] {
  return [CURSOR_PREFIX + peer.peerId, JSON.stringify({ log: peer.replica.logId(), cursor: peer.replica.head() })]
}
