/**
 * Reconciliation in the pull (peer-sync.ts), real cores over real stores on
 * the virtual mesh: where a cursor cannot serve it replaces the full
 * resync; a join against a peer that keeps writing with a small log
 * retention finishes without starting over; equal peers meeting for the
 * first time exchange one fingerprint; and between connected peers the
 * anti-entropy check sends nothing else while they are equal.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { newRecordId } from '../../src/records/index.js'
import { peerStatus, records } from '../helpers/cluster-records.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })


describe('reconciliation in the pull', () => {
  it('a fresh node joining a peer that keeps writing, with a small log retention, finishes without starting over', async () => {
    // Pages of 2 KB 100 ms apart: the copy takes about 10 s, while B logs 20 entries a second and keeps 50.
    const c = cluster = await virtualCluster(2, { seed: 21, link: { latency: 'uniform:40:60' }, mesh: { antiEntropyMs: 5_000, pageBytes: 2_000 },
      store: { streamRetention: 50, trimEvery: 10 } })
    const [a, b] = c.nodes
    await b.store.records.applyBatch(records(1_000, b.store.records.hlc.now(), 'peerZ'))
    c.mesh.connectAll()
    // B writes a record every 100 ms while A joins: its log is trimmed past any head A captured long before A is done.
    for (let i = 0; i < 100; i++) {
      await b.store.records.mergeFlat(newRecordId(), { title: `live ${i}`, note: 'y'.repeat(200) })
      await c.mesh.runFor(100)
    }
    await c.mesh.runUntil(() => new Set(c.digests()).size === 1 && !peerStatus(c, 0, b.id).resyncing && !peerStatus(c, 0, b.id).behind, 120_000, 'A to hold what B holds and be done with its copy')
    const s = peerStatus(c, 0, b.id)
    expect(s.resyncs).toBe(1) // the one copy of the range, never started again
    // B's log was trimmed past the head A captured before its copy: the gap after it was reconciled (what push had not brought), not copied again.
    const captured = b.replica.changesSince('1700000000000-0', { limit: 1, maxBytes: 1 })
    expect(captured.gap).toBe(true)
    expect(s.reconciles + s.reconcilesEqual).toBeGreaterThanOrEqual(1)
    expect(b.store.kv.streamLength('meta:events')).toBeLessThan(80)
    // While A copied B's range, B's reconciliations with A waited rather than send it all a second time.
    expect(peerStatus(c, 1, a.id).reconKeysOut).toBeLessThan(300)
  })

  it('equal peers meeting for the first time exchange one fingerprint each way and nothing else', async () => {
    const c = cluster = await virtualCluster(2, { seed: 22, mesh: { antiEntropyMs: 5_000 } })
    const [a, b] = c.nodes
    const same = records(2_000, a.store.records.hlc.now(), 'peerZ')
    await a.store.records.applyBatch(same)
    await b.store.records.applyBatch(same)
    expect(a.replica.digest()).toEqual(b.replica.digest())
    c.mesh.connectAll()
    await c.mesh.runUntil(() => peerStatus(c, 0, b.id).reconcilesEqual > 0 && peerStatus(c, 1, a.id).reconcilesEqual > 0, 10_000, 'both to compare')
    for (const [i, peer] of [[0, b.id], [1, a.id]] as const) {
      const s = peerStatus(c, i, peer)
      expect(s).toMatchObject({ pagesIn: 0, resyncs: 0, reconciles: 0, reconKeysIn: 0, reconKeysOut: 0, behind: false })
      expect(s.bytesIn).toBeLessThan(300)
      expect(s.cursor).toBe(c.nodes[1 - i].replica.head())
    }
    // Connected and equal, the anti-entropy rounds that follow send nothing but the check.
    const before = peerStatus(c, 0, b.id)
    await c.mesh.runFor(30_000)
    const after = peerStatus(c, 0, b.id)
    expect(after.reconcilesEqual).toBeGreaterThan(before.reconcilesEqual + 2)
    expect(after.pagesIn).toBe(0)
    expect(after.bytesIn - before.bytesIn).toBeLessThan(100 * (after.reconcilesEqual - before.reconcilesEqual))
  })

  it('a node that has records of its own reconciles with a new peer instead of copying its range, both ways', async () => {
    const c = cluster = await virtualCluster(2, { seed: 23, mesh: { antiEntropyMs: 60_000 } })
    const [a, b] = c.nodes
    const same = records(1_000, a.store.records.hlc.now(), 'peerZ')
    await a.store.records.applyBatch(same)
    await b.store.records.applyBatch(same)
    await a.store.records.mergeFlat(newRecordId(), { title: 'only on A' })
    await b.store.records.mergeFlat(newRecordId(), { title: 'only on B' })
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => new Set(c.digests()).size === 1, 10_000, 'the two to converge')
    const s = peerStatus(c, 0, b.id)
    expect(s.resyncs).toBe(0)
    expect(s.pagesIn).toBeLessThan(3)
  })
})
