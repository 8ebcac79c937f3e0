/**
 * The replication rules as a property (docs/design/mesh-rules.md): random histories over
 * 3–5 nodes of field writes, field deletes, record deletes and revivals,
 * concurrent writes with equal clocks, one version signed with two values,
 * partitions, absences of any length (weeks included), restarts of the core
 * and of the process, a joiner whose copy of the range is interrupted, and
 * rows rewritten unfolded at random times. Healed, every node holds the
 * same state: the merge of what all of them held at the end of the history
 * (computed independently, test/helpers/replica-state.ts), with equal
 * digests and fingerprints as a rebuild would compute them, and no value
 * live on some node at the end and never deleted by anyone missing. Real
 * stores and the real core on the virtual mesh; each seed replays exactly.
 * META_CORE_PROPERTY_SEEDS runs more seeds (200 by default).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { VersionMap, formatHlc, newRecordId, type RemoteEntry } from '../../src/records/index.js'
import { records } from '../helpers/cluster-records.js'
import { pick, prng } from '../helpers/prng.js'
import { testCid } from '../helpers/record-ops.js'
import { merged, replicaState, stateDiff } from '../helpers/replica-state.js'
import { virtualCluster, type ClusterNode, type VirtualCluster } from '../helpers/virtual-cluster.js'
import { fingerprintErrors } from '../records/fingerprint-check.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const ANTI_ENTROPY_MS = 1_000
const DAY = 86_400_000
const FIELDS = ['title', 'year', 'genres/Drama', 'note']
const VALUES = ['a', 'b', 'Ünïcode ✓', '', 'zz']

interface History {
  c: VirtualCluster
  /** Keys (`<rid>/<field>`) some operation deleted, and roots some operation deleted whole. */
  deletedKeys: Set<string>
  deletedRoots: Set<string>
}

async function history (seed: number): Promise<History> {
  const rand = prng(seed * 7_919 + 1)
  const n = 3 + Math.floor(rand() * 3)
  const c = cluster = await virtualCluster(n, {
    seed,
    link: { latency: 'uniform:1:30', gossipLoss: 0.2, gossipDup: 0.1, requestLoss: 0.05 },
    mesh: { antiEntropyMs: ANTI_ENTROPY_MS, requestTimeoutMs: 500, flushMs: 20, pageBytes: 1_500, copyStallMs: 3_000 }
  })
  const { mesh, nodes } = c
  const h: History = { c, deletedKeys: new Set(), deletedRoots: new Set() }
  const rids = Array.from({ length: 5 }, () => newRecordId())
  // The joiner (the last node) starts empty and away; the others hold a range large enough to take several pages.
  const joiner = n - 1
  await c.stop(joiner)
  await nodes[0].store.records.applyBatch(records(30, nodes[0].store.records.hlc.now(), 'peerZ', 20))
  const away = new Set<number>([joiner])
  const up = (): number[] => nodes.map((_, i) => i).filter(i => !away.has(i))
  let joined = false
  for (let i = 0; i < n - 1; i++) for (let j = i + 1; j < n - 1; j++) mesh.connect(nodes[i].id, nodes[j].id)

  const node = (): ClusterNode => nodes[pick(rand, up())]
  for (let step = 0; step < 24; step++) {
    const roll = rand()
    const rid = pick(rand, rids)
    const field = pick(rand, FIELDS)
    if (roll < 0.3) {
      const f: Record<string, string> = { [field]: pick(rand, VALUES), [`cids/${testCid(rids.indexOf(rid))}`]: 'true' }
      await node().store.records.mergeFlat(rid, f)
    } else if (roll < 0.4) {
      // Two nodes write the same key in the same millisecond: equal clocks, the origin decides.
      const [x, y] = [node(), node()]
      await Promise.all([x.store.records.mergeFlat(rid, { [field]: 'from x' }), y.store.records.mergeFlat(rid, { [field]: 'from y' })])
    } else if (roll < 0.5) {
      h.deletedKeys.add(`${rid}/${field}`)
      await node().store.records.deleteProperty(rid, field).catch(() => {})
    } else if (roll < 0.55) {
      h.deletedRoots.add(rid)
      await node().store.records.deleteRoot(rid).catch(() => {})
    } else if (roll < 0.6) {
      // One version signed with two values (or a value and a tombstone), one to each of two nodes.
      const hlc = formatHlc({ ms: mesh.now(), counter: 7 })
      const tomb = rand() < 0.3
      if (tomb) h.deletedKeys.add(`${rid}/${field}`)
      const e = (value: string | null): RemoteEntry => ({ key: `file:${rid}/${field}`, value, hlc, origin: 'peerLiar' })
      await node().store.records.applyRemote([e(pick(rand, VALUES))])
      await node().store.records.applyRemote([e(tomb ? null : pick(rand, VALUES))])
    } else if (roll < 0.67) {
      const a = nodes[pick(rand, up())].id
      const b = nodes[pick(rand, up())].id
      if (mesh.linked(a, b)) mesh.disconnect(a, b)
      else mesh.connect(a, b)
    } else if (roll < 0.72) {
      const i = pick(rand, up())
      if (rand() < 0.5) await c.restart(i)
      else { await c.reopen(i); for (const j of up()) if (j !== i && rand() < 0.7) mesh.connect(nodes[i].id, nodes[j].id) }
    } else if (roll < 0.8 && up().length > 2) {
      // Away: short or for weeks (every link down while the weeks pass), back later.
      const i = pick(rand, up().filter(x => x !== joiner))
      away.add(i)
      await c.stop(i)
      if (rand() < 0.4) await longPause(c, rand)
    } else if (roll < 0.86 && away.size > (joined ? 0 : 1)) {
      const i = pick(rand, [...away].filter(x => x !== joiner || !joined))
      away.delete(i)
      await c.start(i)
      for (const j of up()) if (j !== i && rand() < 0.7) mesh.connect(nodes[i].id, nodes[j].id)
    } else if (roll < 0.9 && !joined) {
      // The joiner comes, copies from one or two peers, and they leave mid-copy.
      joined = true
      away.delete(joiner)
      await c.start(joiner)
      const peers = up().filter(j => j !== joiner).slice(0, 1 + Math.floor(rand() * 2))
      for (const j of peers) mesh.connect(nodes[joiner].id, nodes[j].id)
      await mesh.runFor(Math.floor(rand() * 150))
      for (const j of peers) mesh.disconnect(nodes[joiner].id, nodes[j].id)
    } else {
      unfoldOne(nodes[pick(rand, nodes.map((_, i) => i))], rand)
    }
    await mesh.runFor(Math.floor(rand() * 400))
  }
  return h
}

