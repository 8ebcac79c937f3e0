/**
 * A member met through a relay that turns out to be reachable directly
 * moves to a direct connection (src/mesh/libp2p/direct-upgrade.ts), and
 * replication carries on over it: three real nodes over TCP on 127.0.0.1
 * (a relay, and A, which knows B only by B's relayed address at first).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, silentLogger, waitFor } from '../../src/common/index.js'
import { KvStore } from '../../src/kv/index.js'
import { Libp2pMesh, newSwarmKeyText, parseSwarmKey, prepareIdentity } from '../../src/mesh/libp2p/index.js'
import type { ReachInit } from '../../src/mesh/libp2p/reach.js'
import { RecordStore } from '../../src/records/index.js'
import { testCid } from '../helpers/record-ops.js'

const swarmKey = parseSwarmKey(newSwarmKeyText())!
const running: Array<{ mesh: Libp2pMesh, kv: KvStore, records: RecordStore }> = []
afterEach(async () => {
  for (const n of running.splice(0)) {
    await n.mesh.stop()
    n.kv.close()
  }
})

async function start (name: string, reach: Partial<ReachInit>, bootstrap: string[] = [], lines?: string[]): Promise<{ mesh: Libp2pMesh,
  records: RecordStore }> {
  const identity = (await prepareIdentity(`/nonexistent/${Math.random()}`)).identity
  const kv = new KvStore({ path: ':memory:', backgroundCheckpoint: false })
  const records = new RecordStore(kv, { nodeId: identity.peerId })
  const logger = lines === undefined ? silentLogger : createLogger({ level: 'info', name, write: (l) => { lines.push(l) } })
  const mesh = new Libp2pMesh({ records, logger }, { identity, swarmKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap, reach, nodeName: name,
    options: { antiEntropyMs: 1_000 } })
  await mesh.start()
  running.push({ mesh, kv, records })
  return { mesh, records }
}

describe('a member met through a relay', () => {
  it('is moved to a direct connection once its direct address answers, and replication carries on over it', async () => {
    const relay = await start('relay', { relay: 'on' })
    const lines: string[] = []
    const b = await start('b', {}, [relay.mesh.status().self.addrs[0]], lines)
    await waitFor(() => (b.mesh.status().reach?.relayed.length ?? 0) > 0, { timeoutMs: 10_000, what: 'B\'s reservation on the relay' })
    const circuit = b.mesh.status().reach!.relayed[0]
    // A is told of B by its relayed address alone: its first connection to B runs through the relay.
    const a = await start('a', {}, [circuit], lines)
    const route = (): string | null | undefined => a.mesh.status().peers.find(p => p.peerId === b.mesh.peerId && p.connected)?.route
    await waitFor(() => route() !== undefined, { timeoutMs: 10_000, what: 'A connected to B' })
    // Each learns the other's direct address with identify; the first to dial it starts over on the direct connection alone.
    await waitFor(() => lines.some(l => l.includes('moved to a direct connection')), { timeoutMs: 20_000, what: 'A or B moved to a direct connection' })
    // One connection, the direct one: a relayed one left beside it would carry gossip until the relay went away.
    await waitFor(() => route() === 'direct' && a.mesh.status().peers.find(p => p.peerId === b.mesh.peerId)?.addrs.length === 1,
      { timeoutMs: 10_000, what: 'A on one direct connection to B' })
    const seen = a.mesh.status().peers.find(p => p.peerId === b.mesh.peerId)!
    expect(seen).toMatchObject({ connected: true, route: 'direct', relay: null })
    expect(seen.addrs[0]).not.toContain('/p2p-circuit')
    await b.records.mergeFlat(testCid(7), { title: 'after the move' })
    await waitFor(() => a.records.getFlat(testCid(7))?.title === 'after the move', { timeoutMs: 10_000, what: 'B\'s write on A over the direct connection' })
  }, 45_000)
})
