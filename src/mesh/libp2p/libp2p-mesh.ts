/**
 * The libp2p runtime of the mesh core: TCP, noise, yamux, a private network
 * (pnet, private-network.ts) from the swarm key, identify and ping,
 * gossipsub with signed messages (StrictSign) for push frames on one topic
 * per mesh, and the pull protocol over streams. This file and its siblings
 * are the only place that imports libp2p.
 *
 * What it guarantees the core (runtime.ts): `onGossip`'s signer is the
 * verified `from` of a StrictSign message; `handleRequest`'s peer is the
 * noise-authenticated remote; `peerConnected`/`peerDisconnected` follow
 * libp2p's peer:connect/peer:disconnect.
 */
import './polyfill.js'
import { gossipsub, TopicValidatorResult, type GossipSub, type GossipsubOpts } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { memory } from '@libp2p/memory'
import { noise } from '@libp2p/noise'
import { peerIdFromString } from '@libp2p/peer-id'
import { ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { silentLogger, type Logger } from '../../common/index.js'
import type { MeshRecords } from '../replica-store.js'
import { MeshCore, meshOptions, type GossipVerdict, type MeshOptions, type MeshRuntime, type StoreDigest } from '../protocol/index.js'
import { RecordReplica } from '../replica-store.js'
import type { MeshService, MeshView } from '../service.js'
import type { NodeIdentity } from './identity.js'
import { delayedLink } from './delayed-link.js'
import { PeerDialer } from './peer-dialer.js'
import { privateNetwork } from './private-network.js'
import { handlePulls, requestPull } from './pull-protocol.js'
import { rpcCounter, type RpcCounts } from './rpc-counters.js'
import type { SwarmKey } from './swarm-key.js'

export interface Libp2pMeshInit {
  identity: NodeIdentity
  swarmKey: SwarmKey
  /** Multiaddrs to listen on (port 0 binds a free port). */
  listen: readonly string[]
  /** Multiaddrs kept connected, ending in /p2p/<peerId> or not (the peer id is then learned when connecting). */
  bootstrap: readonly string[]
  /** Protocol tunables (anti-entropy interval, limits, blocked peers…). */
  options?: Partial<MeshOptions>
  /**
   * TCP (the default, and what a node uses), or libp2p's in-memory transport
   * for many nodes in one process (listen addresses `/memory/<name>`), with
   * `latencyMs` of one-way delay per buffer: `pipelined` (delayed-link.ts,
   * as on a real link) or `serial` (the transport's own option: one buffer
   * per delay per direction). For tests and the simulator's real-stack mode.
   */
  transport?: { kind: 'tcp' } | { kind: 'memory', latencyMs: number, link?: 'pipelined' | 'serial' }
  /** Gossipsub parameters over the library's defaults (the simulator's profiles; a node sets none). */
  gossip?: GossipParams
  /** Count the gossipsub RPCs this node sends (`rpcCounts()`), through gossipsub's metrics hook. */
  countRpcs?: boolean
}

/** The gossipsub parameters a simulation profile may set. */
export type GossipParams = Partial<Pick<GossipsubOpts, 'D' | 'Dlo' | 'Dhi' | 'Dout' | 'Dlazy' | 'heartbeatInterval' | 'floodPublish' | 'idontwantMinDataSize'>>

/**
 * pnet's nonce exchange must finish within 1 s by default; dozens of nodes in
 * one process on a shared machine, with simulated link delay, can take
 * longer to get to it.
 */
const PNET_TIMEOUT_IN_PROCESS_MS = 10_000

const VERDICT: Record<GossipVerdict, TopicValidatorResult> = {
  accept: TopicValidatorResult.Accept,
  reject: TopicValidatorResult.Reject,
  ignore: TopicValidatorResult.Ignore
}

export class Libp2pMesh implements MeshService {
  readonly peerId: string
  private readonly replica: RecordReplica
  private readonly log: Logger
  private readonly opts: MeshOptions
  private readonly topic: string
  private node: Libp2p<{ pubsub: GossipSub }> | undefined
  private core: MeshCore | undefined
  private dialer: PeerDialer | undefined
  private starting: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly counter: ReturnType<typeof rpcCounter> | undefined

  constructor (components: { records: MeshRecords, logger?: Logger }, private readonly init: Libp2pMeshInit) {
    if (components.records.nodeId !== init.identity.peerId) {
      throw new Error('the record store must write versions with the mesh identity (open it with nodeId = the peer id)')
    }
    this.peerId = init.identity.peerId
    this.replica = new RecordReplica(components.records)
    this.log = components.logger ?? silentLogger
    this.opts = meshOptions(init.options)
    this.topic = `/meta-core/mesh/${init.swarmKey.meshId}/1`
    this.counter = init.countRpcs === true ? rpcCounter() : undefined
  }

  async start (): Promise<void> {
    this.starting ??= this.doStart()
    await this.starting
  }

  private async doStart (): Promise<void> {
    const blocked = new Set(this.opts.blockedPeers)
    const t = this.init.transport
    const node = await createLibp2p({
      privateKey: this.init.identity.privateKey,
      addresses: { listen: [...this.init.listen] },
      transports: [t?.kind === 'memory' ? memory({ latency: t.link === 'serial' ? t.latencyMs : 0 }) : tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionProtector: t?.kind === 'memory' && t.link !== 'serial' && t.latencyMs > 0
        ? delayedLink(privateNetwork({ secret: this.init.swarmKey.secret, timeoutMs: PNET_TIMEOUT_IN_PROCESS_MS }), t.latencyMs)
        : privateNetwork({ secret: this.init.swarmKey.secret }),
      connectionGater: {
        denyDialPeer: (p) => blocked.has(p.toString()),
        denyInboundEncryptedConnection: (p) => blocked.has(p.toString()),
        denyOutboundEncryptedConnection: (p) => blocked.has(p.toString())
      },
      services: {
        identify: identify(),
        ping: ping(),
        pubsub: gossipsub({
          // Nobody subscribed yet is not an error for us: the frame's sequence number is skipped and peers pull.
          allowPublishToZeroTopicPeers: true,
          fallbackToFloodsub: false,
          emitSelf: false,
          ...this.init.gossip,
          ...(this.counter !== undefined ? { metricsRegister: this.counter.register, metricsTopicStrToLabel: new Map([[this.topic, 'mesh']]) } : {})
        })
      }
    })
    this.node = node
    const runtime: MeshRuntime = {
      now: () => Date.now(),
      monotonic: () => performance.now(),
      random: Math.random,
      schedule: (delayMs, fn) => {
        const t = setTimeout(fn, delayMs)
        t.unref()
        return () => { clearTimeout(t) }
      },
      publish: (frame) => {
        node.services.pubsub.publish(this.topic, frame).catch((err: unknown) => { this.log.debug('publish failed', { err }) }) // peers pull what a lost frame carried
      },
      request: async (peer, body, { timeoutMs }) => await requestPull(node, peerIdFromString(peer), body, timeoutMs)
    }
    const core = new MeshCore({ selfId: this.peerId, runtime, store: this.replica, options: this.opts, logger: this.log.child('core') })
    this.core = core
    await handlePulls(node, async (peer, body) => await core.handleRequest(peer, body), this.log, this.opts.requestTimeoutMs)
    node.services.pubsub.topicValidators.set(this.topic, (propagationSource, msg) => {
      // StrictSign: every message we see is signed, and gossipsub verified the signature against `from`.
      if (msg.type !== 'signed') return TopicValidatorResult.Reject
      return VERDICT[core.onGossip(msg.from.toString(), msg.data, propagationSource.toString())]
    })
    node.services.pubsub.subscribe(this.topic)
    node.addEventListener('peer:connect', (evt) => { core.peerConnected(evt.detail.toString()) })
    node.addEventListener('peer:disconnect', (evt) => { core.peerDisconnected(evt.detail.toString()) })
    await core.start()
    for (const p of node.getPeers()) core.peerConnected(p.toString())
    this.dialer = new PeerDialer(node, this.init.bootstrap.map(a => {
      const addr = multiaddr(a)
      // Without /p2p/<peerId> the peer is whoever answers with our swarm key (peer-dialer.ts).
      const id = addr.getComponents().filter(c => c.name === 'p2p').pop()?.value
      return { addr, peer: id === undefined ? undefined : peerIdFromString(id) }
    }), this.log.child('dial'))
    this.dialer.start()
    this.log.info('mesh listening', { peerId: this.peerId, addrs: node.getMultiaddrs().map(String), topic: this.topic })
  }

  /** Stops dialing, then the core (its store work finishes), then libp2p. Idempotent. */
  async stop (): Promise<void> {
    this.stopping ??= (async () => {
      await this.starting?.catch(() => {}) // a failed start leaves only what it created to stop
      this.dialer?.stop()
      try {
        await this.core?.stop()
      } finally {
        await this.node?.stop()
      }
    })()
    await this.stopping
  }

  /** Pulls from every connected peer now (tests and benchmarks). */
  async syncNow (): Promise<void> {
    await this.core?.syncNow()
  }

  status (): MeshView {
    const s = this.core?.status()
    const node = this.node
    const addrsOf = (peer: string): string[] => {
      if (node === undefined) return []
      try {
        return node.getConnections(peerIdFromString(peer)).map(c => c.remoteAddr.toString())
      } catch {
        return [] // a counter keyed by a peer id libp2p cannot parse has no connections either
      }
    }
    return {
      enabled: true,
      meshId: this.init.swarmKey.meshId,
      self: {
        peerId: this.peerId,
        addrs: node?.getMultiaddrs().map(String) ?? [],
        hlc: this.replica.clock(),
        epoch: s?.self.epoch ?? 0,
        seq: s?.self.seq ?? 0,
        framesOut: s?.self.framesOut ?? 0,
        bytesOut: s?.self.bytesOut ?? 0,
        publishFailures: s?.self.publishFailures ?? 0,
        clock: s?.self.clock ?? { inBound: true, measured: 0, outOfBound: 0, offsetMs: null, hlcAheadMs: 0, message: null }
      },
      peers: (s?.peers ?? []).map(p => ({ ...p, addrs: addrsOf(p.peerId), lastSyncAt: isoOrNull(p.lastSyncAt), caughtUpAt: isoOrNull(p.caughtUpAt) }))
    }
  }

  digest (): StoreDigest {
    return this.replica.digest()
  }

  /** Gossipsub RPCs sent so far (zeros unless created with `countRpcs`). */
  rpcCounts (): RpcCounts {
    return this.counter?.counts() ?? { rpcs: 0, bytes: 0, messages: 0 }
  }
}

function isoOrNull (ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
