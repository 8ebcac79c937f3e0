/**
 * What the node does with peers mDNS finds (src/mesh/libp2p/lan-discovery.ts),
 * on real libp2p nodes over TCP on 127.0.0.1 with the private network; the
 * announcements themselves are given by the test (mDNS never runs on the
 * machine's own network in tests: test/e2e/homes-netns.test.ts runs it in
 * network namespaces). A member found is dialed and marked as found on the
 * LAN; a node that answers under the mesh's name but holds another swarm
 * key is not dialed again at every announcement, only with backoff.
 */
import { randomBytes } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { identify } from '@libp2p/identify'
import type { PeerInfo } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { createLibp2p, type Libp2p } from 'libp2p'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor } from '../../src/common/index.js'
import { LanDiscovery, mdnsServiceName } from '../../src/mesh/libp2p/lan-discovery.js'
import { privateNetwork } from '../../src/mesh/libp2p/private-network.js'

const nodes: Libp2p[] = []
afterEach(async () => { await Promise.all(nodes.splice(0).map(async n => { await n.stop() })) })

async function node (secret: Uint8Array): Promise<Libp2p> {
  const n = await createLibp2p({
    privateKey: await generateKeyPair('Ed25519'),
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: privateNetwork({ secret }),
    services: { identify: identify() }
  })
  nodes.push(n)
  return n
}

describe('peers found on the LAN', () => {
  it('dials a member found and marks it, and a node of another mesh only with backoff, not at every announcement', async () => {
    const ours = randomBytes(32)
    const a = await node(ours)
    const member = await node(ours)
    const stranger = await node(randomBytes(32))
    // A's dials, counted as A makes them (the decision to dial is taken as an announcement arrives).
    let dials = 0
    const dial = a.dial.bind(a)
    a.dial = async (...args: Parameters<Libp2p['dial']>) => { dials++; return await dial(...args) }
    // The backoff's clock, moved by the test; a failed dial is known by its log line.
    let now = 1_000_000
    const failures: string[] = []
    const log = createLogger({ level: 'debug', write: l => { if (l.includes('cannot connect to a node found on the LAN')) failures.push(l) } })
    const found = new EventTarget() as unknown as ConstructorParameters<typeof LanDiscovery>[1]
    const lan = new LanDiscovery(a, found, new Set(), log, { firstRetryMs: 1_500, dialable: () => true, now: () => now })
    lan.start()
    const announce = (n: Libp2p): void => { (found as unknown as EventTarget).dispatchEvent(new CustomEvent<PeerInfo>('peer',
      { detail: { id: n.peerId, multiaddrs: n.getMultiaddrs().map(m => m.decapsulateCode(421)) } })) }

    announce(member)
    await waitFor(() => a.getConnections(member.peerId).length > 0, { timeoutMs: 10_000, what: 'the member dialed' })
    expect(lan.onLan(member.peerId.toString())).toBe(true)
    expect(dials).toBe(1)

    // mDNS announces every 10 s, and answers every query: here ten announcements while the first dial runs.
    for (let i = 0; i < 10; i++) announce(stranger)
    expect(dials).toBe(2)
    await waitFor(() => failures.length >= 1, { timeoutMs: 10_000, what: 'the stranger\'s dial to fail' })
    expect(a.getConnections(stranger.peerId)).toEqual([])
    // Within the backoff (`ms` from the failed dial) announcements are not dialed; past it the next one is, and fails.
    const backoff = async (ms: number, dialsBefore: number, failed: number): Promise<void> => {
      now += ms - 1
      announce(stranger)
      expect(dials).toBe(dialsBefore)
      now += 1
      announce(stranger)
      expect(dials).toBe(dialsBefore + 1)
      await waitFor(() => failures.length >= failed, { timeoutMs: 10_000, what: `the stranger's dial ${failed} to fail` })
    }
    await backoff(1_500, 2, 2)
    await backoff(3_000, 3, 3) // failed again: the wait doubles
    lan.stop()
  }, 30_000)

  it('names the mDNS service after the mesh id, within DNS-SD\'s 15 characters', () => {
    expect(mdnsServiceName('8d2d10bd1d52b0f3')).toBe('_mc-8d2d10bd1d52._udp.local')
    expect(mdnsServiceName('8d2d10bd1d52b0f3').split('.')[0].length - 1).toBeLessThanOrEqual(15)
  })
})
