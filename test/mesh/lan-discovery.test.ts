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
import { silentLogger, waitFor } from '../../src/common/index.js'
import { LanDiscovery, mdnsServiceName } from '../../src/mesh/libp2p/lan-discovery.js'
import { privateNetwork } from '../../src/mesh/libp2p/private-network.js'

const nodes: Libp2p[] = []
afterEach(async () => { await Promise.all(nodes.splice(0).map(async n => { await n.stop() })) })

async function node (secret: Uint8Array, inbound?: () => void): Promise<Libp2p> {
  const n = await createLibp2p({
    privateKey: await generateKeyPair('Ed25519'),
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: privateNetwork({ secret }),
    connectionGater: { denyInboundConnection: () => { inbound?.(); return false } },
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
    const attempts: number[] = []
    const stranger = await node(randomBytes(32), () => { attempts.push(performance.now()) })
    const found = new EventTarget() as unknown as ConstructorParameters<typeof LanDiscovery>[1]
    const lan = new LanDiscovery(a, found, new Set(), silentLogger, { firstRetryMs: 1_500, dialable: () => true })
    lan.start()
    const announce = (n: Libp2p): void => { (found as unknown as EventTarget).dispatchEvent(new CustomEvent<PeerInfo>('peer',
      { detail: { id: n.peerId, multiaddrs: n.getMultiaddrs().map(m => m.decapsulateCode(421)) } })) }

    announce(member)
    await waitFor(() => a.getConnections(member.peerId).length > 0, { timeoutMs: 10_000, what: 'the member dialed' })
    expect(lan.onLan(member.peerId.toString())).toBe(true)

    // mDNS announces every 10 s, and answers every query: here ten announcements in a second.
    for (let i = 0; i < 10; i++) {
      announce(stranger)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    await waitFor(() => attempts.length >= 1, { timeoutMs: 5_000, what: 'the stranger dialed once' })
    expect(attempts).toHaveLength(1)
    expect(a.getConnections(stranger.peerId)).toEqual([])
    // Announced on and on: the next dial waits for the backoff (1.5 s from the failed dial), the one after it twice that.
    for (let i = 0; i < 60 && attempts.length < 2; i++) {
      announce(stranger)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    expect(attempts).toHaveLength(2)
    expect(attempts[1] - attempts[0]).toBeGreaterThanOrEqual(1_500)
    for (let i = 0; i < 15; i++) {
      announce(stranger)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    expect(attempts).toHaveLength(2)
    lan.stop()
  }, 30_000)

  it('names the mDNS service after the mesh id, within DNS-SD\'s 15 characters', () => {
    expect(mdnsServiceName('8d2d10bd1d52b0f3')).toBe('_mc-8d2d10bd1d52._udp.local')
    expect(mdnsServiceName('8d2d10bd1d52b0f3').split('.')[0].length - 1).toBeLessThanOrEqual(15)
  })
})
