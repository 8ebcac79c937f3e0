/**
 * The libp2p runtime of the mesh core: TCP, noise, yamux, a private network
 * (pnet, private-network.ts) from the swarm key, identify and ping,
 * gossipsub with signed messages (StrictSign) for push frames on one topic
 * per mesh, and the pull protocol over streams. Around the core: the
 * bootstrap dialer (peer-dialer.ts), membership (membership.ts: learns the
 * members, keeps their addresses in the store's node-local keys, dials up
 * to `targetPeers` connections), the peer lines of the log (peer-log.ts)
 * and, with `reach`, how members in other homes and on the LAN reach each
 * other (reach.ts: circuit relay, announced and mapped addresses, mDNS).
 * This file and its siblings are the only place that imports libp2p.
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
import { ping, type Ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { silentLogger, type Logger } from '../../common/index.js'
import type { MeshRecords } from '../replica-store.js'
import { MeshCore, meshOptions, type GossipVerdict, type MeshOptions, type MeshRuntime, type RuntimeProbe, type StoreDigest } from '../protocol/index.js'
import { RecordReplica } from '../replica-store.js'
import { logSyncProgress } from '../sync-progress-log.js'
import { copyView, joinView, type MeshService, type MeshView } from '../service.js'
import type { ByteSource, LocalFileOpener } from '../bytes-service.js'
import { BytesProtocol, DEFAULT_BYTES_LIMITS, type BytesLimits } from './bytes-protocol.js'
import type { NodeIdentity } from './identity.js'
import { memberAddrProblem, multiaddrProblem } from './addresses.js'
import { DEFAULT_REACH, Reach, type ReachInit } from './reach.js'
import { delayedLink, type LinkControl } from './delayed-link.js'
import { fastFrameId } from './gossip-dedup.js'
import { meshScoring } from './gossip-scoring.js'
import { gossipDout, type GossipDegree } from '../gossip-degree.js'
import { Membership } from './membership.js'
import { PeerEvidence } from './peer-evidence.js'
import { PeerLog } from './peer-log.js'
import { PeerDialer } from './peer-dialer.js'
import { privateNetwork } from './private-network.js'
import { handleDigests, requestDigest, type PeerDigestResult } from './digest-protocol.js'
import { agentVersionOf, PeerNames } from './node-names.js'
import { FramePublisher } from './frame-publisher.js'
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
   * per delay per direction). With `control` (pipelined only), each buffer's
   * delay is the control's (regions, loss, partitions: the simulator's
   * real-stack mode). For tests and the simulator's real-stack mode.
   */
  transport?: { kind: 'tcp' } | { kind: 'memory', latencyMs: number, link?: 'pipelined' | 'serial', control?: LinkControl }
  /** The gossipsub mesh degree (node options META_CORE_GOSSIP_D/_DLO/_DHI); Dout follows it (gossip-degree.ts). Default: gossipsub's. */
  degree?: GossipDegree
  /** Raw gossipsub parameters over the degree (the simulator's model-only profiles; a node sets none). */
  gossip?: GossipParams
  /** Count the gossipsub RPCs this node sends (`rpcCounts()`), through gossipsub's metrics hook. */
  countRpcs?: boolean
  /** False: a full resync's pages never take the bulk path (benchmarks measure the page path against it). Default true. */
  bulkJoin?: boolean
  /** This node's name for people, announced to peers (node-names.ts). */
  nodeName?: string
  /** This node's own copies, for serving bytes to peers (bytes-service.ts); without it every byte request is `not-found`. */
  localFiles?: LocalFileOpener
  /** Per-peer limits of the byte protocol over DEFAULT_BYTES_LIMITS. */
  bytesLimits?: Partial<BytesLimits>
  /** Connections to keep, dialing learned members (membership.ts); 0 dials only `bootstrap`. Default DEFAULT_TARGET_PEERS. */
  targetPeers?: number
  /**
   * Region-aware dialing (membership.ts, peer-distance.ts): connections kept to far members by round-trip time, the rest near; 0 (default):
   * members at random.
   */
  crossRegionPeers?: number
  /** How often a bootstrap peer that stays unreachable is warned about again (default 10 min; tests set less). */
  unreachableRemindMs?: number
  /** Tests: a hold on the runtime the core is given and on what libp2p drives (runtime.ts, the runtime contract suite). */
  probe?: RuntimeProbe
  /**
   * Reaching members in other homes and on the LAN (reach.ts): circuit relay
   * (serving and reservations), announced addresses, UPnP, mDNS. TCP only;
   * absent: none of it (no relayed address is dialed or kept).
   */
  reach?: Partial<ReachInit>
}

