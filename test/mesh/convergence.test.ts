/**
 * The property: random operations on 3–5 in-process nodes, with
 * random delivery order, duplication and loss of frames and of pull
 * requests, links going down and up and cores restarting, always converge
 * (equal digests, the same documents by every CID). Real record stores, the
 * real mesh core, a virtual clock: each seed replays exactly.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { RecordId } from '../../src/records/index.js'
import { prng } from '../../src/mesh/testing/index.js'
import { pick } from '../helpers/prng.js'
import { OP_CIDS, randomRecordOp, replicatedDoc } from '../helpers/record-ops.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const ANTI_ENTROPY_MS = 3_000

async function runSeed (seed: number, gossipLoss = 0.25): Promise<VirtualCluster> {
  const rand = prng(seed * 7919)
  const n = 3 + Math.floor(rand() * 3)
  const c = await virtualCluster(n, {
    seed,
    link: { latency: 'uniform:1:60', gossipLoss, gossipDup: 0.15, requestLoss: 0.1 },
    mesh: { antiEntropyMs: ANTI_ENTROPY_MS, requestTimeoutMs: 1_000, flushMs: 50 }
  })
  cluster = c
  const { mesh, nodes } = c
  mesh.connectAll()
  const known: RecordId[] = []
  for (let step = 0; step < 40; step++) {
    const roll = rand()
    if (roll < 0.08) {
      // A link goes down (or comes back).
      const a = pick(rand, nodes).id
      const b = pick(rand, nodes).id
      if (mesh.linked(a, b)) mesh.disconnect(a, b)
      else mesh.connect(a, b)
    } else if (roll < 0.11) {
      await c.restart(Math.floor(rand() * n))
    } else {
      const node = pick(rand, nodes)
      await randomRecordOp(node.store, rand, known, step)
    }
    await mesh.runFor(Math.floor(rand() * 300))
  }
  // Heal: every link up, losses still on. Pull alone must bring everyone to the same state.
  mesh.connectAll()
  for (let round = 0; round < 40; round++) {
    await mesh.runFor(ANTI_ENTROPY_MS)
    if (new Set(c.digests()).size === 1) break
  }
  return c
}

function documents (c: VirtualCluster, i: number): unknown {
  const r = c.nodes[i].store.records
  return {
    // Each node shows its own copy's location: the rest reads the same everywhere.
    byCid: OP_CIDS.map(cid => replicatedDoc(r.getDocument(cid)) ?? null),
    roots: r.listRoots().map(rid => replicatedDoc(r.getDocument(rid))),
    count: r.countRecords()
  }
}

async function expectConverged (c: VirtualCluster, seed: number): Promise<void> {
  const digests = c.digests()
  expect(new Set(digests).size, `seed ${seed}: digests ${digests.join(' ')}`).toBe(1)
  const ref = documents(c, 0)
  for (let i = 1; i < c.nodes.length; i++) expect(documents(c, i), `seed ${seed} node ${i}`).toEqual(ref)
  // Honest nodes never refuse each other's frames except replays (duplicated deliveries).
  for (const node of c.nodes) {
    for (const p of node.core.status().peers) expect(p.framesRejected - p.replays, `seed ${seed} ${node.id} ← ${p.peerId}`).toBe(0)
  }
  await c.close()
  cluster = undefined
}

describe('mesh convergence (property)', () => {
  it('random operations on 3–5 nodes with loss, duplication, reordering, partitions and restarts converge', async () => {
    // META_CORE_MESH_SEEDS runs more seeds.
    const seeds = Number(process.env.META_CORE_MESH_SEEDS ?? 12)
    for (let seed = 1; seed <= seeds; seed++) await expectConverged(await runSeed(seed), seed)
  }, 600_000)

  it('converges by pull alone when every gossip frame is lost', async () => {
    for (let seed = 101; seed <= 103; seed++) {
      const c = await runSeed(seed, 1)
      expect(c.mesh.counters.framesDelivered).toBe(0)
      await expectConverged(c, seed)
    }
  }, 600_000)
})
