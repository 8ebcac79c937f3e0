/**
 * A copy of the range never holds the node hostage (docs/mesh.md, "The
 * copy"): while it runs, the node's other peers pull from it and check with
 * it; a copy whose peer leaves is abandoned after a bounded wait, keeping
 * what arrived; a copy started on a peer's word goes on only if the range's
 * first page bears it out; the status says what the copy does and why it
 * stopped. Real cores over real stores on the virtual mesh, every gossip
 * frame lost so that only pulls move records; the lying member is a fake
 * endpoint on the mesh (the network edge).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { decodeMessage, encodeMessage, type MeshEndpoint } from '../../src/mesh/index.js'
import { newRecordId } from '../../src/records/index.js'
import { records } from '../helpers/cluster-records.js'
import { virtualCluster, type ClusterNode, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const ANTI_ENTROPY_MS = 5_000
/** One anti-entropy interval, its jitter (+25 %) and a round's requests included. */
const ONE_INTERVAL_MS = Math.round(1.25 * ANTI_ENTROPY_MS) + 500
const COPY_STALL_MS = 30_000

/** J (node 0) and its peer P (node 1), synced, a few records each; a third node, if any, is left to the test. */
async function joinerAndPeer (n: number, seed: number): Promise<VirtualCluster> {
  const c = cluster = await virtualCluster(n, {
    seed,
    link: { gossipLoss: 1 },
    mesh: { antiEntropyMs: ANTI_ENTROPY_MS, pageBytes: 4_000, copyStallMs: COPY_STALL_MS }
  })
  const [j, p] = c.nodes
  await j.store.records.applyBatch(records(10, j.store.records.hlc.now(), 'peerJ0', 20))
  await p.store.records.applyBatch(records(10, p.store.records.hlc.now(), 'peerP0', 20))
  c.mesh.connect(j.id, p.id)
  await c.mesh.runUntil(() => new Set([j, p].map(x => x.replica.digest().digest)).size === 1, 30_000, 'J and P to agree')
  await c.mesh.runFor(2 * ANTI_ENTROPY_MS)
  return c
}

async function write (node: ClusterNode, title: string): Promise<string> {
  const rid = newRecordId()
  await node.store.records.mergeFlat(rid, { title })
  return rid
}

/** Every root `from` holds, `to` holds too. */
const holdsAllOf = (to: ClusterNode, from: ClusterNode): boolean => {
  const mine = new Set(to.store.records.listRoots({ limit: 100_000 }))
  return from.store.records.listRoots({ limit: 100_000 }).every(r => mine.has(r))
}

describe('a copy never holds the node hostage', () => {
  it('a joiner whose copy\'s peer leaves mid-copy is pulled from within one interval, holds what its peers hold within two, and abandons the copy keeping what arrived', async () => {
    const c = await joinerAndPeer(3, 561)
    const [j, p, big] = c.nodes
    await big.store.records.applyBatch(records(3_000, big.store.records.hlc.now(), 'peerZ', 60))
    c.mesh.connect(j.id, big.id)
    await c.mesh.runUntil(() => j.store.records.countRecords() > 320, 60_000, 'the copy from the big peer to be under way')
    const during = j.core.status().copy
    c.mesh.disconnect(j.id, big.id)
    const arrived = j.store.records.countRecords()

    const w = await write(j, 'written after the big peer left')
    await c.mesh.runUntil(() => p.store.records.getFlat(w) !== undefined, ONE_INTERVAL_MS, 'P to pull J\'s new record within one anti-entropy interval')
    const q = await write(p, 'written on P')
    await c.mesh.runUntil(() => j.store.records.getFlat(q) !== undefined && holdsAllOf(j, p), 2 * ONE_INTERVAL_MS, 'J to hold everything P holds within two intervals')

    expect(during).toMatchObject({ state: 'copying', peers: [big.id] })
    await c.mesh.runFor(COPY_STALL_MS)
    const copy = j.core.status().copy
    expect(copy.state).toBe('abandoned')
    expect(copy.stopped).toMatch(/left or refused/)
    expect(j.core.status().peers.find(x => x.peerId === p.id)?.resyncing).toBe(false)
    expect(j.store.records.countRecords()).toBeGreaterThanOrEqual(arrived + 1)
    // The big peer back: the pair reconciles, and everything ends on every node.
    c.mesh.connect(j.id, big.id)
    c.mesh.connect(p.id, big.id)
    await c.mesh.runUntil(() => new Set(c.digests()).size === 1, 120_000, 'every node to agree')
    for (const n of c.nodes) expect(n.store.records.countRecords(), n.id).toBe(3_022)
  })

  it('a member that claims to hold far more, refuses the range and leaves, starts no copy that outlasts it, and is not believed again', async () => {
    const c = await joinerAndPeer(2, 562)
    const [j, p] = c.nodes
    const liar = 'peerLiar'
    let lies = 0
    const endpoint: MeshEndpoint = {
      onGossip: () => 'ignore',
      handleRequest: async (_peer, bytes) => {
        const m = decodeMessage(bytes)
        if (m.t === 'recon' && m.ranges.length === 1 && m.ranges[0].p === '') {
          lies++
          // 16 ranges of 6,250 roots each: 100,000 roots, against J's 20.
          const ranges = [...'0123456789abcdef'].map(d => ({ p: d, fp: d.repeat(32), n: 6_250 }))
          return encodeMessage({ t: 'recond', log: 'liar-log', head: '9-0', ranges, diff: [], taken: 1, clock: c.mesh.now() })
        }
        return encodeMessage({ t: 'error', code: 'busy', message: 'not now', retryAfterMs: 5_000 })
      },
      peerConnected: () => {},
      peerDisconnected: () => {}
    }
    c.mesh.attach(liar, endpoint)
    c.mesh.connect(j.id, liar)
    await c.mesh.runFor(2_000)
    expect(lies).toBeGreaterThan(0)
    c.mesh.disconnect(j.id, liar)

    const w = await write(j, 'written after the liar left')
    await c.mesh.runUntil(() => p.store.records.getFlat(w) !== undefined, ONE_INTERVAL_MS, 'P to pull J\'s new record within one anti-entropy interval')
    const copy = j.core.status().copy
    expect(copy.state).toBe('abandoned')
    expect(copy.stopped).toMatch(/peerLiar said it holds 100000 roots/)
    // Back and lying again: its word starts no copy.
    c.mesh.connect(j.id, liar)
    await c.mesh.runFor(2 * ANTI_ENTROPY_MS)
    const again = lies
    expect(again).toBeGreaterThan(1)
    expect(j.core.status().copy).toMatchObject({ state: 'abandoned' })
    const w2 = await write(j, 'written while the liar is back')
    await c.mesh.runUntil(() => p.store.records.getFlat(w2) !== undefined, ONE_INTERVAL_MS, 'P to pull J\'s next record within one interval')
  })
})