/** A node's default connection target: a few more than gossipsub's mesh degree (6), so its mesh has peers to choose from. */
export const DEFAULT_TARGET_PEERS = 8
/** How often the core's view of its peers is looked at for the sync lines of the log (peer-log.ts). */
const OBSERVE_MS = 1_000

/** The gossipsub parameters a simulation profile may set. */
type GossipParams = Partial<Pick<GossipsubOpts, 'D' | 'Dlo' | 'Dhi' | 'Dout' | 'Dlazy' | 'heartbeatInterval' | 'floodPublish' | 'idontwantMinDataSize'>>

/**
 * pnet's nonce exchange must finish within 1 s by default; dozens of nodes in
 * one process on a shared machine, with simulated link delay, can take
 * longer to get to it.
 */
const PNET_TIMEOUT_IN_PROCESS_MS = 10_000

/** The longest a round-trip measurement of a new peer may take (region-aware dialing). */
const PING_TIMEOUT_MS = 10_000

/** A peer that has not answered for its digest within this long (ms) is shown as not answering: a page waits on it. */
const PEER_DIGEST_TIMEOUT_MS = 5_000

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
  private membership: Membership | undefined
  private observer: NodeJS.Timeout | undefined
  private starting: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly counter: ReturnType<typeof rpcCounter> | undefined
  private readonly names = new PeerNames()
  private stopProgress: (() => void) | undefined
  private byteProtocol: BytesProtocol | undefined
  private reach: Reach | undefined
  private publisher: FramePublisher | undefined
  /** Frames heard and connections dropped, per peer: its last-seen and last-heard times (peer-evidence.ts). */
  private readonly evidence: PeerEvidence

  constructor (components: { records: MeshRecords, logger?: Logger }, private readonly init: Libp2pMeshInit) {
    if (components.records.nodeId !== init.identity.peerId) {
      throw new Error('the record store must write versions with the mesh identity (open it with nodeId = the peer id)')
    }
    this.peerId = init.identity.peerId
    this.replica = new RecordReplica(components.records, init.bulkJoin === false ? { bulkFromRoots: Infinity } : {})
    this.log = components.logger ?? silentLogger
    this.opts = meshOptions(init.options)
    this.topic = `/meta-core/mesh/${init.swarmKey.meshId}/1`
    this.counter = init.countRpcs === true ? rpcCounter() : undefined
    this.evidence = new PeerEvidence(this.opts.maxSigners + 1_024)
  }

  async start (): Promise<void> {
    this.starting ??= this.doStart()
    await this.starting
  }

  private async doStart (): Promise<void> {
    const blocked = new Set(this.opts.blockedPeers)
    const t = this.init.transport
    const reach = this.init.reach === undefined || t?.kind === 'memory'
      ? undefined
      : new Reach({ ...DEFAULT_REACH, ...this.init.reach }, this.init.listen, this.init.swarmKey.meshId, this.log.child('reach'),
        () => this.membership?.relays() ?? [])
    this.reach = reach
    const extra = reach?.libp2pOptions()
    const node = await createLibp2p({
      privateKey: this.init.identity.privateKey,
      nodeInfo: { userAgent: agentVersionOf(this.init.nodeName) },
      addresses: { listen: [...this.init.listen, ...(extra?.listen ?? [])], appendAnnounce: extra?.appendAnnounce },
      transports: [t?.kind === 'memory' ? memory({ latency: t.link === 'serial' ? t.latencyMs : 0 }) : tcp(),
        ...(extra === undefined ? [] : [extra.transport])],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionProtector: t?.kind === 'memory' && t.link !== 'serial' && (t.latencyMs > 0 || t.control !== undefined)
        ? delayedLink(privateNetwork({ secret: this.init.swarmKey.secret, timeoutMs: PNET_TIMEOUT_IN_PROCESS_MS }), t.latencyMs,
          t.control === undefined ? undefined : { self: this.peerId, link: t.control })
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
          // A copy of a frame already verified is dropped before its signature is checked again (gossip-dedup.ts).
          fastMsgIdFn: fastFrameId,
          ...meshScoring(this.topic),
          ...(this.init.degree !== undefined ? { ...this.init.degree, Dout: gossipDout(this.init.degree) } : {}),
          ...this.init.gossip,
          ...(this.counter !== undefined ? { metricsRegister: this.counter.register, metricsTopicStrToLabel: new Map([[this.topic, 'mesh']]) } : {})
        }),
        // The relay server, the router's port mapping, mDNS (reach.ts): typed by libp2p as services of any shape.
        ...(extra?.services as Record<string, never> | undefined)
      }
    })
    this.node = node
    this.names.attach(node)
    const publisher = new FramePublisher({
      publish: async (frame) => (await node.services.pubsub.publish(this.topic, frame)).recipients.length,
      connections: () => node.getPeers().length,
      now: () => performance.now(),
      schedule: (delayMs, fn) => { const t = setTimeout(fn, delayMs); t.unref(); return () => { clearTimeout(t) } },
      log: this.log
    })
    this.publisher = publisher
    node.services.pubsub.addEventListener('subscription-change', (evt) => {
      if (evt.detail.subscriptions.some(s => s.topic === this.topic && s.subscribe)) publisher.peerSubscribed()
    })
    const base: MeshRuntime = {
      now: () => Date.now(),
      monotonic: () => performance.now(),
      random: Math.random,
      schedule: (delayMs, fn) => {
        const t = setTimeout(fn, delayMs)
        t.unref()
        return () => { clearTimeout(t) }
      },
      // A frame that reached no peer while we have connections is published again (frame-publisher.ts).
      publish: (frame) => { publisher.send(frame) },
      request: async (peer, body, { timeoutMs }) => await requestPull(node, peerIdFromString(peer), body, timeoutMs)
    }
    const runtime = this.init.probe?.runtime?.(base) ?? base
    const core = new MeshCore({ selfId: this.peerId, runtime, store: this.replica, options: this.opts, logger: this.log.child('core') })
    this.core = core
    // What libp2p drives: the core, or what a test's probe put in front of it.
    const inbound = this.init.probe?.endpoint?.(core) ?? core
    await handlePulls(node, async (peer, body) => await inbound.handleRequest(peer, body), this.log, this.opts.requestTimeoutMs)
    await handleDigests(node, () => this.digest(), () => this.replica.clock(), this.log, this.opts.requestTimeoutMs)
    this.byteProtocol = new BytesProtocol(node, this.init.localFiles, { ...DEFAULT_BYTES_LIMITS, ...this.init.bytesLimits }, this.log.child('bytes'))
    await this.byteProtocol.start()
    node.services.pubsub.topicValidators.set(this.topic, (propagationSource, msg) => {
      // StrictSign: every message we see is signed, and gossipsub verified the signature against `from`.
      if (msg.type !== 'signed') return TopicValidatorResult.Reject
      const signer = msg.from.toString()
      const verdict = inbound.onGossip(signer, msg.data, propagationSource.toString())
      // A new frame it signed (the core accepted it: not a replay), straight from it or relayed: it was up.
      if (verdict === 'accept') this.heard(signer)
      return VERDICT[verdict]
    })
    node.services.pubsub.subscribe(this.topic)
    const peerLog = new PeerLog(this.log.child('peers'))
    node.addEventListener('peer:connect', (evt) => {
      const conn = node.getConnections(evt.detail)[0]
      peerLog.connected(evt.detail.toString(), conn?.remoteAddr.toString(), conn?.direction)
      inbound.peerConnected(evt.detail.toString())
    })
    node.addEventListener('peer:disconnect', (evt) => {
      this.evidence.left(evt.detail.toString(), Date.now())
      peerLog.disconnected(evt.detail.toString())
      inbound.peerDisconnected(evt.detail.toString())
    })
    await core.start()
    for (const p of node.getPeers()) {
      peerLog.connected(p.toString(), node.getConnections(p)[0]?.remoteAddr.toString(), node.getConnections(p)[0]?.direction)
      inbound.peerConnected(p.toString())
    }
    this.observer = setInterval(() => { peerLog.observe(core.status().peers) }, OBSERVE_MS)
    this.observer.unref()
    this.membership = new Membership(node, {
      selfId: this.peerId,
      target: this.init.targetPeers ?? DEFAULT_TARGET_PEERS,
      blocked,
      // Learned addresses of the transport this node speaks: TCP ones (and relayed ones, through another member), or in-memory ones.
      accept: t?.kind === 'memory'
        ? (a) => a.startsWith('/memory/')
        : reach === undefined ? (a) => multiaddrProblem(a, false) === undefined : (a) => memberAddrProblem(a) === undefined,
      keys: this.replica,
      log: this.log.child('members'),
      crossRegionPeers: this.init.crossRegionPeers,
      ping: async (peer) => await (node.services as unknown as { ping: Ping }).ping.ping(peer, { signal: AbortSignal.timeout(PING_TIMEOUT_MS) }),
      keep: (peer) => this.init.bootstrap.some(a => a.endsWith(`/p2p/${peer}`)),
      // Members behind NAT get their relayed addresses after others met them: asked for sooner while one is out of reach.
      quickExchange: reach !== undefined
    })
    await this.membership.start()
    this.dialer = new PeerDialer(node, this.init.bootstrap.map(a => {
      const addr = multiaddr(a)
      // Without /p2p/<peerId> the peer is whoever answers with our swarm key (peer-dialer.ts).
      const id = addr.getComponents().filter(c => c.name === 'p2p').pop()?.value
      return { addr, peer: id === undefined ? undefined : peerIdFromString(id) }
    }), this.log.child('dial'), this.init.unreachableRemindMs)
    this.dialer.start()
    reach?.start(node, blocked)
    this.stopProgress = logSyncProgress(() => this.status(), this.log)
    this.log.info('mesh listening', { peerId: this.peerId, addrs: node.getMultiaddrs().map(String), topic: this.topic,
      targetPeers: this.init.targetPeers ?? DEFAULT_TARGET_PEERS })
  }

  /** Stops dialing, then the core (its store work finishes), then libp2p. Idempotent. */
  async stop (): Promise<void> {
    this.stopping ??= (async () => {
      await this.starting?.catch(() => {}) // a failed start leaves only what it created to stop
      this.dialer?.stop()
      this.reach?.stop()
      this.stopProgress?.()
      clearInterval(this.observer)
      try {
        // The book is saved while the store is still open (the core's stop is the last store work).
        await this.membership?.stop().catch((err: unknown) => { this.log.warn('stopping membership failed', { err }) })
        await this.core?.stop()
        this.publisher?.stop()
      } finally {
        await this.node?.stop()
      }
    })()
    await this.stopping
  }

  /** Byte ranges of files other nodes hold (undefined until started). */
  get bytes (): ByteSource | undefined {
    return this.byteProtocol
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
    const now = Date.now()
    return {
      enabled: true,
      meshId: this.init.swarmKey.meshId,
      self: {
        peerId: this.peerId,
        name: this.init.nodeName ?? null,
        addrs: node?.getMultiaddrs().map(String) ?? [],
        hlc: this.replica.clock(),
        epoch: s?.self.epoch ?? 0,
        seq: s?.self.seq ?? 0,
        framesOut: s?.self.framesOut ?? 0,
        bytesOut: s?.self.bytesOut ?? 0,
        publishFailures: s?.self.publishFailures ?? 0,
        clock: s?.self.clock ?? { inBound: true, measured: 0, outOfBound: 0, offsetMs: null, hlcAheadMs: 0, message: null }
      },
      peers: (s?.peers ?? []).map(p => {
        const times = this.evidence.times(p.peerId, p.connected, this.membership?.book.get(p.peerId), now)
        return {
          ...p,
          name: this.names.get(p.peerId),
          via: p.connected || p.cursor !== null || p.lastSyncAt !== null || times.lastConnectedAt !== null ? 'direct' as const : 'gossip' as const,
          addrs: addrsOf(p.peerId),
          ...this.routeOf(p.peerId),
          lastSyncAt: isoOrNull(p.lastSyncAt),
          caughtUpAt: isoOrNull(p.caughtUpAt),
          ...times
        }
      }),
      targetPeers: this.init.targetPeers ?? DEFAULT_TARGET_PEERS,
      members: this.membership?.members() ?? [],
      join: joinView(this.replica.bulkProgress()),
      copy: copyView(s?.copy),
      reach: this.reach?.view() ?? null
    }
  }

  /** Whether a peer's connection is direct or relayed (and through whom), and whether it was found on the LAN. */
  private routeOf (peer: string): { route: 'direct' | 'relayed' | null, relay: string | null, lan: boolean } {
    let conns: ReturnType<Libp2p['getConnections']> = []
    try {
      conns = this.node?.getConnections(peerIdFromString(peer)) ?? []
    } catch {
      // a counter keyed by a peer id libp2p cannot parse has no connections
    }
    return this.reach?.route(peer, conns) ?? { route: conns.length > 0 ? 'direct' : null, relay: null, lan: false }
  }

  digest (): StoreDigest {
    return this.replica.digest()
  }

  /** A frame `signer` signed was accepted: when it was last heard, and seen in its member entry. */
  private heard (signer: string): void {
    const now = Date.now()
    this.evidence.heard(signer, now)
    this.membership?.book.seen(signer, now)
  }

  /** Each connected peer's digest, asked over the mesh (digest-protocol.ts), by peer id. */
  async peerDigests (): Promise<Map<string, PeerDigestResult>> {
    const node = this.node
    const out = new Map<string, PeerDigestResult>()
    if (node === undefined) return out
    await Promise.all(node.getPeers().map(async (p) => {
      out.set(p.toString(), await requestDigest(node, p, Math.min(PEER_DIGEST_TIMEOUT_MS, this.opts.requestTimeoutMs)))
    }))
    return out
  }

  /** The mesh degree gossipsub runs with (its own options, as it resolved them); undefined before start. */
  gossipDegree (): { D: number, Dlo: number, Dhi: number, Dout: number } | undefined {
    const opts = (this.node?.services.pubsub as unknown as { opts?: { D: number, Dlo: number, Dhi: number, Dout: number } } | undefined)?.opts
    return opts === undefined ? undefined : { D: opts.D, Dlo: opts.Dlo, Dhi: opts.Dhi, Dout: opts.Dout }
  }

  /** Gossipsub's score of a peer on the mesh topic, and whether it is in our mesh for it (gossip-scoring.ts). */
  gossipScore (peer: string): { score: number, inMesh: boolean } {
    // The router implements these; the service's public interface does not name them.
    const pubsub = this.node?.services.pubsub as unknown as { getScore: (p: string) => number, getMeshPeers: (t: string) => string[] } | undefined
    return { score: pubsub?.getScore(peer) ?? 0, inMesh: pubsub?.getMeshPeers(this.topic).includes(peer) ?? false }
  }

  /** Gossipsub RPCs sent so far (zeros unless created with `countRpcs`). */
  rpcCounts (): RpcCounts {
    return this.counter?.counts() ?? { rpcs: 0, bytes: 0, messages: 0 }
  }
}

function isoOrNull (ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
