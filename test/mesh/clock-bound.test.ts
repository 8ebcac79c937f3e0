/**
 * The clock bound (CockroachDB's max-offset rule) on real stores over the
 * virtual mesh, with each node's wall clock offset from virtual time: a
 * node out of bound against most of the peers it measures refuses local
 * writes instead of minting versions its peers refuse, keeps its clock out
 * of its HLC meanwhile, and writes again once back in bound; a node alone
 * writes as before.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ClockOutOfBoundError, parseHlc } from '../../src/records/index.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const HOUR = 3_600_000

async function threeNodes (skew: Record<string, number>): Promise<VirtualCluster> {
  cluster = await virtualCluster(3, { seed: 7, mesh: { antiEntropyMs: 2_000 }, skewMs: (id) => skew[id] ?? 0 })
  return cluster
}

/** Writes `n` records on node i; returns their addresses. */
async function write (c: VirtualCluster, i: number, tag: string): Promise<string> {
  const r = await c.nodes[i].store.records.mergeFlat(`bafkreig${tag.padEnd(52, 'a')}`.slice(0, 59), { title: tag })
  return r.rid
}

describe('the clock bound', () => {
  it('refuses local writes while the clock is stepped an hour ahead, keeps the step out of the HLC, and converges once it is back', async () => {
    const skew: Record<string, number> = {}
    const c = await threeNodes(skew)
    const [a] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(3_000)
    expect(a.core.status().self.clock).toMatchObject({ inBound: true, measured: 2 })

    skew[a.id] = HOUR
    // The monotonic clock tells the step at once, before any pull measures it.
    expect(a.core.status().self.clock).toMatchObject({ inBound: false, outOfBound: 2 })
    await expect(write(c, 0, 'stepped')).rejects.toBeInstanceOf(ClockOutOfBoundError)
    await expect(write(c, 0, 'stepped')).rejects.toThrow(/clock is off by about 3[56]\d{5} ms \(ahead of 2 of its 2 peers, whose clocks agree/)
    // The others write on; their entries reach A without dragging A's HLC to its stepped clock.
    const fromB = await write(c, 1, 'fromb')
    await c.mesh.runFor(3_000)
    expect(a.store.records.getFlat(fromB)).toMatchObject({ title: 'fromb' })
    expect(parseHlc(a.replica.clock())!.ms).toBeLessThan(c.mesh.now() + 10_000)

    skew[a.id] = 0
    expect(a.core.status().self.clock).toMatchObject({ inBound: true })
    const fromA = await write(c, 0, 'froma')
    await c.mesh.runFor(3_000)
    for (const n of c.nodes) expect(n.store.records.getFlat(fromA)).toMatchObject({ title: 'froma' })
    expect(new Set(c.digests()).size).toBe(1)
    for (const n of c.nodes) for (const p of n.core.status().peers) expect(p.driftRefusals).toBe(0)
  })

  it('keeps a node whose clock runs within the drift limit but out of bound from dragging its neighbours\' HLC past what others accept', async () => {
    // X is 9 s ahead: within the 10 s drift A accepts, 12 s ahead of B. A's writes must still reach B.
    const c = await threeNodes({ peerA: 0, peerB: -3_000, peerC: 9_000 })
    const [, , x] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(3_000)
    const xWrote = await write(c, 2, 'fromx').then(() => true, (err: unknown) => { expect(err).toBeInstanceOf(ClockOutOfBoundError); return false })
    await c.mesh.runFor(500)
    const fromA = await write(c, 0, 'froma')
    await c.mesh.runFor(1_000)
    expect(c.nodes[1].store.records.getFlat(fromA)).toMatchObject({ title: 'froma' })
    const bSeesA = c.nodes[1].core.status().peers.find(p => p.peerId === c.nodes[0].id)
    expect(bSeesA).toMatchObject({ driftRefusals: 0 })
    expect(xWrote).toBe(false)
    expect(x.core.status().self.clock).toMatchObject({ inBound: false })
    expect(c.nodes[0].core.status().self.clock).toMatchObject({ inBound: true })
    expect(c.nodes[1].core.status().self.clock).toMatchObject({ inBound: true })
  })

  it('a node alone writes as before; one whose HLC is left an hour ahead waits, with a status that says so, once it measures peers', async () => {
    const skew: Record<string, number> = { peerA: HOUR }
    const c = await threeNodes(skew)
    const [a] = c.nodes
    // Alone, nobody to measure: it writes, an hour ahead.
    await write(c, 0, 'alone')
    skew.peerA = 0
    c.mesh.connectAll()
    // B and C hold nothing: they copy A's range first, and answer its requests busy meanwhile (a refusal gives no
    // clock sample); A measures them once their copies are done, at the retry hint they gave it.
    await c.mesh.runUntil(() => a.core.status().self.clock.measured === 2, 20_000, 'A to measure both peers')
    const clock = a.core.status().self.clock
    expect(clock).toMatchObject({ inBound: false })
    expect(clock.hlcAheadMs).toBeGreaterThan(HOUR - 10_000)
    await expect(write(c, 0, 'after')).rejects.toThrow(/ahead .*writes resume in about/)
    // The others are not held back.
    const fromB = await write(c, 1, 'fromb')
    await c.mesh.runFor(3_000)
    expect(c.nodes[2].store.records.getFlat(fromB)).toMatchObject({ title: 'fromb' })
  })
})
