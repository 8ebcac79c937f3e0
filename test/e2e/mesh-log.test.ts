/**
 * The mesh's log at `info`: a line when a peer connects, when a full resync
 * from it starts, when the node has caught up with it and when it drops,
 * each once and with the peer's id and address; a bootstrap peer that
 * cannot be reached (another swarm key, or nothing listening) is warned
 * about at once and reminded of while it lasts, never redialed in silence.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor, type Logger } from '../../src/common/index.js'
import { Libp2pMesh, parseSwarmKey, prepareIdentity } from '../../src/mesh/libp2p/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { freePort } from '../helpers/compose.js'
import { testCid } from '../helpers/record-ops.js'
import { meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected } from '../helpers/mesh-nodes.js'

const state = meshTestState()
const extra: Array<{ stop: () => Promise<void> }> = []
afterEach(async () => {
  for (const x of extra.splice(0)) await x.stop()
  await state.cleanup()
})

function captured (): { logger: Logger, lines: string[] } {
  const lines: string[] = []
  return { logger: createLogger({ level: 'info', name: 'meta-core', write: (l) => { lines.push(l) } }), lines }
}

const matching = (lines: string[], re: RegExp): string[] => lines.filter(l => re.test(l))

describe('mesh log lines', () => {
  it('says once when a peer connects, is resynced from, is caught up with and drops, with its id and address', async () => {
    const key = swarmKeyIn(state.dir())
    const a = await startMeshNode({ dir: path.join(state.dir(), 'a'), swarmKey: key })
    state.nodes.push(a)
    for (let i = 0; i < 20; i++) await send(a, 'PATCH', `/meta/${testCid(i)}`, { title: `t${i}` })
    const log = captured()
    const b = await startMeshNode({ dir: path.join(state.dir(), 'b'), swarmKey: key, bootstrap: [p2pAddr(a)], logger: log.logger,
      extraFlags: ['--log-level', 'info'] })
    state.nodes.push(b)
    await waitConnected([b], 1)
    const peer = a.mesh.peerId
    const port = p2pAddr(a).split('/')[4]
    const line = (what: string): RegExp => new RegExp(`INFO  \\[meta-core:mesh:peers\\] ${what} .*peer="${peer}".*addr="/ip4/127\\.0\\.0\\.1/tcp/`)
    await waitFor(() => matching(log.lines, line('caught up with peer')).length > 0, { timeoutMs: 10_000, what: `the caught-up line (log: ${log.lines.join('\n')})` })
    expect(matching(log.lines, line('peer connected'))).toHaveLength(1)
    expect(matching(log.lines, line('peer connected'))[0]).toContain(`/tcp/${port}`)
    expect(matching(log.lines, line('full resync from peer started'))).toHaveLength(1)
    // More rounds and writes change nothing: each line is said once per change of state.
    for (let i = 20; i < 25; i++) await send(a, 'PATCH', `/meta/${testCid(i)}`, { title: `t${i}` })
    const after = new Date().toISOString()
    await waitFor(() => (b.mesh.status().peers.find(p => p.peerId === peer)?.caughtUpAt ?? '') > after,
      { timeoutMs: 10_000, what: 'a later pull round to catch up again' })
    expect(matching(log.lines, line('caught up with peer'))).toHaveLength(1)

    await a.stop()
    state.nodes.splice(state.nodes.indexOf(a), 1)
    await waitFor(() => matching(log.lines, line('peer disconnected')).length > 0, { timeoutMs: 10_000, what: 'the disconnected line' })
    expect(matching(log.lines, line('peer connected'))).toHaveLength(1)
  })

  it('warns about a bootstrap peer with another swarm key, and again while it stays unreachable', async () => {
    const dir = state.dir()
    const store = (name: string, nodeId: string): NodeStore => {
      const s = openNodeStore({ path: path.join(dir, `${name}.db`), nodeId, backgroundCheckpoint: false })
      extra.push({ stop: async () => { s.close() } })
      return s
    }
    const mesh = async (name: string, hex: string, bootstrap: string[], logger?: Logger): Promise<Libp2pMesh> => {
      const { identity } = await prepareIdentity(path.join(dir, `${name}.key`))
      const m = new Libp2pMesh({ records: store(name, identity.peerId).records, logger }, {
        identity,
        swarmKey: parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${hex.repeat(32)}`)!,
        listen: ['/ip4/127.0.0.1/tcp/0'],
        bootstrap,
        unreachableRemindMs: 300
      })
      extra.unshift({ stop: async () => { await m.stop() } }) // meshes stop before their stores close
      await m.start()
      return m
    }
    const a = await mesh('a', 'ab', [])
    const log = captured()
    const free = await freePort()
    await mesh('c', 'cd', [a.status().self.addrs[0], `/ip4/127.0.0.1/tcp/${free}`], log.logger)
    const wrongKey = new RegExp(`WARN  \\[meta-core:dial\\] (still )?cannot reach peer .*addr="${a.status().self.addrs[0]}".*looksLike="not in this mesh`)
    await waitFor(() => matching(log.lines, wrongKey).length >= 2, { timeoutMs: 15_000, what: `a warning and a reminder (log: ${log.lines.join('\n')})` })
    expect(matching(log.lines, wrongKey)[0]).toContain('cannot reach peer')
    expect(matching(log.lines, wrongKey)[1]).toMatch(/still cannot reach peer .*attempt=[2-9]/)
    await waitFor(() => matching(log.lines, new RegExp(`cannot reach peer .*tcp/${free}".*looksLike="down`)).length > 0, { timeoutMs: 10_000, what: 'the refused address said as down' })
  })
})
