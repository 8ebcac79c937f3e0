/**
 * Trust: a node with another swarm key receives nothing; a peer inside the
 * mesh that sends malformed, oversized, non-record, replayed, forged and
 * far-future frames through real gossipsub has each one refused and counted,
 * while the honest nodes stay healthy and correct; a blocked peer cannot
 * connect at all.
 */
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { encodeMessage } from '../../src/mesh/index.js'
import { formatHlc } from '../../src/records/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { testCid } from '../helpers/record-ops.js'
import { getJson, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected, waitConverged, waitDialFailures } from '../helpers/mesh-nodes.js'
import { startRogue, type RoguePeer } from '../helpers/rogue-peer.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-e2e-trust-')
let key = ''
let a: RunningNode
let b: RunningNode
const others: RunningNode[] = []
const rogues: RoguePeer[] = []

beforeAll(async () => {
  key = swarmKeyIn(tmp.dir)
  a = await startMeshNode({ dir: path.join(tmp.dir, 'a'), swarmKey: key })
  b = await startMeshNode({ dir: path.join(tmp.dir, 'b'), swarmKey: key, bootstrap: [p2pAddr(a)] })
  await waitConnected([a, b], 1)
})

afterAll(async () => {
  for (const r of rogues) await r.stop()
  for (const n of [...others, a, b]) await n.stop()
  tmp.cleanup()
})

describe('mesh trust', () => {
  it('a node with another swarm key cannot connect and receives nothing', async () => {
    const otherKey = swarmKeyIn(tmp.dir, 'other.key')
    const lines: string[] = []
    const d = await startMeshNode({ dir: path.join(tmp.dir, 'd'), swarmKey: otherKey, bootstrap: [p2pAddr(a)], logLines: lines })
    others.push(d)
    await send(a, 'PATCH', `/meta/${testCid(7001)}`, { title: 'inside the mesh' })
    await send(d, 'PATCH', `/meta/${testCid(7002)}`, { title: 'outside the mesh' })
    // D dials A and fails (the handshake of another swarm key looks like a reset or a timeout): it tried, and could not.
    await waitDialFailures(lines, 1)
    expect(d.mesh.status().peers).toEqual([])
    expect(a.mesh.status().peers.map(p => p.peerId)).not.toContain(d.mesh.peerId)
    expect((await getJson(d, `/api/meta/${testCid(7001)}`)).status).toBe(404)
    expect((await getJson(a, `/api/meta/${testCid(7002)}`)).status).toBe(404)
    expect(d.mesh.status().meshId).not.toBe(a.mesh.status().meshId)
  })

  it('refuses and counts every bad frame a peer publishes, and the honest nodes stay correct', async () => {
    // Gossipsub graylists a peer after three bad frames (gossip-scoring.ts; test/e2e/mesh-scoring.test.ts):
    // each peer here sends at most two, and its counts are checked after each frame.
    const rogue = async (): Promise<RoguePeer> => {
      const r = await startRogue(key)
      rogues.push(r)
      // libp2p admits 5 inbound connections per second from one address: retry a refused dial.
      await waitFor(async () => await r.dial(p2pAddr(a)).then(() => true, () => false), { timeoutMs: 10_000, what: 'a rogue to connect to A' })
      return r
    }
    const rid = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
    const hlc = (aheadMs = 0): string => formatHlc({ ms: Date.now() + aheadMs, counter: 0 })
    const entry = (field: string, value: string, origin: string, aheadMs = 0): { key: string, value: string, hlc: string, origin: string } =>
      ({ key: `file:${rid}/${field}`, value, hlc: hlc(aheadMs), origin })
    const json = (body: unknown): Uint8Array => new Uint8Array([1, 0, ...Buffer.from(JSON.stringify(body))])
    const valid = (me: string): Uint8Array => encodeMessage({ t: 'push', origin: me, epoch: 1, seq: 1, entries: [entry('title', 'from the rogue peer', me)] })
    const peers: Array<Array<[string, (me: string) => Uint8Array, Record<string, number>]>> = [[
      ['valid', valid, { framesIn: 1, framesRejected: 0 }],
      ['replayed', valid, { framesIn: 2, framesRejected: 1, replays: 1 }],
      ['malformed', () => new Uint8Array([1, 0, 0x7b, 0x7b, 0x7b]), { framesIn: 3, framesRejected: 2 }]
    ], [
      ['oversized', () => new Uint8Array([1, 0, ...Buffer.alloc(1024 * 1024 + 100, 0x20)]), { framesIn: 1, framesRejected: 1 }],
      ['non-record key', me => json({ t: 'push', o: me, e: 1, s: 2, b: { o: [me], v: [[hlc(), 0]], r: [['cid:bafkreiabc', -1, [[0, 'title', 'x']]]] } }),
        { framesIn: 2, framesRejected: 2 }]
    ], [
      // A connected peer: its frames are counted against it from the first, valid or not.
      ['far-future', me => encodeMessage({ t: 'push', origin: me, epoch: 1, seq: 3, entries: [entry('future', 'x', me, 3_600_000)] }),
        { framesIn: 1, framesRejected: 1, driftRefusals: 1 }],
      ['forged', () => encodeMessage({ t: 'push', origin: a.mesh.peerId, epoch: 1, seq: 1, entries: [entry('forged', 'x', a.mesh.peerId)] }),
        { framesIn: 2, framesRejected: 2, forged: 1 }]
    ]]
    for (const frames of peers) {
      const r = await rogue()
      const stats = (): Record<string, number> | undefined => a.mesh.status().peers.find(p => p.peerId === r.peerId) as Record<string, number> | undefined
      for (const [what, build, counts] of frames) {
        await r.publish(build(r.peerId))
        await waitFor(() => (stats()?.framesIn ?? 0) >= counts.framesIn, { timeoutMs: 10_000, what: `node A to see the ${what} frame` })
        expect(stats(), what).toMatchObject(counts)
      }
    }
    // Only the valid frame reached the store; nothing of the bad ones, on either honest node.
    await waitConverged([a, b])
    for (const n of [a, b]) {
      expect(n.store.records.getFlat(rid)).toEqual({ title: 'from the rogue peer' })
      expect((await getJson(n, '/health')).body.status).toBe('ok')
    }
    // The honest nodes go on replicating.
    await send(b, 'PATCH', `/meta/${testCid(7003)}`, { title: 'still working' })
    await waitFor(async () => (await getJson(a, `/api/meta/${testCid(7003)}`)).status === 200, { timeoutMs: 10_000, what: 'a write on B to reach A' })
  })

  it('refuses every connection of a blocked peer', async () => {
    const rogue = await startRogue(key)
    rogues.push(rogue)
    const e = await startMeshNode({ dir: path.join(tmp.dir, 'e'), swarmKey: key, bootstrap: [p2pAddr(a)], extraFlags: ['--blocked-peers', rogue.peerId] })
    others.push(e)
    // The handshake may complete on the dialling side before E closes the connection: either way, none stays.
    const toE = (): unknown[] => rogue.node.getConnections().filter(c => c.remotePeer.toString() === e.mesh.peerId)
    const dialled = await rogue.dial(p2pAddr(e)).then(() => 'opened', () => 'refused')
    expect(['opened', 'refused']).toContain(dialled)
    await waitFor(() => toE().length === 0, { timeoutMs: 5_000, what: 'E to close the blocked peer\'s connection' })
    expect(e.mesh.status().peers.map(p => p.peerId)).not.toContain(rogue.peerId)
    expect(toE()).toEqual([])
  })
})
