/**
 * Node names (META_CORE_NODE_NAME, the host name by default): announced to
 * peers over identify and shown beside the peer id in /api/mesh and
 * `meta-core status`, with two real nodes on 127.0.0.1.
 */
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { agentVersionOf, nodeNameOf } from '../../src/mesh/libp2p/node-names.js'
import { parseConfig } from '../../src/node/index.js'
import { fetchStatus, formatStatus } from '../../src/node/status-command.js'
import { getJson, meshTestState, startNamedPair } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(async () => { await state.cleanup() })

describe('node names', () => {
  it('are exchanged with peers and shown beside the id in /api/mesh and meta-core status', async () => {
    const { a, b } = await startNamedPair(state, ['living-room', 'Attic ☂ shelf'])
    type View = { self: { peerId: string, name: string | null }, peers: Array<{ peerId: string, name: string | null }> }
    await waitFor(async () => {
      const [va, vb] = await Promise.all([getJson<View>(a, '/api/mesh'), getJson<View>(b, '/api/mesh')])
      return va.body.peers[0]?.name === 'Attic ☂ shelf' && vb.body.peers[0]?.name === 'living-room'
    }, { timeoutMs: 10_000, what: 'each node to hear the other\'s name', intervalMs: 50 })
    const va = (await getJson<View>(a, '/api/mesh')).body
    expect(va.self).toMatchObject({ peerId: a.mesh.peerId, name: 'living-room' })
    expect(va.peers[0].peerId).toBe(b.mesh.peerId)

    const table = formatStatus(await fetchStatus(a.url, undefined, 5_000))
    expect(table).toContain(`node id  ${a.mesh.peerId}  (living-room)`)
    expect(table).toMatch(/^NAME\s+PEER\s+CONNECTION/m)
    expect(table.split('\n').find(l => l.includes(b.mesh.peerId))).toMatch(/^Attic ☂ shelf\s+12D3KooW/)
  })

  it('default to the host name; a name with control characters is refused at start', async () => {
    const dbArgs = ['--db-path', path.join(state.dir(), 'x.db')]
    const parsed = await parseConfig(dbArgs, {})
    expect(parsed.kind === 'config' && parsed.config.nodeName).toBe(os.hostname().slice(0, 64))
    const named = await parseConfig(dbArgs, { META_CORE_NODE_NAME: '  kitchen ' })
    expect(named.kind === 'config' && named.config.nodeName).toBe('kitchen')
    await expect(parseConfig([...dbArgs, '--node-name', 'evil\u001b[2Jname'], {})).rejects.toThrow(/META_CORE_NODE_NAME \(--node-name\)/)
    await expect(parseConfig([...dbArgs, '--node-name', 'x'.repeat(65)], {})).rejects.toThrow(/1 to 64 characters/)
  })

  it('ride in the agent version; anything else there is no name', () => {
    for (const name of ['living-room', 'Attic ☂ shelf', 'a=b c%d']) expect(nodeNameOf(agentVersionOf(name))).toBe(name)
    expect(agentVersionOf(undefined)).toBe('meta-core')
    expect(nodeNameOf('meta-core')).toBeUndefined()
    expect(nodeNameOf('js-libp2p/3.3.11 UserAgent=node/20 node=x')).toBeUndefined()
    expect(nodeNameOf('meta-core node=%1B%5B2J')).toBeUndefined()
    expect(nodeNameOf('meta-core node=%E0%A4%A')).toBeUndefined()
    expect(nodeNameOf(undefined)).toBeUndefined()
  })
})
