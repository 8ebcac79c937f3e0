/**
 * Membership: nodes that bootstrap to one node learn each other's addresses
 * and connect among themselves, so losing the bootstrap node does not split
 * the mesh; a restarted node finds the others from the addresses it kept,
 * with its bootstrap node still gone. `/api/mesh` tells peers known only
 * from relayed gossip apart from direct ones, and `meta-core status` fails
 * for a node in a mesh that reaches no peer.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { runCli } from '../../src/node/cli.js'
import { testCid } from '../helpers/record-ops.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected, waitConverged } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(state.cleanup)

/** Waits until every node in `nodes` answers `cid` with `title`, within `timeoutMs`. */
async function waitHas (nodes: RunningNode[], cid: string, title: string, timeoutMs: number): Promise<void> {
  const missing = new Set(nodes)
  await waitFor(async () => {
    for (const n of [...missing]) {
      const r = await getJson(n, `/api/meta/${cid}`)
      if (r.status === 200 && r.body.metadata?.title === title) missing.delete(n)
    }
    return missing.size === 0
  }, { timeoutMs, intervalMs: 50, what: `${cid} on ${missing.size} more nodes (${[...missing].map(n => n.mesh.peerId.slice(-6)).join(' ')})` })
}

async function status (n: RunningNode): Promise<{ code: number, out: string, err: string }> {
  let out = ''
  let err = ''
  const code = await runCli(['status', '--url', n.url, '--timeout-ms', '5000'], {}, { out: (t) => { out += t }, err: (t) => { err += t } })
  return { code, out, err }
}

describe('membership', () => {
  it('five nodes bootstrapped to one stay one mesh without it, and a restarted node finds the others from the addresses it kept', async () => {
    const key = swarmKeyIn(state.dir())
    const dir = (n: number): string => path.join(state.dir(), `n${n}`)
    const n1 = await startMeshNode({ dir: dir(1), swarmKey: key })
    const boot = [p2pAddr(n1)]
    const rest: RunningNode[] = []
    for (let i = 2; i <= 5; i++) rest.push(await startMeshNode({ dir: dir(i), swarmKey: key, bootstrap: boot }))
    state.nodes.push(n1, ...rest)
    // Every node learns the others from its bootstrap peer and connects to them: no star around node 1.
    await waitConnected(state.nodes, 4, 20_000)
    const [n2, n3, n4, n5] = rest
    await waitFor(async () => (await getJson(n3, '/api/mesh')).body.members.filter((m: any) => m.lastConnectedAt !== null).length === 4,
      { timeoutMs: 10_000, what: 'node 3 to know 4 members' })

    await n1.stop()
    state.nodes.splice(state.nodes.indexOf(n1), 1)
    expect((await send(n2, 'PATCH', `/meta/${testCid(1)}`, { title: 'written on 2 with 1 gone' })).status).toBe(200)
    await waitHas([n3, n4, n5], testCid(1), 'written on 2 with 1 gone', 5_000)

    // Node 3 restarts knowing only node 1 (gone): the addresses it kept bring it back into the mesh.
    await n3.stop()
    state.nodes.splice(state.nodes.indexOf(n3), 1)
    expect((await send(n4, 'PATCH', `/meta/${testCid(2)}`, { title: 'written while 3 was away' })).status).toBe(200)
    const again = await startMeshNode({ dir: dir(3), swarmKey: key, bootstrap: boot })
    state.nodes.push(again)
    expect((await send(n2, 'PATCH', `/meta/${testCid(3)}`, { title: 'written after 3 came back' })).status).toBe(200)
    await waitHas([again], testCid(3), 'written after 3 came back', 5_000)
    await waitHas([again], testCid(2), 'written while 3 was away', 5_000)
    const mesh = (await getJson(again, '/api/mesh')).body
    expect(mesh.targetPeers).toBe(8)
    expect(mesh.peers.filter((p: any) => p.connected).map((p: any) => p.peerId).sort()).toEqual([n2, n4, n5].map(n => n.mesh.peerId).sort())
    // The addresses are the node's own bookkeeping, not replicated records: the digests still agree.
    await waitConverged(state.nodes, 10_000)
    expect((await status(again)).code).toBe(0)
  })

  it('shows a signer heard only through relayed gossip as such, and status fails when no peer is reachable', async () => {
    const key = swarmKeyIn(state.dir())
    // A chain A - B - C with no connections beyond the bootstrap lists: C hears A's frames only through B.
    const chain = ['--target-peers', '0']
    const a = await startMeshNode({ dir: path.join(state.dir(), 'a'), swarmKey: key, extraFlags: chain })
    const b = await startMeshNode({ dir: path.join(state.dir(), 'b'), swarmKey: key, bootstrap: [p2pAddr(a)], extraFlags: chain })
    const c = await startMeshNode({ dir: path.join(state.dir(), 'c'), swarmKey: key, bootstrap: [p2pAddr(b)], extraFlags: chain })
    state.nodes.push(a, b, c)
    await waitConnected([a, c], 1)
    await waitConnected([b], 2)
    // Gossipsub needs a heartbeat or two before B forwards A's frames: write until one reaches C by push.
    let i = 0
    await waitFor(async () => {
      await send(a, 'PATCH', `/meta/${testCid(100 + i++)}`, { title: 'from a' })
      const peers = (await getJson(c, '/api/mesh')).body.peers
      return peers.some((p: any) => p.peerId === a.mesh.peerId && p.framesIn > 0)
    }, { timeoutMs: 15_000, intervalMs: 200, what: 'a frame of A to reach C through B' })
    const peers = (await getJson(c, '/api/mesh')).body.peers
    const relayed = peers.find((p: any) => p.peerId === a.mesh.peerId)
    expect(relayed).toMatchObject({ via: 'gossip', connected: false, lastConnectedAt: null })
    // Heard moments ago, through B.
    expect(Date.now() - Date.parse(relayed.lastHeardAt)).toBeLessThan(5_000)
    expect(peers.find((p: any) => p.peerId === b.mesh.peerId)).toMatchObject({ via: 'direct', connected: true })
    const shown = await status(c)
    expect(shown.code).toBe(0)
    const row = shown.out.split('\n').find(l => l.split(/\s+/).includes(a.mesh.peerId)) // the NAME column comes first
    expect(row).toMatch(/via gossip, last heard (\d+ ms|[\d.]+ s) ago\s+-\s/)
    expect(shown.out).not.toMatch(new RegExp(`${a.mesh.peerId}\\s+disconnected`))

    // With B gone, C reaches nobody: status says so and fails.
    await b.stop()
    state.nodes.splice(state.nodes.indexOf(b), 1)
    await waitFor(() => c.mesh.status().peers.every(p => !p.connected), { timeoutMs: 10_000, what: 'C to lose B' })
    const cut = await status(c)
    expect(cut.code).toBe(1)
    expect(cut.out).toContain('no peer reachable')
  })
})
