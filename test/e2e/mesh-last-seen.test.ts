/**
 * What `/api/mesh` says of a peer that is not connected, with real nodes
 * over TCP on 127.0.0.1: a stopped peer was last seen when its connection
 * dropped, not when it opened (and its member entry keeps that time across
 * a restart of the node); a peer this node was connected to before, whose
 * signed frames now reach it relayed by another peer, was last heard
 * moments ago and reads as reaching the node via gossip, in `/api/mesh`
 * and in `meta-core status`.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import type { MeshPeerView } from '../../src/mesh/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { fetchStatus, formatStatus } from '../../src/node/status-command.js'
import { testCid } from '../helpers/record-ops.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(state.cleanup)

interface Member { peerId: string, connected: boolean, lastSeenAt: string, lastConnectedAt: string | null }
interface View { peers: MeshPeerView[], members: Member[] }

async function view (n: RunningNode): Promise<View> {
  return (await getJson<View>(n, '/api/mesh')).body
}

async function peerOf (n: RunningNode, peerId: string): Promise<MeshPeerView | undefined> {
  return (await view(n)).peers.find(p => p.peerId === peerId)
}

const ms = (iso: string | null | undefined): number => (iso === null || iso === undefined ? Number.NaN : Date.parse(iso))

async function stop (n: RunningNode): Promise<void> {
  await n.stop()
  state.nodes.splice(state.nodes.indexOf(n), 1)
}

describe('a peer that is not connected', () => {
  it('was last seen when its connection dropped, not when it opened, and its member entry keeps that across a restart', async () => {
    const key = swarmKeyIn(state.dir())
    const dirB = path.join(state.dir(), 'b')
    const b = await startMeshNode({ dir: dirB, swarmKey: key })
    const c = await startMeshNode({ dir: path.join(state.dir(), 'c'), swarmKey: key, bootstrap: [p2pAddr(b)] })
    state.nodes.push(b, c)
    await waitConnected([b, c], 1)
    const connectedBy = Date.now()
    const peerC = c.mesh.peerId
    // While connected, last seen and last connected are now, whenever asked.
    const live = await peerOf(b, peerC)
    expect(ms(live?.lastSeenAt)).toBeGreaterThanOrEqual(connectedBy)
    expect(ms(live?.lastConnectedAt)).toBeGreaterThanOrEqual(connectedBy)

    // C writes; B takes it and catches up with C.
    expect((await send(c, 'PATCH', `/meta/${testCid(1)}`, { title: 'from c' })).status).toBe(200)
    await waitFor(async () => (await getJson(b, `/api/meta/${testCid(1)}`)).body?.metadata?.title === 'from c', { timeoutMs: 10_000, what: 'C\'s write on B' })
    await waitFor(async () => (await peerOf(b, peerC))?.behind === false, { timeoutMs: 10_000, what: 'B caught up with C' })
    // The connection must have lasted a while for its opening and its end to be told apart: the time itself is what is waited for.
    await waitFor(() => Date.now() - connectedBy >= 2_000, { timeoutMs: 5_000, what: 'the connection to last 2 s' })

    const stopFrom = Date.now()
    await stop(c)
    await waitFor(async () => (await peerOf(b, peerC))?.connected === false, { timeoutMs: 10_000, what: 'B to lose C' })
    const seenBy = Date.now()
    const v = await view(b)
    const gone = v.peers.find(p => p.peerId === peerC)!
    for (const at of [gone.lastSeenAt, gone.lastConnectedAt]) {
      expect(ms(at)).toBeGreaterThanOrEqual(stopFrom)
      expect(ms(at)).toBeLessThanOrEqual(seenBy)
    }
    // Its last frame came straight from it, before it stopped: not heard since it left.
    expect(ms(gone.lastHeardAt)).toBeLessThan(stopFrom)
    expect(gone).toMatchObject({ via: 'direct', connected: false, behind: false })
    const member = v.members.find(m => m.peerId === peerC)!
    expect(member).toMatchObject({ connected: false, lastSeenAt: gone.lastSeenAt, lastConnectedAt: gone.lastConnectedAt })
    const row = formatStatus(await fetchStatus(b.url, undefined, 5_000)).split('\n').find(l => l.includes(peerC))
    expect(row).toMatch(/\sdisconnected, last seen (\d+ ms|[\d.]+ s) ago\s+was caught up when last synced\s/)

    // B restarts: C's member entry still says when its connection dropped (not when B stopped).
    await stop(b)
    const again = await startMeshNode({ dir: dirB, swarmKey: key })
    state.nodes.push(again)
    const kept = (await view(again)).members.find(m => m.peerId === peerC)
    expect(kept).toMatchObject({ connected: false, lastSeenAt: member.lastSeenAt, lastConnectedAt: member.lastConnectedAt })
  })

  it('whose frames reach this node through another peer was last heard moments ago, and its changes reach the node via gossip', async () => {
    const key = swarmKeyIn(state.dir())
    // --target-peers 0: each node dials only its bootstrap list, so the connections are the ones the test makes.
    const only = ['--target-peers', '0']
    const dirA = path.join(state.dir(), 'a')
    const b = await startMeshNode({ dir: path.join(state.dir(), 'b'), swarmKey: key, extraFlags: only })
    const c = await startMeshNode({ dir: path.join(state.dir(), 'c'), swarmKey: key, bootstrap: [p2pAddr(b)], extraFlags: only })
    state.nodes.push(b, c)
    // A is connected to B and C, then restarts with B alone to dial: C is a peer it was connected to, reached now only through B.
    const first = await startMeshNode({ dir: dirA, swarmKey: key, bootstrap: [p2pAddr(b), p2pAddr(c)], extraFlags: only })
    state.nodes.push(first)
    await waitConnected([first, b, c], 2)
    const peerC = c.mesh.peerId
    // Identify has told A C's addresses: C is a member A was connected to, kept when A stops.
    await waitFor(async () => (await view(first)).members.some(m => m.peerId === peerC && m.connected), { timeoutMs: 10_000, what: 'A to know C as a member' })
    const leftFrom = Date.now()
    await stop(first)
    const leftBy = Date.now()
    const a = await startMeshNode({ dir: dirA, swarmKey: key, bootstrap: [p2pAddr(b)], extraFlags: only })
    state.nodes.push(a)
    await waitConnected([a], 1)
    // Gossipsub needs a heartbeat or two before B forwards C's frames to A: write on C until one reaches A.
    let i = 0
    await waitFor(async () => {
      await send(c, 'PATCH', `/meta/${testCid(100 + i++)}`, { title: 'from c' })
      return (await peerOf(a, peerC))?.lastHeardAt != null
    }, { timeoutMs: 15_000, intervalMs: 200, what: 'a frame of C to reach A through B' })
    const now = Date.now()
    const p = (await peerOf(a, peerC))!
    expect(p).toMatchObject({ via: 'direct', connected: false })
    expect(p.framesIn).toBeGreaterThan(0)
    // Last connected when A's first run stopped; heard after that, moments ago; seen when heard.
    expect(ms(p.lastConnectedAt)).toBeGreaterThanOrEqual(leftFrom)
    expect(ms(p.lastConnectedAt)).toBeLessThanOrEqual(leftBy)
    expect(ms(p.lastHeardAt)).toBeGreaterThan(leftBy)
    expect(now - ms(p.lastHeardAt)).toBeLessThan(5_000)
    expect(p.lastSeenAt).toBe(p.lastHeardAt)
    expect((await view(a)).peers.find(x => x.peerId === b.mesh.peerId)).toMatchObject({ connected: true })

    const row = formatStatus(await fetchStatus(a.url, undefined, 5_000)).split('\n').find(l => l.includes(peerC))
    expect(row).toMatch(/\sdisconnected, its changes reach us via gossip \(last heard (\d+ ms|[\d.]+ s) ago\)\s/)
  })
})
