/**
 * A peer that holds the swarm key but does not run meta-core: a bare libp2p
 * node with gossipsub on the mesh topic, publishing whatever bytes a test
 * gives it (properly signed with its own key, as gossipsub requires).
 */
import '../../src/mesh/libp2p/polyfill.js'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { preSharedKey } from '@libp2p/pnet'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { waitFor } from '../../src/common/index.js'
import { readSwarmKey } from '../../src/mesh/libp2p/index.js'

export interface RoguePeer {
  node: Libp2p<{ pubsub: GossipSub }>
  peerId: string
  /** Publishes raw bytes on the mesh topic. */
  publish: (bytes: Uint8Array) => Promise<void>
  dial: (addr: string) => Promise<void>
  stop: () => Promise<void>
}

export async function startRogue (swarmKeyFile: string): Promise<RoguePeer> {
  const key = readSwarmKey(swarmKeyFile)
  const topic = `/meta-core/mesh/${key.meshId}/1`
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: preSharedKey({ psk: key.psk }),
    services: { identify: identify(), pubsub: gossipsub({ allowPublishToZeroTopicPeers: false, fallbackToFloodsub: false }) }
  })
  node.services.pubsub.subscribe(topic)
  return {
    node,
    peerId: node.peerId.toString(),
    publish: async (bytes) => {
      await waitFor(() => node.services.pubsub.getSubscribers(topic).length > 0, { timeoutMs: 10_000, what: 'a subscriber of the mesh topic' })
      await node.services.pubsub.publish(topic, bytes)
    },
    dial: async (addr) => { await node.dial(multiaddr(addr)) },
    stop: async () => { await node.stop() }
  }
}
