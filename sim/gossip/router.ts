/**
 * A model of one node's gossipsub router, after @libp2p/gossipsub 17.1.1
 * (`src/gossipsub.ts`), with the parts that decide who sends what to whom:
 *
 * - peers and their topic subscriptions, exchanged when a connection opens;
 * - the topic mesh: GRAFT on subscribe while below Dlo, heartbeat
 *   maintenance (graft to D below Dlo, prune to D above Dhi keeping Dout
 *   outbound peers: heartbeat.ts), PRUNE with a 60 s backoff, GRAFT refused during
 *   backoff or at Dhi from an inbound peer;
 * - publish: to every subscribed peer (floodPublish, the default), or to the
 *   mesh topped up to D; forward: to mesh peers except the source and peers
 *   that sent IDONTWANT for the message;
 * - IDONTWANT (v1.2) to mesh peers on first sight of a message of ≥ 512 data
 *   bytes, before validation;
 * - validation through the application (the mesh core's `onGossip`):
 *   accept forwards and caches, reject and ignore drop; a rejected id stays
 *   in the seen cache, as in the real router, so a resent copy is a duplicate;
 * - lazy gossip: each heartbeat, IHAVE of the last 3 heartbeats' ids to
 *   max(Dlazy, 0.25 × non-mesh peers) random non-mesh peers (heartbeat.ts), IWANT for
 *   unseen ids, replies from the message cache, with the per-heartbeat caps
 *   on IHAVE/IWANT and the retransmission limit.
 *
 * Left out, and why: peer scoring (the node sets no topic score parameters,
 * so every honest peer's score stays 0 and only the behavioural penalty could
 * move it; see docs/simulator.md), peer exchange (off by default), direct
 * peers, floodsub fallback, fanout (every node is subscribed to its mesh's
 * topic), IWANT promise tracking (it only feeds the score).
 *
 * Every RPC is one network message (rpc.ts); its size is its protobuf encoding
 * plus stream framing (wire-size.ts).
 */
import type { Cancel, Prng } from '../../src/mesh/testing/index.js'
import { MessageCache, SeenCache } from './caches.js'
import type { GossipConfig } from './config.js'
import { chooseGossip, maintainMeshes } from './heartbeat.js'
import { rpcSize, type GossipMessage, type Rpc, type RpcKind, type Verdict } from './rpc.js'
import { messageBytes } from './wire-size.js'

interface RouterHost {
  readonly index: number
  readonly rng: Prng
  now: () => number
  after: (ms: number, fn: () => void) => Cancel
  /** Sends an RPC over the connection to `to`; false when there is none. */
  transmit: (to: number, rpc: Rpc, kind: RpcKind, bytes: number) => boolean
  /** The application's verdict on a new message (the core's gossip handler). */
  validate: (msg: GossipMessage, source: number) => Verdict | Promise<Verdict>
  /** The application failed to validate (a bug: counted and treated as ignore). */
  onValidateError: (err: unknown) => void
  /** Newly published message ids; the run hands these out so they are unique. */
  nextMessageId: () => number
  stats: RouterStats
}

export interface RouterStats {
  received: (node: number, msg: GossipMessage) => void
  duplicate: (node: number, msg: GossipMessage) => void
  verdict: (node: number, msg: GossipMessage, source: number, v: Verdict) => void
}

export class GossipRouter {
  private readonly peers = new Set<number>()
  private readonly outbound = new Map<number, boolean>()
  private readonly topics = new Map<string, Set<number>>()
  private readonly subscriptions = new Set<string>()
  private readonly mesh = new Map<string, Set<number>>()
  private readonly backoff = new Map<string, Map<number, number>>()
  private readonly mcache: MessageCache
  private readonly seen: SeenCache
  private readonly idontwants = new Map<number, Map<number, number>>()
  private readonly idontwantCounts = new Map<number, number>()
  private readonly peerhave = new Map<number, number>()
  private readonly iasked = new Map<number, number>()
  private readonly iwantCounts = new Map<number, number>()
  private readonly pendingGossip = new Map<number, Array<{ topic: string, ids: number[] }>>()
  private ticks = 0
  private heartbeatTimer: Cancel | undefined
  private started = false

  constructor (private readonly host: RouterHost, readonly cfg: GossipConfig) {
    this.mcache = new MessageCache(cfg.mcacheGossip, cfg.mcacheLength)
    this.seen = new SeenCache(cfg.seenTtlMs)
  }

