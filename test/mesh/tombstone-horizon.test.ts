/**
 * The tombstone horizon (docs/mesh.md): tombstones older than it are
 * compacted, fingerprints kept exact; a cursor older than it reconciles;
 * and a node out of contact with the mesh for longer than it does not bring
 * back a value deleted while it was away, while a fresh node still takes
 * every old value. Real cores over real stores on the virtual mesh, with a
 * horizon of a minute of virtual time.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { PeerStatus } from '../../src/mesh/index.js'
import { VersionMap } from '../../src/records/index.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'
import { fingerprintErrors } from '../records/fingerprint-check.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const HORIZON = 60_000
const RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
const OTHER = '01M8ME6YDNEBQ9WHRFBFD4HMGR'

function peerStatus (c: VirtualCluster, i: number, peer: string): PeerStatus {
  const p = c.nodes[i].core.status().peers.find(x => x.peerId === peer)
  if (p === undefined) throw new Error(`no status for ${peer}`)
  return p
}

describe('the tombstone horizon', () => {
  it('compacts tombstones older than the horizon, keeps newer ones and the fingerprints exact', async () => {
    const c = cluster = await virtualCluster(1, { seed: 31, mesh: { tombstoneRetentionMs: HORIZON, compactEveryMs: 10_000 } })
    const a = c.nodes[0]
    await a.store.records.mergeFlat(RID, { title: 't', year: '1999', genre: 'g' })
    await a.store.records.deleteProperty(RID, 'year')
    await a.store.records.mergeFlat(OTHER, { title: 'gone' })
    await a.store.records.deleteRoot(OTHER)
    await c.mesh.runFor(HORIZON / 2)
    await a.store.records.deleteProperty(RID, 'genre')
    expect(VersionMap.parse(a.store.kv.get(`ver:${RID}`)).fields.has('year')).toBe(true)
    await c.mesh.runFor(HORIZON / 2 + 15_000)
    const vm = VersionMap.parse(a.store.kv.get(`ver:${RID}`))
    expect(vm.fields.has('year')).toBe(false) // older than the horizon: compacted
    expect(vm.fields.has('genre')).toBe(true) // newer: kept
    expect(a.store.kv.get(`ver:${OTHER}`)).toBeUndefined() // the deleted root, wholly
    expect(a.store.records.getFlat(RID)).toEqual({ title: 't' })
    expect(fingerprintErrors(a.store)).toEqual([])
  })

  it('a node away longer than the horizon does not bring back a value deleted meanwhile; a fresh node still takes old values', async () => {
    const c = cluster = await virtualCluster(3, { seed: 32, mesh: { tombstoneRetentionMs: HORIZON, compactEveryMs: 10_000, antiEntropyMs: 5_000 } })
    const [a, b, fresh] = c.nodes
    await a.store.records.mergeFlat(RID, { title: 't', year: '1999', note: 'kept' })
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => b.store.records.getFlat(RID)?.year === '1999', 10_000, 'B to hold the record')
    await c.mesh.runFor(6_000)
    // B goes away; meanwhile A deletes the field, and after the horizon compacts the tombstone.
    c.mesh.disconnect(a.id, b.id)
    await c.mesh.runFor(1_000)
    await a.store.records.deleteProperty(RID, 'year')
    await c.mesh.runFor(2 * HORIZON)
    expect(VersionMap.parse(a.store.kv.get(`ver:${RID}`)).fields.has('year')).toBe(false)
    expect(b.store.records.getFlat(RID)?.year).toBe('1999')
    // B comes back (restarted: it knows it was away past the horizon) and reconnects.
    await c.restart(1)
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => new Set([a, b].map(x => x.replica.digest().digest)).size === 1, 30_000, 'A and B to agree')
    expect(a.store.records.getFlat(RID)).toEqual({ title: 't', note: 'kept' })
    expect(b.store.records.getFlat(RID)).toEqual({ title: 't', note: 'kept' })
    expect(peerStatus(c, 1, a.id).reconciles).toBeGreaterThan(0)
    // A fresh node joins: the values older than the horizon reach it all the same.
    c.mesh.connect(fresh.id, a.id)
    await c.mesh.runUntil(() => fresh.replica.digest().digest === a.replica.digest().digest, 30_000, 'the fresh node to join')
    expect(fresh.store.records.getFlat(RID)).toEqual({ title: 't', note: 'kept' })
  })
})
