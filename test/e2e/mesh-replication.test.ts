/**
 * Three real nodes over libp2p on 127.0.0.1 (TCP, noise, yamux, pnet,
 * gossipsub), driven over their HTTP APIs: any record written anywhere is
 * readable everywhere by any of its CIDs, and concurrent conflicting writes
 * converge to the same records on every node.
 */
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { testCid } from '../helpers/record-ops.js'
import { getJson, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected, waitConverged } from '../helpers/mesh-nodes.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-e2e-mesh-')
let nodes: RunningNode[] = []

beforeAll(async () => {
  const key = swarmKeyIn(tmp.dir)
  const a = await startMeshNode({ dir: path.join(tmp.dir, 'a'), swarmKey: key })
  const b = await startMeshNode({ dir: path.join(tmp.dir, 'b'), swarmKey: key, bootstrap: [p2pAddr(a)] })
  const c = await startMeshNode({ dir: path.join(tmp.dir, 'c'), swarmKey: key, bootstrap: [p2pAddr(a), p2pAddr(b)] })
  nodes = [a, b, c]
  await waitConnected(nodes, 2)
})

afterAll(async () => {
  for (const n of nodes) await n.stop()
  tmp.cleanup()
})

async function readBy (n: RunningNode, cid: string): Promise<any> {
  return (await getJson(n, `/api/meta/${cid}`)).body
}

describe('mesh replication (three nodes)', () => {
  it('serves a record written on A from C by each of its CIDs, including one added later on B', async () => {
    const [a, b, c] = nodes
    const cid1 = testCid(1001)
    const cid2 = testCid(1002)
    const cid3 = testCid(1003)
    expect((await send(a, 'PATCH', `/meta/${cid1}`, { title: 'Written on A', year: '1999', [`cids/${cid2}`]: 'true' })).status).toBe(200)
    await waitFor(async () => (await getJson(c, `/api/meta/${cid1}`)).status === 200, { timeoutMs: 10_000, what: 'the record on C' })
    for (const cid of [cid1, cid2]) {
      const doc = await readBy(c, cid)
      expect(doc.metadata).toMatchObject({ title: 'Written on A', year: '1999' })
      expect([...doc.cids].sort()).toEqual([cid1, cid2].sort())
    }
    // B adds a third CID; C answers by it too, with the same record.
    await waitFor(async () => (await getJson(b, `/api/meta/${cid1}`)).status === 200, { timeoutMs: 10_000, what: 'the record on B' })
    expect((await send(b, 'PUT', `/meta/${cid1}/cids/${cid3}`, { value: 'true' })).status).toBe(200)
    await waitFor(async () => (await getJson(c, `/api/meta/${cid3}`)).status === 200, { timeoutMs: 10_000, what: 'the CID added on B, on C' })
    const byNew = await readBy(c, cid3)
    expect(byNew.metadata.title).toBe('Written on A')
    expect([...byNew.cids].sort()).toEqual([cid1, cid2, cid3].sort())
    await waitConverged(nodes)
    for (const n of nodes) for (const cid of [cid1, cid2, cid3]) expect((await readBy(n, cid)).metadata).toEqual(byNew.metadata)
  })

  it('reports the mesh: peer ids, bound addresses, sync positions; and a digest equal on every node', async () => {
    const [a, b, c] = nodes
    await waitConverged(nodes)
    const r = await getJson(a, '/api/mesh')
    expect(r.status).toBe(200)
    expect(r.body.enabled).toBe(true)
    expect(r.body.self.peerId).toBe(a.mesh.peerId)
    expect(r.body.self.addrs[0]).toMatch(/^\/ip4\/127\.0\.0\.1\/tcp\/[1-9][0-9]*\/p2p\/12D3KooW/)
    expect(r.body.self.hlc).toMatch(/^[0-9a-f]{16}$/)
    const peers = new Map<string, any>(r.body.peers.map((p: any) => [p.peerId, p]))
    for (const other of [b, c]) {
      const p = peers.get(other.mesh.peerId)
      expect(p).toMatchObject({ connected: true, framesRejected: 0, driftRefusals: 0 })
      expect(p.addrs.length).toBeGreaterThan(0)
      expect(typeof p.cursor).toBe('string')
      expect(typeof p.behind).toBe('boolean')
    }
    const d = await getJson(a, '/api/mesh/digest')
    expect(d.body.digest).toMatch(/^[0-9a-f]{64}$/)
    expect(d.body.keys).toBeGreaterThan(0)
    const docs = await getJson(a, '/docs')
    expect(Object.keys(docs.body.paths)).toEqual(expect.arrayContaining(['/api/mesh', '/api/mesh/digest']))
  })

  it('converges concurrent conflicting writes on three nodes: field sets, deletes, key-set adds and removes, DeleteRoot against a late write', async () => {
    const [a, b, c] = nodes
    const cidX = testCid(2001)
    const cidY = testCid(2002)
    await send(a, 'PATCH', `/meta/${cidX}`, { title: 'x', year: '2000', 'genres/Drama': 'true', 'genres/Comedy': 'true', note: 'n' })
    await send(a, 'PATCH', `/meta/${cidY}`, { title: 'y', rating: '5' })
    await waitConverged(nodes, 20_000, 'the seed records to reach every node')
    // All at once, on three nodes.
    const rs = await Promise.all([
      send(a, 'PATCH', `/meta/${cidX}`, { title: 'from A', 'genres/Thriller': 'true' }),
      send(b, 'PATCH', `/meta/${cidX}`, { title: 'from B', year: '2001' }),
      send(c, 'DELETE', `/meta/${cidX}/note`),
      send(b, 'DELETE', `/meta/${cidX}/genres/Comedy`),
      send(c, 'PATCH', `/meta/${cidX}`, { 'genres/Comedy': 'true', 'genres/Horror': 'true' }),
      send(a, 'DELETE', `/meta/${cidY}`),
      send(b, 'PATCH', `/meta/${cidY}`, { late: 'write' })
    ])
    for (const r of rs) expect(r.status, JSON.stringify(r.body)).toBe(200)
    // And a write to the deleted record that is later than the delete everywhere.
    await waitConverged(nodes, 20_000, 'the concurrent writes to converge')
    await send(c, 'PATCH', `/meta/${cidY}`, { later: 'revives' })
    await waitConverged(nodes, 20_000, 'the late write to converge')
    const docs = await Promise.all(nodes.map(async n => [await getJson(n, `/api/meta/${cidX}`), await getJson(n, `/api/meta/${cidY}`)]))
    for (const d of docs.slice(1)) expect(d).toEqual(docs[0])
    const x = docs[0][0].body
    expect(['from A', 'from B']).toContain(x.metadata.title)
    expect(x.metadata.note).toBeUndefined()
    expect(x.metadata['genres/Thriller']).toBe('true')
    expect(x.metadata['genres/Horror']).toBe('true')
    expect(docs[0][1].body.metadata.later).toBe('revives')
    // The visible record count agrees too.
    const counts = await Promise.all(nodes.map(async n => (await getJson(n, '/api/stats')).body.records))
    expect(new Set(counts).size).toBe(1)
  })
})
