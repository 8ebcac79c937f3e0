/**
 * What the change logs cannot carry is repaired by the anti-entropy check
 * (docs/mesh.md, "The check repairs"): two connected peers whose stores
 * still differ once their pulls have caught up reconcile at the second
 * check, and equal versions with different values converge to the tie's
 * winner. Real cores over real stores on the virtual mesh.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { encodeMessage } from '../../src/mesh/index.js'
import { Fingerprints } from '../../src/records/fingerprints.js'
import { formatHlc, VersionMap } from '../../src/records/index.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
const OTHER = '01M8ME6YDNEBQ9WHRFBFD4HMGR'
const ANTI_ENTROPY_MS = 5_000
/**
 * Two checks: the first on connect (or at the next round), the second one anti-entropy interval later, jitter (+25 %) and the round's
 * own requests included.
 */
const TWO_CHECKS_MS = Math.round(2 * 1.25 * ANTI_ENTROPY_MS) + 1_000

const agree = (c: VirtualCluster): boolean => new Set(c.digests()).size === 1

async function twoSynced (seed: number): Promise<VirtualCluster> {
  const c = cluster = await virtualCluster(2, { seed, mesh: { antiEntropyMs: ANTI_ENTROPY_MS } })
  const [a, b] = c.nodes
  await a.store.records.mergeFlat(RID, { title: 't', year: '1999', genre: 'g' })
  await b.store.records.mergeFlat(OTHER, { title: 'o' })
  c.mesh.connect(a.id, b.id)
  await c.mesh.runUntil(() => agree(c) && b.store.records.getFlat(RID) !== undefined, 30_000, 'A and B to agree')
  await c.mesh.runFor(2 * ANTI_ENTROPY_MS)
  return c
}

describe('the check repairs what the logs cannot carry', () => {
  it('a store that lost a tombstone the other keeps (as a compaction pass of an older version left it) is repaired within two checks', async () => {
    const c = await twoSynced(531)
    const [a, b] = c.nodes
    await a.store.records.deleteProperty(RID, 'year')
    await c.mesh.runUntil(() => agree(c), 30_000, 'B to take the delete')
    // Both rounds since found the ranges equal: each cursor is at the other's head, the delete behind it.
    await c.mesh.runFor(3 * ANTI_ENTROPY_MS)
    // B drops the field's tombstone from its version map, as compacting it did: its log keeps nothing of that.
    c.mesh.disconnect(a.id, b.id)
    await c.stop(1)
    b.store.kv.writeSync(tx => {
      const vm = VersionMap.parse(tx.get(`ver:${RID}`))
      expect(vm.fields.has('year')).toBe(true)
      vm.fields.delete('year')
      tx.put(`ver:${RID}`, vm.serialize())
      Fingerprints.invalidate(tx)
    })
    await c.reopen(1)
    expect(agree(c)).toBe(false)
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => agree(c), TWO_CHECKS_MS, 'the difference to be repaired within two checks')
    expect(VersionMap.parse(c.nodes[1].store.kv.get(`ver:${RID}`)).fields.has('year')).toBe(true)
    expect(c.nodes[1].store.records.getFlat(RID)).toEqual({ title: 't', genre: 'g' })
  })

  it('a member that signs one version with two values, one to each node, leaves them equal, holding the greater value', async () => {
    const c = await twoSynced(532)
    const [a, b] = c.nodes
    const liar = 'peerLiar'
    const hlc = formatHlc({ ms: c.mesh.now(), counter: 0 })
    const frame = (value: string): Uint8Array => encodeMessage({ t: 'push', origin: liar, epoch: 1, seq: 1,
      entries: [{ key: `file:${RID}/title`, value, hlc, origin: liar }] })
    expect(a.core.onGossip(liar, frame('x'))).toBe('accept')
    expect(b.core.onGossip(liar, frame('y'))).toBe('accept')
    await c.mesh.runFor(200)
    expect(a.store.records.getFlat(RID)?.title).toBe('x')
    expect(b.store.records.getFlat(RID)?.title).toBe('y')
    await c.mesh.runUntil(() => agree(c), TWO_CHECKS_MS, 'the two values to converge within two checks')
    for (const n of c.nodes) expect(n.store.records.getFlat(RID), n.id).toEqual({ title: 'y', year: '1999', genre: 'g' })
  })

  it('equal versions, a tombstone on one side and a value on the other: the tombstone wins on both', async () => {
    const c = await twoSynced(533)
    const [a, b] = c.nodes
    const liar = 'peerLiar'
    const hlc = formatHlc({ ms: c.mesh.now(), counter: 0 })
    const frame = (value: string | null): Uint8Array => encodeMessage({ t: 'push', origin: liar, epoch: 1, seq: 1,
      entries: [{ key: `file:${RID}/genre`, value, hlc, origin: liar }] })
    expect(a.core.onGossip(liar, frame('zzz'))).toBe('accept')
    expect(b.core.onGossip(liar, frame(null))).toBe('accept')
    await c.mesh.runUntil(() => agree(c), 30_000, 'the tie to be settled')
    for (const n of c.nodes) expect(n.store.records.getFlat(RID), n.id).toEqual({ title: 't', year: '1999' })
  })
})