  /**
   * Starts the heartbeat. The first beat comes after the initial delay plus
   * a random phase within one interval: real nodes start at different
   * moments, so their heartbeats are not aligned.
   */
  start (): void {
    if (this.started) return
    this.started = true
    const first = this.cfg.heartbeatInitialDelayMs + this.host.rng.uniform(0, this.cfg.heartbeatMs)
    const beat = (): void => {
      if (!this.started) return
      this.heartbeat()
      this.heartbeatTimer = this.host.after(this.cfg.heartbeatMs, beat)
    }
    this.heartbeatTimer = this.host.after(first, beat)
  }

  /** Stops and forgets everything (a stopped process keeps no router state). */
  stop (): void {
    this.started = false
    this.heartbeatTimer?.()
    this.heartbeatTimer = undefined
    for (const m of [this.peers, this.outbound, this.topics, this.mesh, this.backoff, this.idontwants, this.pendingGossip]) m.clear()
  }

  subscribe (topic: string): void {
    if (this.subscriptions.has(topic)) return
    this.subscriptions.add(topic)
    for (const p of this.peers) this.send(p, { subscriptions: [topic] }, 'subscribe')
    // join: graft up to D known subscribers.
    if (!this.mesh.has(topic)) {
      const toAdd = this.host.rng.sample([...(this.topics.get(topic) ?? [])].filter(p => !this.backedOff(topic, p)), this.cfg.D)
      this.mesh.set(topic, new Set(toAdd))
      for (const p of toAdd) this.send(p, { graft: [topic] }, 'graft')
    }
  }

  /** A connection opened: the new outbound stream carries our subscriptions at once. */
  addPeer (peer: number, direction: 'inbound' | 'outbound'): void {
    if (!this.started || this.peers.has(peer)) return
    this.peers.add(peer)
    if (!this.outbound.has(peer)) this.outbound.set(peer, direction === 'outbound')
    if (this.subscriptions.size > 0) this.send(peer, { subscriptions: [...this.subscriptions] }, 'subscribe')
  }

  removePeer (peer: number): void {
    if (!this.peers.delete(peer)) return
    this.outbound.delete(peer)
    for (const s of this.topics.values()) s.delete(peer)
    for (const s of this.mesh.values()) s.delete(peer)
    this.idontwants.delete(peer)
    this.idontwantCounts.delete(peer)
    this.pendingGossip.delete(peer)
  }

  meshPeers (topic: string): number[] {
    return [...(this.mesh.get(topic) ?? [])].sort((a, b) => a - b)
  }

  /** Publishes `data`; returns the number of peers it was sent to (0: nobody subscribed yet). */
  publish (topic: string, data: Uint8Array): { msg: GossipMessage, recipients: number } {
    const msg: GossipMessage = {
      id: this.host.nextMessageId(),
      from: this.host.index,
      topic,
      data,
      encodedBytes: messageBytes(topic, data.length),
      publishedAt: this.host.now()
    }
    const tosend = this.selectPeersToPublish(topic)
    this.seen.put(msg.id, this.host.now())
    this.mcache.put(msg)
    let n = 0
    for (const p of tosend) if (this.send(p, { messages: [msg] }, 'publish')) n++
    return { msg, recipients: n }
  }

  /** Re-sends an already signed message as if newly published (a replaying peer). */
  republish (msg: GossipMessage): number {
    let n = 0
    for (const p of this.selectPeersToPublish(msg.topic)) if (this.send(p, { messages: [msg] }, 'publish')) n++
    return n
  }

  /** Handles an RPC from `from`, in the real router's order: subscriptions, messages, control. */
  handleRpc (from: number, rpc: Rpc): void {
    if (!this.started || !this.peers.has(from)) return
    if (rpc.subscriptions !== undefined) {
      const graftTopics: string[] = []
      for (const topic of rpc.subscriptions) {
        let s = this.topics.get(topic)
        if (s === undefined) this.topics.set(topic, s = new Set())
        if (s.has(from)) continue
        s.add(from)
        if (this.graftOnSubscribe(from, topic)) graftTopics.push(topic)
      }
      if (graftTopics.length > 0) this.send(from, { graft: graftTopics }, 'graft')
    }
    for (const msg of rpc.messages ?? []) this.handleMessage(from, msg)
    this.handleControl(from, rpc)
  }

