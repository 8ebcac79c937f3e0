/**
 * Gossipsub peer scoring on the mesh topic, with the real router over TCP
 * on 127.0.0.1: a member that keeps publishing bad frames falls below the
 * graylist threshold, is pruned from the honest node's mesh, and what it
 * sends afterwards, valid or not, is dropped unread; the honest members keep
 * a score of 0 or more and replicate as before.
 */
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sleep, waitFor } from '../../src/common/index.js'
import { encodeMessage } from '../../src/mesh/index.js'
import { MESH_SCORE_THRESHOLDS } from '../../src/mesh/libp2p/gossip-scoring.js'
import type { Libp2pMesh } from '../../src/mesh/libp2p/index.js'
import { formatHlc } from '../../src/records/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { junkFrame } from '../helpers/hostile-frames.js'
import { getJson, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected } from '../helpers/mesh-nodes.js'
import { testCid } from '../helpers/record-ops.js'
import { startRogue, type RoguePeer } from '../helpers/rogue-peer.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-e2e-scoring-')
let key = ''
let a: RunningNode
let b: RunningNode
let rogue: RoguePeer

const gossip = (n: RunningNode): Libp2pMesh => n.mesh as Libp2pMesh

beforeAll(async () => {
  key = swarmKeyIn(tmp.dir)
  a = await startMeshNode({ dir: path.join(tmp.dir, 'a'), swarmKey: key })
  b = await startMeshNode({ dir: path.join(tmp.dir, 'b'), swarmKey: key, bootstrap: [p2pAddr(a)] })
  await waitConnected([a, b], 1)
  // Reachable from A alone: B learns its address from A's member exchange, and a
  // valid frame B took from it would reach A from B, an honest relay.
  rogue = await startRogue(key, { inbound: false })
  await rogue.dial(p2pAddr(a))
})

afterAll(async () => {
  await rogue?.stop()
  for (const n of [a, b]) await n?.stop()
  tmp.cleanup()
})

describe('gossipsub scoring of the mesh topic', () => {
  it('graylists and prunes a member that keeps sending bad frames, and keeps honest members above 0', async () => {
    const me = rogue.peerId
    await waitFor(() => gossip(a).gossipScore(me).inMesh && gossip(a).gossipScore(b.mesh.peerId).inMesh,
      { timeoutMs: 10_000, what: 'the rogue and B in A\'s mesh' })
    const seen = (): number => a.mesh.status().peers.find(p => p.peerId === me)?.framesRejected ?? 0
    for (let i = 0; i < 5; i++) {
      await rogue.publish(junkFrame(i))
      await waitFor(() => seen() >= i + 1, { timeoutMs: 10_000, what: `A to refuse bad frame ${i}` })
    }
    await waitFor(() => gossip(a).gossipScore(me).score < MESH_SCORE_THRESHOLDS.graylistThreshold, { timeoutMs: 5_000, what: 'the rogue\'s score below the graylist threshold' })
    await waitFor(() => !gossip(a).gossipScore(me).inMesh, { timeoutMs: 5_000, what: 'A to prune the rogue from its mesh' })

    // Graylisted: a valid frame from it is dropped before A's validator sees it.
    const rid = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
    const valid = encodeMessage({ t: 'push', origin: me, epoch: 1, seq: 1, entries: [{ key: `file:${rid}/title`, value: 'late',
      hlc: formatHlc({ ms: Date.now(), counter: 0 }), origin: me }] })
    await rogue.publish(valid)
    await rogue.publishAs(() => valid)
    await sleep(1_500) // nothing is to arrive: a bounded wait for a non-event
    expect(a.mesh.status().peers.find(p => p.peerId === me)).toMatchObject({ framesIn: 5, framesRejected: 5 })
    expect(a.store.records.getFlat(rid)).toBeUndefined()
    expect(rogue.node.getConnections().map(c => c.remotePeer.toString())).toEqual([a.mesh.peerId])

    // The honest member is untouched, and the mesh replicates.
    expect(gossip(a).gossipScore(b.mesh.peerId).score).toBeGreaterThanOrEqual(0)
    expect(gossip(b).gossipScore(a.mesh.peerId).score).toBeGreaterThanOrEqual(0)
    await send(b, 'PATCH', `/meta/${testCid(4101)}`, { title: 'still replicated' })
    await waitFor(async () => (await getJson(a, `/api/meta/${testCid(4101)}`)).status === 200, { timeoutMs: 5_000, what: 'B\'s write to reach A' })
    expect(gossip(a).gossipScore(b.mesh.peerId)).toMatchObject({ inMesh: true })
  }, 60_000)
})
