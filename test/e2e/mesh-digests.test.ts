/**
 * `GET /api/mesh/digests`: a node asks its connected peers for their
 * digests over the mesh and compares them with its own, with real nodes on
 * 127.0.0.1: a peer that holds the same replica agrees, one that differs is
 * marked, and a peer that runs no meta-core (the swarm key, nothing else)
 * is shown without an answer instead of failing the route.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger, waitFor } from '../../src/common/index.js'
import { parseConfig, startNode } from '../../src/node/index.js'
import { startRogue } from '../helpers/rogue-peer.js'
import { testCid } from '../helpers/record-ops.js'
import { getJson, meshTestState, p2pAddr, send, startNamedPair, waitConverged } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(async () => { await state.cleanup() })

interface Digests {
  self: { peerId: string, name: string | null, digest: string, keys: number }
  peers: Array<{ peerId: string, name: string | null, digest: string | null, keys: number | null, agrees: boolean | null, error?: string }>
}

describe('peer digests over the mesh', () => {
  it('compares every connected peer\'s digest with this node\'s, and marks one that gives none', async () => {
    const { a, b, key } = await startNamedPair(state, ['a-node', 'b-node'])
    expect((await send(a, 'PATCH', `/meta/${testCid(4701)}`, { title: 'Blue River' })).status).toBe(200)
    const converged = await waitConverged([a, b])

    const r = await getJson<Digests>(a, '/api/mesh/digests')
    expect(r.status).toBe(200)
    expect(r.body.self).toMatchObject({ peerId: a.mesh.peerId, name: 'a-node', digest: converged })
    expect(r.body.peers).toEqual([{ peerId: b.mesh.peerId, name: 'b-node', digest: converged, keys: r.body.self.keys, agrees: true }])

    // A later write on B: as soon as both hold it, A hears B's new digest (a served digest is reused only while B's store is unchanged).
    expect((await send(b, 'PATCH', `/meta/${testCid(4702)}`, { title: 'Red Hill' })).status).toBe(200)
    const again = await waitConverged([a, b])
    expect(again).not.toBe(converged)
    expect((await getJson<Digests>(a, '/api/mesh/digests')).body.peers[0]).toMatchObject({ digest: again, agrees: true })

    const rogue = await startRogue(key)
    try {
      await rogue.dial(p2pAddr(a))
      await waitFor(() => a.mesh.status().peers.some(p => p.peerId === rogue.peerId && p.connected), { timeoutMs: 10_000, what: 'A to see the rogue peer' })
      const withRogue = (await getJson<Digests>(a, '/api/mesh/digests')).body
      const row = withRogue.peers.find(p => p.peerId === rogue.peerId)
      expect(row).toMatchObject({ digest: null, keys: null, agrees: null })
      expect(row?.error).toMatch(/does not answer digests|no answer/)
      expect(withRogue.peers.find(p => p.peerId === b.mesh.peerId)?.agrees).toBe(true)
    } finally {
      await rogue.stop()
    }
  })

  it('answers with no peers on a standalone node', async () => {
    const dir = path.join(state.dir(), 'solo')
    const parsed = await parseConfig(['--port', '0', '--db-path', path.join(dir, 'm.db'), '--files-path', path.join(dir, 'files'),
      '--enable-file-watcher=false', '--log-level', 'silent'], {})
    if (parsed.kind !== 'config') throw new Error('expected a configuration')
    const n = await startNode(parsed.config, { logger: silentLogger })
    state.nodes.push(n)
    const r = await getJson<Digests>(n, '/api/mesh/digests')
    expect(r.status).toBe(200)
    expect(r.body.peers).toEqual([])
    expect(r.body.self.digest).toMatch(/^[0-9a-f]{64}$/)
  })
})
