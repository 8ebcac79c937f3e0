/**
 * A node that was away catches up: stopped, the others write, restarted:
 * it pulls what it missed from its cursors. When its peers' change logs were
 * trimmed past its cursors meanwhile, it takes a full resync and still ends
 * with the same records.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { RunningNode } from '../../src/node/index.js'
import { testCid } from '../helpers/record-ops.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected, waitConverged } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(state.cleanup)

async function partitionRun (retention?: { streamRetention: number, trimEvery: number }): Promise<{ c: RunningNode, others: RunningNode[] }> {
  const key = swarmKeyIn(state.dir())
  const dir = (n: string): string => path.join(state.dir(), n)
  const a = await startMeshNode({ dir: dir('a'), swarmKey: key, ...retention })
  const b = await startMeshNode({ dir: dir('b'), swarmKey: key, bootstrap: [p2pAddr(a)], ...retention })
  const cOpts = { dir: dir('c'), swarmKey: key, bootstrap: [p2pAddr(a), p2pAddr(b)] }
  let c = await startMeshNode(cOpts)
  state.nodes.push(a, b, c)
  await waitConnected(state.nodes, 2)
  for (let i = 0; i < 10; i++) await send(a, 'PATCH', `/meta/${testCid(i)}`, { title: `before ${i}` })
  await waitConverged(state.nodes)

  await c.stop()
  state.nodes.pop()
  // Writes on both while C is away, more than the logs keep when retention is small.
  for (let i = 0; i < 60; i++) {
    await send(i % 2 === 0 ? a : b, 'PATCH', `/meta/${testCid(i % 20)}`, { title: `during ${i}`, [`round/${i}`]: String(i) })
  }
  await send(b, 'DELETE', `/meta/${testCid(3)}`)
  await waitConverged(state.nodes)

  c = await startMeshNode(cOpts)
  state.nodes.push(c)
  await waitConverged(state.nodes, 20_000, 'the restarted node to catch up')
  return { c, others: [a, b] }
}

describe('partition', () => {
  it('a stopped node catches up from its cursors when it comes back', async () => {
    const { c, others } = await partitionRun()
    const peers = (await getJson(c, '/api/mesh')).body.peers
    expect(peers.length).toBe(2)
    // Its cursors survived the restart: no resync was needed.
    for (const p of peers) expect(p.resyncs, p.peerId).toBe(0)
    for (const cid of [testCid(3), testCid(5), testCid(19)]) {
      expect(await getJson(c, `/api/meta/${cid}`)).toEqual(await getJson(others[0], `/api/meta/${cid}`))
    }
    expect((await getJson(c, `/api/meta/${testCid(3)}`)).status).toBe(404)
  })

  it('with its peers\' logs trimmed meanwhile, it takes a full resync and still converges', async () => {
    const { c, others } = await partitionRun({ streamRetention: 30, trimEvery: 5 })
    const peers = (await getJson(c, '/api/mesh')).body.peers
    expect(peers.reduce((n: number, p: any) => n + p.resyncs, 0)).toBeGreaterThan(0)
    for (const cid of [testCid(3), testCid(5), testCid(19)]) {
      expect(await getJson(c, `/api/meta/${cid}`)).toEqual(await getJson(others[1], `/api/meta/${cid}`))
    }
  })
})
