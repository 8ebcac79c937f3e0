/**
 * A joining node copies the range once, whatever the number of its peers
 * (range-copy.ts): the first peer gives the slices, each slice comes from
 * one peer, the pages are applied in key order; a peer that leaves mid-copy
 * hands its slice to another; a node restarted mid-copy continues where it
 * stopped; a copy stops at the range's end as its first page was read. Real cores over real stores on the virtual mesh.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { splitPoints } from '../../src/mesh/protocol/range-copy.js'
import { peerStatus, records } from '../helpers/cluster-records.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })


/** Nodes 1..n-1 hold the same `count` records; node 0 is empty. Pages of `pageBytes` so the copy takes many. */
async function joinSetup (n: number, count: number, seed: number): Promise<VirtualCluster> {
  const c = cluster = await virtualCluster(n, { seed, link: { latency: 'uniform:20:30' }, mesh: { antiEntropyMs: 60_000, pageBytes: 4_000 } })
  const same = records(count, c.nodes[1].store.records.hlc.now(), 'peerZ', 60)
  for (const node of c.nodes.slice(1)) await node.store.records.applyBatch(same)
  return c
}

/** The pages one copy of node i's range takes at the cluster's page size. */
const rangePages = (c: VirtualCluster, i: number): number => {
  let n = 0
  for (let after: string | null = null; ;) {
    const page = c.nodes[i].replica.exportRange(after, { maxBytes: 4_000 })
    n++
    if (page.next === null) return n
    after = page.next
  }
}

describe('the range copy of a joining node', () => {
  it('cuts a store\'s range into slices of about equal roots', async () => {
    const c = await joinSetup(2, 3_000, 60)
    const cuts = splitPoints(c.nodes[1].replica, 8)
    expect(cuts).toHaveLength(7)
    const rids = c.nodes[1].store.records.listRoots({ limit: 10_000, after: undefined }).map(r => `file:${r}`).sort()
    let from = 0
    for (const cut of [...cuts, '\uffff']) {
      const to = rids.filter(r => r <= cut).length
      expect(to - from, `slice ending at ${cut}`).toBeGreaterThan(3_000 / 8 / 2)
      expect(to - from).toBeLessThan((3_000 / 8) * 2)
      from = to
    }
    expect(splitPoints(c.nodes[1].replica, 1)).toEqual([])
  })

  it('copies the range once from three peers, a slice from each, and ends level with all of them', async () => {
    const c = await joinSetup(4, 1_500, 61)
    c.mesh.connectAll()
    await c.mesh.runUntil(() => new Set(c.digests()).size === 1 && c.nodes.slice(1).every(p => !peerStatus(c, 0, p.id).resyncing), 120_000,
      'the joiner to hold what its peers hold')
    const peers = c.nodes.slice(1).map(p => peerStatus(c, 0, p.id))
    // One copy: the first peer counted it; every peer served pages of it.
    expect(peers.reduce((n, p) => n + p.resyncs, 0)).toBe(1)
    for (const p of peers) expect(p.pagesIn, p.peerId).toBeGreaterThan(2)
    // The pages pulled are about one range's, not three.
    const pulled = peers.reduce((n, p) => n + p.pagesIn, 0)
    expect(pulled).toBeLessThan(1.3 * rangePages(c, 1))
    expect(c.nodes[0].store.records.countRecords()).toBe(1_500)
  })

  it('copies the range once too when the joiner already holds a few records of its own, which reach every peer', async () => {
    const c = await joinSetup(4, 1_500, 62)
    const own = records(20, c.nodes[0].store.records.hlc.now(), 'joiner', 63)
    await c.nodes[0].store.records.applyBatch(own)
    c.mesh.connectAll()
    await c.mesh.runUntil(() => new Set(c.digests()).size === 1 && c.nodes.slice(1).every(p => !peerStatus(c, 0, p.id).resyncing), 120_000, 'the joiner and its peers to hold the same')
    const peers = c.nodes.slice(1).map(p => peerStatus(c, 0, p.id))
    // One copy, not a reconciliation with each peer moving the whole range from each.
    expect(peers.reduce((n, p) => n + p.resyncs, 0)).toBe(1)
    expect(peers.reduce((n, p) => n + p.reconKeysIn, 0)).toBeLessThan(200)
    expect(peers.reduce((n, p) => n + p.pagesIn, 0)).toBeLessThan(1.3 * rangePages(c, 1))
    for (const node of c.nodes) expect(node.store.records.countRecords()).toBe(1_520)
  })

  it('stops at the range\'s end as the first page was read: records the peer creates meanwhile come from its log, not by chasing the range\'s tail', async () => {
    const c = await joinSetup(2, 1_500, 64)
    const [a, b] = c.nodes
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => a.store.records.countRecords() > 300, 60_000, 'the copy to be under way')
    // New records sort after every root the copy was cut from (their ids are newer).
    await b.store.records.applyBatch(records(300, b.store.records.hlc.now(), 'writer', 40))
    await c.mesh.runUntil(() => !peerStatus(c, 0, b.id).resyncing, 120_000, 'the copy to end')
    // The copy took the 1,500 roots of its first page's range, not the 300 created after that page.
    expect(a.store.records.countRecords()).toBe(1_500)
    await c.mesh.runUntil(() => a.replica.digest().digest === b.replica.digest().digest, 60_000, 'the joiner to hold what its peer holds')
    // They came from the peer's log, pulled from the head its first page carried.
    expect(a.store.records.countRecords()).toBe(1_800)
    expect(peerStatus(c, 0, b.id).reconciles).toBe(0)
  })

  it('hands the slice of a peer that leaves mid-copy to another, and continues after a restart', async () => {
    const c = await joinSetup(3, 1_500, 62)
    const [a, b, d] = c.nodes
    c.mesh.connect(a.id, b.id)
    c.mesh.connect(a.id, d.id)
    await c.mesh.runUntil(() => a.store.records.countRecords() > 300, 60_000, 'the copy to be under way')
    c.mesh.disconnect(a.id, b.id)
    await c.mesh.runUntil(() => a.store.records.countRecords() > 800, 60_000, 'the copy to go on from the other peer')
    const before = peerStatus(c, 0, b.id).pagesIn + peerStatus(c, 0, d.id).pagesIn
    await c.restart(0)
    const a2 = c.nodes[0]
    expect(a2.store.records.countRecords()).toBeGreaterThan(800)
    c.mesh.connect(a2.id, d.id)
    await c.mesh.runUntil(() => new Set([a2, d].map(n => n.replica.digest().digest)).size === 1 && !peerStatus(c, 0, d.id).resyncing, 120_000, 'the restarted joiner to finish from the peer left')
    expect(a2.store.records.countRecords()).toBe(1_500)
    // One copy in all, across the peer that left and the restart: about one range's pages, not one per peer.
    expect(before + peerStatus(c, 0, d.id).pagesIn).toBeLessThan(1.1 * rangePages(c, 1))
    expect(peerStatus(c, 0, d.id).reconKeysIn).toBeLessThan(100)
  })
})