  private handleMessage (from: number, msg: GossipMessage): void {
    this.host.stats.received(this.host.index, msg)
    if (this.seen.has(msg.id)) {
      this.host.stats.duplicate(this.host.index, msg)
      return
    }
    this.seen.put(msg.id, this.host.now())
    if (msg.data.length >= this.cfg.idontwantMinDataSize) this.sendIDontWants(msg, from)
    let v: Verdict | Promise<Verdict>
    try {
      v = this.host.validate(msg, from)
    } catch (err) {
      this.host.onValidateError(err)
      v = 'ignore'
    }
    if (typeof v === 'string') this.afterValidation(from, msg, v)
    else {
      v.then(r => { this.afterValidation(from, msg, r) }, err => {
        this.host.onValidateError(err)
        this.afterValidation(from, msg, 'ignore')
      })
    }
  }

  private afterValidation (from: number, msg: GossipMessage, v: Verdict): void {
    this.host.stats.verdict(this.host.index, msg, from, v)
    if (v !== 'accept' || !this.started) return
    this.mcache.put(msg)
    const mesh = this.mesh.get(msg.topic)
    if (mesh === undefined) return
    const dont = (p: number): boolean => this.idontwants.get(p)?.has(msg.id) === true
    for (const p of [...mesh]) {
      if (p !== from && !dont(p)) this.send(p, { messages: [msg] }, 'forward')
    }
  }

  private sendIDontWants (msg: GossipMessage, source: number): void {
    for (const p of [...(this.mesh.get(msg.topic) ?? [])]) {
      if (p !== source) this.send(p, { idontwant: [msg.id] }, 'idontwant')
    }
  }

  private handleControl (from: number, rpc: Rpc): void {
    const iwant = rpc.ihave !== undefined ? this.handleIHave(from, rpc.ihave) : []
    const replies = rpc.iwant !== undefined ? this.handleIWant(from, rpc.iwant) : []
    const prune = rpc.graft !== undefined ? this.handleGraft(from, rpc.graft) : []
    if (rpc.prune !== undefined) this.handlePrune(from, rpc.prune)
    if (rpc.idontwant !== undefined) this.handleIDontWant(from, rpc.idontwant)
    if (iwant.length === 0 && replies.length === 0 && prune.length === 0) return
    // The real router answers with one RPC: the wanted messages, our IWANT and any PRUNE.
    const out: Rpc = {}
    if (replies.length > 0) out.messages = replies
    if (iwant.length > 0) out.iwant = iwant
    if (prune.length > 0) out.prune = prune
    this.send(from, out, replies.length > 0 ? 'iwant-reply' : iwant.length > 0 ? 'iwant' : 'prune')
  }

  private handleIHave (from: number, ihave: NonNullable<Rpc['ihave']>): number[] {
    const have = (this.peerhave.get(from) ?? 0) + 1
    this.peerhave.set(from, have)
    if (have > this.cfg.maxIHaveMessages) return []
    const asked = this.iasked.get(from) ?? 0
    if (asked >= this.cfg.maxIHaveLength) return []
    const want = new Set<number>()
    let processed = 0
    out: for (const { topic, ids } of ihave) {
      if (!this.mesh.has(topic)) continue
      for (const id of ids) {
        if (processed++ >= this.cfg.maxIHaveLength) break out
        if (!this.seen.has(id)) want.add(id)
      }
    }
    if (want.size === 0) return []
    const ask = Math.min(want.size, this.cfg.maxIHaveLength - asked)
    const list = this.host.rng.shuffle([...want]).slice(0, ask)
    this.iasked.set(from, asked + ask)
    return list
  }

  private handleIWant (from: number, ids: number[]): GossipMessage[] {
    const n = (this.iwantCounts.get(from) ?? 0) + 1
    this.iwantCounts.set(from, n)
    if (n > this.cfg.maxIWantMessages) return []
    const out = new Map<number, GossipMessage>()
    let processed = 0
    for (const id of ids) {
      if (processed++ >= this.cfg.maxIHaveLength) break
      const e = this.mcache.getWithIWantCount(id, from)
      if (e === undefined) continue
      if (this.idontwants.get(from)?.has(id) === true) continue
      if (e.count > this.cfg.gossipRetransmission) continue
      out.set(id, e.msg)
    }
    return [...out.values()]
  }

