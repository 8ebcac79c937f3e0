/**
 * Region-aware dialing (META_CORE_CROSS_REGION_PEERS): the rule on measured
 * round trips (peer-distance.ts), and real nodes in three regions (the
 * in-memory transport, 1 ms inside a region and 25 ms between, through
 * the adapter's link control) that learn the mesh from one bootstrap node:
 * the connections they dial themselves end up mostly inside their region,
 * and every region keeps links to the others.
 */
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { KvStore } from '../../src/kv/index.js'
import { Libp2pMesh, parseSwarmKey, prepareIdentity, type LinkControl } from '../../src/mesh/libp2p/index.js'
import { PeerDistance, SAMPLE_WINDOW_MS } from '../../src/mesh/peer-distance.js'
import { RecordStore } from '../../src/records/index.js'

describe('PeerDistance', () => {
  it('tells near from far by the nearest round trip, and orders candidates by what the node lacks', () => {
    const d = new PeerDistance(1)
    for (const [p, ms] of [['a', 1], ['b', 3], ['c', 20], ['x', 80], ['y', 95]] as const) d.record(p, ms, 0)
    expect(['a', 'b', 'c', 'x', 'y', 'new'].map(p => d.kind(p))).toEqual(['near', 'near', 'near', 'far', 'far', 'unknown'])
    const c: Array<[string, null]> = [['y', null], ['new', null], ['b', null]]
    d.order(c, ['a', 'c']) // no far connection yet: far first, then the unmeasured
    expect(c.map(([p]) => p)).toEqual(['y', 'new', 'b'])
    d.order(c, ['a', 'x']) // one far already: near first
    expect(c.map(([p]) => p)).toEqual(['b', 'new', 'y'])
  })

  it('takes the least round trip of the last minute: a sample from a busy moment makes no near member far, a longer path shows within the minute', () => {
    const d = new PeerDistance(1)
    d.record('a', 1, 0)
    d.record('b', 3, 0)
    d.record('x', 60, 0)
    d.record('b', 70, 5_000) // b measured while the event loop was busy
    expect([d.rtt('b'), d.kind('b'), d.kind('x')]).toEqual([3, 'near', 'far'])
    d.record('b', 4, 10_000)
    d.record('b', 65, SAMPLE_WINDOW_MS + 5_000) // the 3 ms sample has aged out; 4 ms is still within the minute
    expect([d.rtt('b'), d.kind('b')]).toEqual([4, 'near'])
    d.record('b', 62, SAMPLE_WINDOW_MS + 10_000) // every near sample aged out: b's path is now long
    expect([d.rtt('b'), d.kind('b')]).toEqual([62, 'far'])
    d.record('b', 2, SAMPLE_WINDOW_MS + 11_000)
    expect(d.rtt('b')).toBe(2)
  })

  it('dials one over the target for a far link, makes room when the try was near, and gives up a far link too many', () => {
    const d = new PeerDistance(1)
    for (const [p, ms] of [['a', 1], ['b', 2], ['c', 2], ['x', 80], ['y', 90]] as const) d.record(p, ms, 0)
    const conn = (peer: string, outbound = true, keep = false): { peer: string, outbound: boolean, keep: boolean } => ({ peer, outbound, keep })
    expect(d.step([conn('a'), conn('b')], ['x'], 2)).toEqual({ extra: true })
    expect(d.step([conn('a'), conn('b'), conn('c')], ['new'], 2)).toEqual({ extra: false, drop: { peer: 'b', park: false } })
    expect(d.step([conn('a'), conn('b')], ['c'], 2)).toEqual({ extra: false }) // only near members left: nothing to do
    expect(d.step([conn('a'), conn('x'), conn('y')], ['b'], 3)).toEqual({ extra: false, drop: { peer: 'y', park: true } })
    expect(d.step([conn('a'), conn('x', false), conn('y', false)], ['b'], 3)).toEqual({ extra: false }) // they dialed us: not ours to drop
    expect(d.step([conn('a'), conn('x', false), conn('y', true, true)], ['b'], 3)).toEqual({ extra: false }) // a bootstrap peer: kept
  })
})

describe('region-aware dialing on real nodes', () => {
  const stores: KvStore[] = []
  const meshes: Libp2pMesh[] = []
  afterAll(async () => {
    await Promise.allSettled(meshes.map(async m => { await m.stop() }))
    for (const kv of stores) kv.close()
  })

  it('12 nodes in 3 regions, 4 connections each, 1 across: most connections stay inside a region and the regions stay connected', async () => {
    const N = 12
    const tag = `regions-${process.pid}`
    const swarmKey = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'d1'.repeat(32)}`)!
    const ids = await Promise.all(Array.from({ length: N }, async (_, i) => (await prepareIdentity(path.join(os.tmpdir(),
      `${tag}-never-written-${i}.key`))).identity))
    const index = new Map(ids.map((id, i) => [id.peerId, i]))
    const region = (peer: string): number => (index.get(peer) ?? 0) % 3
    const control: LinkControl = { delayMs: (from, to) => region(from) === region(to) ? 1 : 25, onChange: () => () => {} }
    const addr = (i: number): string => `/memory/${tag}-${i}/p2p/${ids[i].peerId}`
    for (let i = 0; i < N; i++) {
      const kv = new KvStore({ path: ':memory:', backgroundCheckpoint: false })
      stores.push(kv)
      // One bootstrap node (kept connected by every other: a link out of the region for a third of them); the rest is learned.
      const bootstrap = i === 0 ? [] : [addr(0)]
      meshes.push(new Libp2pMesh({ records: new RecordStore(kv, { nodeId: ids[i].peerId }) }, {
        identity: ids[i], swarmKey, listen: [`/memory/${tag}-${i}`], bootstrap, transport: { kind: 'memory', latencyMs: 1, control }, targetPeers: 4,
          crossRegionPeers: 1
      }))
    }
    for (const m of meshes) await m.start()
    const links = (): Array<[string, string]> => {
      const out = new Map<string, [string, string]>()
      for (const m of meshes) {
        for (const p of m.status().peers.filter(x => x.connected)) out.set([m.peerId, p.peerId].sort().join(), [m.peerId, p.peerId])
      }
      return [...out.values()]
    }
    // The links the nodes chose: not those to the bootstrap node, which every node keeps whatever it prefers.
    const chosen = (): Array<[string, string]> => links().filter(([a, b]) => a !== ids[0].peerId && b !== ids[0].peerId)
    const across = (): number => chosen().filter(([a, b]) => region(a) !== region(b)).length
    const regionsConnected = (): boolean => {
      const adj = new Map<number, Set<number>>([[0, new Set()], [1, new Set()], [2, new Set()]])
      for (const [a, b] of links()) { adj.get(region(a))!.add(region(b)); adj.get(region(b))!.add(region(a)) }
      const seen = new Set([0])
      const todo = [0]
      while (todo.length > 0) for (const r of adj.get(todo.pop()!)!) if (!seen.has(r)) { seen.add(r); todo.push(r) }
      return seen.size === 3
    }
    const settled = (): boolean => meshes.every(m => m.status().peers.filter(p => p.connected).length >= 4) && across() <= chosen().length / 3
    await waitFor(settled, { timeoutMs: 90_000, intervalMs: 500, what: '12 nodes at 4 connections, a third or fewer of the links they chose across regions' })
    expect(regionsConnected()).toBe(true)
    // Random dialing would put about 3 in 4 of them across (8 of a node's 10 peers besides the bootstrap node are elsewhere).
    expect(across() / chosen().length).toBeLessThanOrEqual(1 / 3)
  }, 120_000)
})
