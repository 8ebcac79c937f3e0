/**
 * A peer that holds the swarm key but does not run meta-core: a bare libp2p
 * node with gossipsub on the mesh topic, publishing whatever bytes a test
 * gives it (properly signed with its own key, as gossipsub requires), and,
 * when asked, answering pulls as a slow meta-core node holding a given
 * range would (`serveRange`).
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
import { silentLogger, waitFor } from '../../src/common/index.js'
import { readSwarmKey } from '../../src/mesh/libp2p/index.js'
import { agentVersionOf } from '../../src/mesh/libp2p/node-names.js'
import { handlePulls } from '../../src/mesh/libp2p/pull-protocol.js'
import { decodeMessage, encodeMessage } from '../../src/mesh/messages.js'
import type { RemoteEntry } from '../../src/records/index.js'

/**
 * A replicated range to serve: its pages in order, how many records the
 * first page says the peer holds, how long each answer takes, and what the
 * last page waits for besides (a test holding a join open while it looks).
 */
export interface ServedRange { pages: RemoteEntry[][], records: number, delayMs: number, lastPageAfter?: Promise<void> }

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
  /** A message on the mesh topic carrying `frame(signer)`, signed by a fresh key as `publishAs` does, not sent. */
  signAs: (frame: (signer: string) => Uint8Array) => Promise<RPC.Message>
  /** Sends `msg` as it is, byte for byte, to every peer connected now; returns how many peers it went to. */
  sendMessage: (msg: RPC.Message) => number
  /**
   * Answers pulls from now on as a meta-core node holding `range` would,
   * each answer `delayMs` late: a range request (`snap`) gets the page it
   * asks for (the first one saying how many records the peer holds), a
   * change-log pull nothing past the range's head, a reconciliation "equal".
   * A fresh node copies the range from it on the bulk path, a page per
   * `delayMs`, the last one once `lastPageAfter` settles: a join that
   * lasts as long as the test needs.
   */
  serveRange: (range: ServedRange) => Promise<void>
  dial: (addr: string) => Promise<void>
  stop: () => Promise<void>
}

/**
 * `inbound: false` refuses every connection the rogue did not dial itself:
 * members that learn its address from the member exchange cannot reach it,
 * so what it sends reaches only the peers a test has it dial.
 */
export async function startRogue (swarmKeyFile: string, opts: { name?: string, inbound?: boolean } = {}): Promise<RoguePeer> {
  const key = readSwarmKey(swarmKeyFile)
  const topic = `/meta-core/mesh/${key.meshId}/1`
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: preSharedKey({ psk: key.psk }),
    ...(opts.name === undefined ? {} : { nodeInfo: { userAgent: agentVersionOf(opts.name) } }),
    ...(opts.inbound === false ? { connectionGater: { denyInboundConnection: () => true } } : {}),
    services: { identify: identify(), pubsub: gossipsub({ allowPublishToZeroTopicPeers: false, fallbackToFloodsub: false }) }
  })
  node.services.pubsub.subscribe(topic)
  const signAs = async (frame: (signer: string) => Uint8Array): Promise<RPC.Message> => {
    const key = await generateKeyPair('Ed25519')
    const signer = peerIdFromPrivateKey(key)
    const msg: RPC.Message = { from: signer.toMultihash().bytes, data: frame(signer.toString()), seqno: randomBytes(8), topic }
    msg.signature = await key.sign(Buffer.concat([Buffer.from('libp2p-pubsub:'), RPC.Message.encode(msg)]))
    msg.key = publicKeyToProtobuf(key.publicKey)
    return msg
  }
  const sendMessage = (msg: RPC.Message): number => {
    // The router's own send: it frames the RPC on the stream gossipsub keeps to each peer.
    const router = node.services.pubsub as unknown as { sendRpc: (id: string, rpc: RPC) => boolean }
    let sent = 0
    for (const p of node.services.pubsub.getPeers()) if (router.sendRpc(p.toString(), { subscriptions: [], messages: [msg] })) sent++
    return sent
  }
  return {
    node,
    peerId: node.peerId.toString(),
    publish: async (bytes) => {
      await waitFor(() => node.services.pubsub.getSubscribers(topic).length > 0, { timeoutMs: 10_000, what: 'a subscriber of the mesh topic' })
      await node.services.pubsub.publish(topic, bytes)
    },
    publishAs: async (frame) => sendMessage(await signAs(frame)),
    signAs,
    sendMessage,
    serveRange: async ({ pages, records, delayMs, lastPageAfter }) => {
      const log = 'rogue-log'
      const head = 'rogue-head'
      await handlePulls(node, async (_peer, body) => {
        const req = decodeMessage(body)
        // The slow peer `delayMs` asks for: the fault this fake plays, not a wait for anything.
        await new Promise(resolve => setTimeout(resolve, delayMs))
        if (req.t === 'snap') {
          const i = req.after === null ? 0 : Number(req.after.slice(1))
          const next = i + 1 < pages.length ? `p${i + 1}` : null
          if (next === null) await lastPageAfter
          return encodeMessage({ t: 'snapshot', log, entries: pages[i] ?? [], next, head, ...(i === 0 ? { records } : {}) })
        }
        if (req.t === 'pull') return encodeMessage({ t: 'changes', log, entries: [], next: head, head, gap: false })
        if (req.t === 'recon') return encodeMessage({ t: 'recond', log, head, ranges: [], diff: [], taken: req.ranges.length })
        return encodeMessage({ t: 'error', code: 'bad-request', message: `${req.t} is not served here` })
      }, silentLogger, 60_000)
    },
    dial: async (addr) => { await node.dial(multiaddr(addr)) },
    stop: async () => { await node.stop() }
  }
}
