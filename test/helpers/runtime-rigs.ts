/**
 * The three runtimes of the mesh core, each set up for the MeshRuntime
 * contract (test/mesh/runtime.contract.ts): two nodes A and B, connected,
 * A's runtime held through the runtime's probe (its core muted) and B's
 * inbound side a scripted endpoint; a third peer id A knows nothing of.
 */
import os from 'node:os'
import path from 'node:path'
import { waitFor } from '../../src/common/index.js'
import { KvStore } from '../../src/kv/index.js'
import { Libp2pMesh, parseSwarmKey, prepareIdentity } from '../../src/mesh/libp2p/index.js'
import type { MeshRuntime, RuntimeProbe } from '../../src/mesh/protocol/index.js'
import { VirtualMesh } from '../../src/mesh/testing/index.js'
import { RecordStore } from '../../src/records/index.js'
import { worldOptions } from '../../sim/run.js'
import { resolveOptions } from '../../sim/scenario/scenarios.js'
import { World } from '../../sim/world.js'
import { muted, ScriptedEndpoint, type RuntimeRig } from '../mesh/runtime.contract.js'

let rigs = 0

/** The libp2p adapter (`Libp2pMesh`: noise, yamux, pnet, gossipsub, the pull protocol) on the in-memory transport, 5 ms links, in real time. */
export async function libp2pRig (): Promise<RuntimeRig> {
  const tag = `contract-${process.pid}-${++rigs}`
  const swarmKey = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'c0'.repeat(32)}`)!
  const ids = await Promise.all([0, 1, 2].map(async i => (await prepareIdentity(path.join(os.tmpdir(), `${tag}-never-written-${i}.key`))).identity))
  const b = new ScriptedEndpoint()
  let a: MeshRuntime | undefined
  const stores: KvStore[] = []
  const node = (i: number, probe: RuntimeProbe, bootstrap: string[]): Libp2pMesh => {
    const kv = new KvStore({ path: ':memory:', backgroundCheckpoint: false })
    stores.push(kv)
    return new Libp2pMesh({ records: new RecordStore(kv, { nodeId: ids[i].peerId }) }, {
      identity: ids[i], swarmKey, listen: [`/memory/${tag}-${i}`], bootstrap, transport: { kind: 'memory', latencyMs: 5 }, targetPeers: 0, probe
    })
  }
  const nodeB = node(1, { runtime: muted, endpoint: () => b }, [])
  const nodeA = node(0, { runtime: (rt) => { a = rt; return muted(rt) } }, [`/memory/${tag}-1/p2p/${ids[1].peerId}`])
  const close = async (): Promise<void> => {
    await Promise.allSettled([nodeA.stop(), nodeB.stop()])
    for (const kv of stores) kv.close()
  }
  try {
    await nodeB.start()
    await nodeA.start()
    await waitFor(() => b.connected.has(ids[0].peerId), { timeoutMs: 20_000, what: 'B to hear of A\'s connection' })
  } catch (err) {
    await close()
    throw err
  }
  return {
    a: a!,
    aId: ids[0].peerId,
    bId: ids[1].peerId,
    strangerId: ids[2].peerId,
    b,
    until: async (done, what, ms = 10_000) => { await waitFor(done, { timeoutMs: ms, what, intervalMs: 5 }) },
    stopPeer: async () => { await nodeB.stop() },
    close
  }
}

/** The virtual mesh (src/mesh/testing) on virtual time, 5–15 ms links. */
export async function virtualRig (): Promise<RuntimeRig> {
  const mesh = new VirtualMesh({ seed: 'contract', latency: 'uniform:5:15' })
  const b = new ScriptedEndpoint()
  mesh.attach('peerA', new ScriptedEndpoint())
  mesh.attach('peerB', b)
  mesh.connect('peerA', 'peerB')
  return {
    a: mesh.runtime('peerA'),
    aId: 'peerA',
    bId: 'peerB',
    strangerId: 'peerC',
    b,
    until: async (done, what, ms = 10_000) => { await mesh.runUntil(done, ms, what) },
    stopPeer: async () => { mesh.detach('peerB') },
    close: async () => {}
  }
}

/** The simulator's nodes (`SimNode`: the gossipsub model and the network model) on virtual time, 10 ms links. */
export async function simRig (): Promise<RuntimeRig> {
  const { opts } = resolveOptions({ scenario: 'baseline', profile: 'library', seed: 'contract', latency: '10' })
  const world = new World({ ...worldOptions(opts), seed: 'contract' })
  const [nodeA, nodeB, stranger] = [world.addNode(), world.addNode(), world.addNode()]
  const b = new ScriptedEndpoint()
  let a: MeshRuntime | undefined
  nodeA.probe = { runtime: (rt) => { a = rt; return muted(rt) } }
  nodeB.probe = { runtime: muted, endpoint: () => b }
  world.net.want(nodeA.index, nodeB.index)
  nodeA.start()
  nodeB.start()
  const until = async (done: () => boolean, what: string, ms = 10_000): Promise<void> => {
    const end = world.sched.now + ms
    while (!done()) {
      if (world.sched.now >= end) throw new Error(`simulator: ${what} did not happen within ${ms} ms of virtual time`)
      await world.runUntil(Math.min(end, world.sched.now + 5))
    }
  }
  await until(() => b.connected.has(nodeA.peerId), 'B to hear of A\'s connection')
  return {
    a: a!,
    aId: nodeA.peerId,
    bId: nodeB.peerId,
    strangerId: stranger.peerId,
    b,
    until,
    stopPeer: async () => { nodeB.stop() },
    close: async () => {
      for (const n of world.nodes) n.stop()
      for (const n of world.nodes) n.kv.close()
    }
  }
}
