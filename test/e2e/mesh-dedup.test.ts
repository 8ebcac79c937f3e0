/**
 * Copies of a gossiped frame, with the real router over TCP on 127.0.0.1: a
 * byte-identical copy of a frame the node already verified is dropped
 * without checking its signature again (gossipsub's fast message id,
 * gossip-dedup.ts), while a copy that differs (the same signer and sequence
 * number, other data) is still verified, refused, and costs its sender.
 */
import crypto from 'node:crypto'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { encodeMessage } from '../../src/mesh/index.js'
import { fastFrameId } from '../../src/mesh/libp2p/gossip-dedup.js'
import type { Libp2pMesh } from '../../src/mesh/libp2p/index.js'
import { formatHlc } from '../../src/records/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { p2pAddr, startMeshNode, swarmKeyIn } from '../helpers/mesh-nodes.js'
import { startRogue, type RoguePeer } from '../helpers/rogue-peer.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-e2e-dedup-')
let a: RunningNode
let rogue: RoguePeer

const pushOf = (rid: string, title: string) => (signer: string): Uint8Array =>
  encodeMessage({ t: 'push', origin: signer, epoch: 1, seq: 1, entries: [{ key: `file:${rid}/title`, value: title,
    hlc: formatHlc({ ms: Date.now(), counter: 0 }), origin: signer }] })

// Ed25519 signatures are checked with node:crypto's verify (@libp2p/crypto); counted here, in this process.
let verifies = 0
const verify = crypto.verify
beforeAll(async () => {
  crypto.verify = ((...args: Parameters<typeof verify>) => { verifies++; return verify(...args) }) as typeof verify
  const key = swarmKeyIn(tmp.dir)
  a = await startMeshNode({ dir: path.join(tmp.dir, 'a'), swarmKey: key })
  rogue = await startRogue(key)
  await rogue.dial(p2pAddr(a))
})

afterAll(async () => {
  crypto.verify = verify
  await rogue?.stop()
  await a?.stop()
  tmp.cleanup()
})

describe('duplicate gossip frames', () => {
  it('gives byte-identical messages one fast id, and every other message its own', async () => {
    const msg = await rogue.signAs(pushOf('01M8ME6YDNEBQ9WHRFBFD4HMGA', 'one'))
    expect(fastFrameId({ ...msg })).toBe(fastFrameId(msg))
    const flip = (b: Uint8Array): Uint8Array => { const c = Uint8Array.from(b); c[c.length - 1] ^= 1; return c }
    const variants = [
      { ...msg, data: flip(msg.data!) },
      { ...msg, seqno: flip(msg.seqno!) },
      { ...msg, from: flip(msg.from!) },
      { ...msg, signature: flip(msg.signature!) },
      { ...msg, key: undefined },
      { ...msg, topic: `${msg.topic}x` },
      // Field boundaries count: the same bytes split differently are another message.
      { ...msg, seqno: msg.seqno!.subarray(0, 7), from: Uint8Array.from([...msg.seqno!.subarray(7), ...msg.from!]) }
    ]
    const ids = new Set([fastFrameId(msg), ...variants.map(fastFrameId)])
    expect(ids.size).toBe(variants.length + 1)
  })

  it('verifies a frame once however many copies arrive, and still refuses a tampered copy', async () => {
    const gossip = a.mesh as Libp2pMesh
    await waitFor(() => gossip.gossipScore(rogue.peerId).inMesh, { timeoutMs: 10_000, what: 'the rogue in A\'s mesh' })
    const first = '01M8ME6YDNEBQ9WHRFBFD4HMGB'
    const msg = await rogue.signAs(pushOf(first, 'copied'))
    expect(rogue.sendMessage(msg)).toBe(1)
    await waitFor(() => a.store.records.getFlat(first) !== undefined, { timeoutMs: 10_000, what: 'the frame to be applied on A' })

    verifies = 0
    const copies = 30
    for (let i = 0; i < copies; i++) rogue.sendMessage(msg)
    // A new frame after the copies, on the same stream: once it is applied, the copies were handled.
    const marker = '01M8ME6YDNEBQ9WHRFBFD4HMGC'
    rogue.sendMessage(await rogue.signAs(pushOf(marker, 'after the copies')))
    await waitFor(() => a.store.records.getFlat(marker) !== undefined, { timeoutMs: 10_000, what: 'the frame after the copies' })
    // One verification for the marker (and at most a signed peer record or two from identify), none per copy.
    expect(verifies).toBeLessThan(5)
    expect(gossip.gossipScore(rogue.peerId).score).toBeGreaterThanOrEqual(0)

    // The same signer and sequence number with other data: verified, refused, and the sender pays for it.
    const data = Uint8Array.from(msg.data!)
    data[data.length - 1] ^= 1
    verifies = 0
    rogue.sendMessage({ ...msg, data })
    await waitFor(() => gossip.gossipScore(rogue.peerId).score < 0, { timeoutMs: 10_000, what: 'the tampered copy to cost the rogue its score' })
    expect(verifies).toBeGreaterThanOrEqual(1)
  }, 30_000)
})
