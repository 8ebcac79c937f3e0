/**
 * A peer that holds the swarm key but does not run meta-core: a bare libp2p
 * node with gossipsub on the mesh topic, publishing whatever bytes a test
 * gives it (properly signed with its own key, as gossipsub requires).
 */
import '../../src/mesh/libp2p/polyfill.js'
import { randomBytes } from 'node:crypto'
import { generateKeyPair, publicKeyToProtobuf } from '@libp2p/crypto/keys'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { RPC } from '@libp2p/gossipsub/message'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
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
  /**
   * Sends `frame(signer)` on the mesh topic to every peer connected now,
   * signed by a fresh key (`signer` is its peer id), as gossipsub's own
   * publish would but with anyone's key: what a member can mint at will.
   * Returns how many peers it went to.
   */
  publishAs: (frame: (signer: string) => Uint8Array) => Promise<number>
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
    publishAs: async (frame) => {
      const key = await generateKeyPair('Ed25519')
      const signer = peerIdFromPrivateKey(key)
      const msg: RPC.Message = { from: signer.toMultihash().bytes, data: frame(signer.toString()), seqno: randomBytes(8), topic }
      msg.signature = await key.sign(Buffer.concat([Buffer.from('libp2p-pubsub:'), RPC.Message.encode(msg)]))
      msg.key = publicKeyToProtobuf(key.publicKey)
      // The router's own send: it frames the RPC on the stream gossipsub keeps to each peer.
      const router = node.services.pubsub as unknown as { sendRpc: (id: string, rpc: RPC) => boolean }
      let sent = 0
      for (const p of node.services.pubsub.getPeers()) if (router.sendRpc(p.toString(), { subscriptions: [], messages: [msg] })) sent++
      return sent
    },
    dial: async (addr) => { await node.dial(multiaddr(addr)) },
    stop: async () => { await node.stop() }
  }
}
