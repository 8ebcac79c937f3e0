/**
 * Long absences are ordinary weather (docs/mesh.md, "Deletes are never
 * forgotten"): a node away for weeks, a partition that lasts as long, a
 * node that meets a new or empty peer first. Nothing is lost and nothing
 * deleted comes back: a deletion is kept however long anyone was away, and
 * no node deletes or withholds a value because a peer lacks it. Real cores
 * over real stores on the virtual mesh; the nodes left behind hold no links
 * while the virtual weeks pass, so the weeks cost a few events.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { newRecordId } from '../../src/records/index.js'
import { testCid } from '../helpers/record-ops.js'
import { virtualCluster, type ClusterNode, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const DAY = 86_400_000
/** Longer than any interval a node has (its anti-entropy, its request timeouts, any bound it keeps). */
const AWAY = 40 * DAY
const RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'

const agree = (nodes: readonly ClusterNode[]): boolean => new Set(nodes.map(n => n.replica.digest().digest)).size === 1

/** Writes `n` records on `node` (each a CID and a title); returns their ids. */
async function writeRecords (node: ClusterNode, n: number, tag: string): Promise<string[]> {
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    const rid = newRecordId()
    await node.store.records.mergeFlat(rid, { [`cids/${testCid(tag.charCodeAt(0) * 100_000 + i)}`]: 'true', title: `${tag} ${i}` })
    out.push(rid)
  }
  return out
}

describe('a node away for longer than any interval it has', () => {
  it('a partition of 40 days, both sides up throughout: the delete made meanwhile wins on both when it heals', async () => {
    const c = cluster = await virtualCluster(2, { seed: 521 })
    const [a, b] = c.nodes
    await a.store.records.mergeFlat(RID, { title: 't', year: '1999' })
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => b.store.records.getFlat(RID)?.year === '1999', 30_000, 'B to hold the record')
    c.mesh.disconnect(a.id, b.id)
    await a.store.records.deleteProperty(RID, 'year')
    await c.mesh.runFor(AWAY)
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => agree(c.nodes), 60_000, 'A and B to agree')
    expect(a.store.records.getFlat(RID)).toEqual({ title: 't' })
    expect(b.store.records.getFlat(RID)).toEqual({ title: 't' })
  })

  it('a node back after 40 days meets a new node first, then its old peer: every node ends with every record', async () => {
    const c = cluster = await virtualCluster(3, { seed: 522 })
    const [a, b, j] = c.nodes
    const mine = await writeRecords(a, 30, 'a')
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => b.store.records.countRecords() === 30, 30_000, 'B to hold A\'s records')
    await c.stop(0)
    await c.mesh.runFor(AWAY)
    const joiner = await writeRecords(j, 1, 'j')
    await c.start(0)
    c.mesh.connect(a.id, j.id)
    await c.mesh.runFor(60_000)
    await c.restart(1)
    c.mesh.connect(b.id, a.id)
    await c.mesh.runUntil(() => c.nodes.every(n => n.store.records.countRecords() === 31) && agree(c.nodes), 120_000, 'every node to hold all 31 records')
    for (const n of c.nodes) for (const rid of [...mine, ...joiner]) expect(n.store.records.getFlat(rid), `${n.id} ${rid}`).toBeDefined()
  })

  it('a node back after 40 days that meets an empty peer first does not give back a value deleted while it was away', async () => {
    const c = cluster = await virtualCluster(4, { seed: 523 })
    const [a, b, away, empty] = c.nodes
    await a.store.records.mergeFlat(RID, { title: 't', year: '1999' })
    c.mesh.connect(a.id, b.id)
    c.mesh.connect(a.id, away.id)
    await c.mesh.runUntil(() => [b, away].every(n => n.store.records.getFlat(RID)?.year === '1999'), 30_000, 'B and C to hold the record')
    await c.stop(2)
    await a.store.records.deleteProperty(RID, 'year')
    await c.mesh.runUntil(() => b.store.records.getFlat(RID)?.year === undefined, 30_000, 'B to take the delete')
    c.mesh.disconnect(a.id, b.id)
    await c.mesh.runFor(AWAY)
    // Back: it meets a peer that holds nothing first (which copies its range), then its old peers.
    await c.start(2)
    c.mesh.connect(away.id, empty.id)
    await c.mesh.runFor(60_000)
    c.mesh.connect(away.id, a.id)
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => agree(c.nodes), 120_000, 'every node to agree')
    for (const n of c.nodes) expect(n.store.records.getFlat(RID), n.id).toEqual({ title: 't' })
  })

  it('a fresh node that copies the range from a node back after 40 days does not spread a value deleted meanwhile', async () => {
    const c = cluster = await virtualCluster(3, { seed: 524 })
    const [a, away, fresh] = c.nodes
    await a.store.records.mergeFlat(RID, { title: 't', year: '1999' })
    c.mesh.connect(a.id, away.id)
    await c.mesh.runUntil(() => away.store.records.getFlat(RID)?.year === '1999', 30_000, 'C to hold the record')
    await c.stop(1)
    await a.store.records.deleteProperty(RID, 'year')
    await c.mesh.runFor(AWAY)
    await c.start(1)
    c.mesh.connect(away.id, fresh.id)
    await c.mesh.runUntil(() => fresh.store.records.getFlat(RID) !== undefined, 60_000, 'the fresh node to copy the range')
    await c.mesh.runFor(30_000)
    c.mesh.connect(fresh.id, a.id)
    await c.mesh.runUntil(() => agree(c.nodes), 120_000, 'every node to agree')
    for (const n of c.nodes) expect(n.store.records.getFlat(RID), n.id).toEqual({ title: 't' })
  })
})