/** Every link down while weeks pass (the links are restored after), so the weeks cost a few events. */
async function longPause (c: VirtualCluster, rand: () => number): Promise<void> {
  const links: Array<[string, string]> = []
  for (const a of c.nodes) for (const b of c.nodes) if (a.id < b.id && c.mesh.linked(a.id, b.id)) links.push([a.id, b.id])
  for (const [a, b] of links) c.mesh.disconnect(a, b)
  await c.mesh.runFor(Math.floor((1 + rand() * 59) * DAY))
  for (const [a, b] of links) c.mesh.connect(a, b)
}

/** Rewrites one deleted root's version map unfolded, as a store that kept every key's tombstone would hold it. */
function unfoldOne (node: ClusterNode, rand: () => number): void {
  const rows = node.store.kv.prefix('ver:').filter(([, v]) => VersionMap.parse(v).root !== undefined)
  if (rows.length === 0) return
  const [k, v] = pick(rand, rows)
  const vm = VersionMap.parse(v)
  const unfolded = new VersionMap(vm.root, new Map(vm.fields))
  for (const f of FIELDS) if (!unfolded.fields.has(f)) unfolded.fields.set(f, vm.root!)
  node.store.kv.writeSync(tx => { tx.put(k, unfolded.serialize()) })
}

async function heal (h: History): Promise<void> {
  const { c } = h
  for (let i = 0; i < c.nodes.length; i++) await c.start(i)
  c.mesh.connectAll()
  for (let round = 0; round < 40 && new Set(c.digests()).size > 1; round++) await c.mesh.runFor(ANTI_ENTROPY_MS)
}

/** Keys (`<rid>/<field>`) live on some node. */
function liveKeys (c: VirtualCluster): Set<string> {
  const out = new Set<string>()
  for (const nd of c.nodes) for (const [k] of nd.store.kv.prefix('file:')) out.add(k.slice(5))
  return out
}

async function check (seed: number): Promise<void> {
  const h = await history(seed)
  const { c } = h
  const want = merged(c.nodes.map(nd => replicaState(nd.store)))
  const liveAtEnd = liveKeys(c)
  await heal(h)
  const digests = c.digests()
  expect(new Set(digests).size, `seed ${seed}: digests ${digests.join(' ')}`).toBe(1)
  // Equal digests say the fingerprints agree; one node a seed is checked against a rebuild (a full check reads 65,536 buckets).
  const checked = c.nodes[seed % c.nodes.length]
  expect(fingerprintErrors(checked.store), `seed ${seed} ${checked.id}`).toEqual([])
  for (const nd of c.nodes) {
    expect(stateDiff(replicaState(nd.store), want), `seed ${seed} ${nd.id}`).toEqual([])
    const live = new Set(nd.store.kv.prefix('file:').map(([k]) => k.slice(5)))
    const missing = [...liveAtEnd].filter(k => !live.has(k) && !h.deletedKeys.has(k) && !h.deletedRoots.has(k.slice(0, k.indexOf('/'))))
    expect(missing, `seed ${seed} ${nd.id}: values live at the end and never deleted`).toEqual([])
  }
  const ref = c.nodes[0].store.records
  for (const nd of c.nodes.slice(1)) expect(nd.store.records.listRoots({ limit: 1_000 }), `seed ${seed} ${nd.id}`).toEqual(ref.listRoots({ limit: 1_000 }))
  await c.close()
  cluster = undefined
}

describe('replication histories (property)', () => {
  it('random histories with deletes, revivals, ties, partitions, absences of weeks, restarts and an interrupted join converge, losing nothing', async () => {
    const seeds = Number(process.env.META_CORE_PROPERTY_SEEDS ?? 200)
    for (let seed = 1; seed <= seeds; seed++) await check(seed)
  }, 900_000)
})