  /** GRAFTs from a peer; returns the topics to answer with PRUNE. */
  private handleGraft (from: number, topics: string[]): string[] {
    const prune: string[] = []
    for (const topic of topics) {
      const m = this.mesh.get(topic)
      if (m === undefined || m.has(from)) continue
      if (this.backedOff(topic, from)) {
        this.addBackoff(topic, from, this.cfg.pruneBackoffMs)
        prune.push(topic)
      } else if (m.size >= this.cfg.Dhi && this.outbound.get(from) !== true) {
        prune.push(topic)
        this.addBackoff(topic, from, this.cfg.pruneBackoffMs)
      } else {
        m.add(from)
      }
    }
    return prune
  }

  private handlePrune (from: number, topics: string[]): void {
    for (const topic of topics) {
      const m = this.mesh.get(topic)
      if (m === undefined) return
      m.delete(from)
      this.addBackoff(topic, from, this.cfg.pruneBackoffMs)
    }
  }

  private handleIDontWant (from: number, ids: number[]): void {
    let count = this.idontwantCounts.get(from) ?? 0
    if (count >= this.cfg.idontwantMaxMessages) return
    let m = this.idontwants.get(from)
    if (m === undefined) this.idontwants.set(from, m = new Map())
    for (const id of ids) {
      if (count >= this.cfg.idontwantMaxMessages) break
      count++
      m.set(id, this.ticks)
    }
    this.idontwantCounts.set(from, count)
  }

  private graftOnSubscribe (peer: number, topic: string): boolean {
    const m = this.mesh.get(topic)
    if (m === undefined || m.has(peer) || m.size >= this.cfg.Dlo) return false
    if (this.backedOff(topic, peer)) return false
    m.add(peer)
    return true
  }

  private selectPeersToPublish (topic: string): number[] {
    const inTopic = this.topics.get(topic)
    if (inTopic === undefined) return []
    if (this.cfg.floodPublish) return [...inTopic]
    const mesh = this.mesh.get(topic) ?? new Set<number>()
    const out = [...mesh]
    if (mesh.size < this.cfg.D) {
      out.push(...this.host.rng.sample([...inTopic].filter(p => !mesh.has(p)), this.cfg.D - mesh.size))
    }
    return out
  }

  private backedOff (topic: string, peer: number): boolean {
    const until = this.backoff.get(topic)?.get(peer)
    // The real router clears expired entries only every 15 heartbeats, with one heartbeat of slack.
    return until !== undefined && this.host.now() < until + this.cfg.heartbeatMs
  }

  private addBackoff (topic: string, peer: number, ms: number): void {
    let b = this.backoff.get(topic)
    if (b === undefined) this.backoff.set(topic, b = new Map())
    const until = this.host.now() + ms
    if ((b.get(peer) ?? 0) < until) b.set(peer, until)
  }

  private heartbeat (): void {
    this.ticks++
    this.peerhave.clear()
    this.iasked.clear()
    this.iwantCounts.clear()
    this.idontwantCounts.clear()
    for (const m of this.idontwants.values()) {
      for (const [id, tick] of m) if (this.ticks - tick >= this.cfg.mcacheLength) m.delete(id)
    }
    this.seen.prune(this.host.now())

    const { tograft, toprune, gossipTo } = maintainMeshes({
      cfg: this.cfg,
      rng: this.host.rng,
      topics: this.topics,
      mesh: this.mesh,
      isOutbound: (p) => this.outbound.get(p) === true,
      backedOff: (topic, p) => this.backedOff(topic, p),
      addBackoff: (topic, p) => { this.addBackoff(topic, p, this.cfg.pruneBackoffMs) }
    })
    chooseGossip(this.cfg, this.host.rng, this.mcache, gossipTo, this.pendingGossip)
    for (const [id, topics] of tograft) {
      const prune = toprune.get(id)
      toprune.delete(id)
      this.send(id, prune === undefined ? { graft: topics } : { graft: topics, prune }, 'graft')
    }
    for (const [id, topics] of toprune) this.send(id, { prune: topics }, 'prune')
    for (const [id, ihave] of this.pendingGossip) this.send(id, { ihave }, 'ihave')
    this.pendingGossip.clear()
    this.mcache.shift()
  }

  /** Sends one RPC, piggybacking pending IHAVE as the real router does. */
  private send (to: number, rpc: Rpc, kind: RpcKind): boolean {
    const gossip = this.pendingGossip.get(to)
    if (gossip !== undefined && kind !== 'ihave') {
      rpc = { ...rpc, ihave: gossip }
      this.pendingGossip.delete(to)
    }
    return this.host.transmit(to, rpc, kind, rpcSize(rpc))
  }
}
