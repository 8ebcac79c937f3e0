/**
 * The replication core: one state machine per node, with no I/O of its own.
 * It acts only through a `MeshRuntime` (clock, timers, randomness, publish,
 * request) and a `ReplicaStore`, and is driven by the inputs below. libp2p
 * drives it in a node; the in-process virtual mesh and the simulator drive
 * the very same code.
 *
 * Inputs: `start`/`stop`, `peerConnected`/`peerDisconnected`, `onGossip`
 * (a push frame: validated synchronously, so the adapter can answer
 * gossipsub's validator, and applied asynchronously), `handleRequest` (a
 * peer's pull), and the store's committed changes (subscribed at start).
 *
 * Guarantees:
 * - Nothing from a peer touches the store before it passed `decodeMessage`
 *   and the checks of gossip-intake.ts (push frames) or of the pull
 *   (peer-sync.ts, screen.ts); a bad frame is refused whole and counted
 *   against its signer (or, for a signer we hold no state for, against the
 *   peer that relayed it).
 * - State per signer (counters, frame sequence) exists only for connected
 *   peers and for signers of a valid frame, at most `maxSigners` of the
 *   latter; frames waiting to be applied are bounded per signer and in bytes
 *   over all of them (gossip-intake.ts).
 * - Remote entries are applied one frame or page per transaction, in
 *   arrival order, through one queue.
 * - Every handler catches per message: a bad or failing input is counted
 *   and logged, never thrown at the adapter.
 */
import { silentLogger, type Logger } from '../../common/index.js'
import { decodeMessage, encodeMessage, WireError, type GiveMessage } from '../messages.js'
import { meshOptions, type MeshOptions } from './options.js'
import { ClockGuard, type ClockStatus } from './clock-guard.js'
import { GossipIntake, type GossipVerdict, type PeerEntry } from './gossip-intake.js'
import { PeerSync } from './peer-sync.js'
import { RangeCopy } from './range-copy.js'
import { screenEntries, type Screened } from './screen.js'
import { Pusher } from './push.js'
import { errorReply, servePull, serveRecon, serveRoots, serveSnap } from './serve.js'
import { emptyCounters, type MeshStatus, type PeerStatus } from './status.js'
import { TokenBucket } from './token-bucket.js'
import type { BulkPage, MeshRuntime, PeerKey, RemoteEntry, ReplicaStore } from './runtime.js'

const EPOCH_KEY = 'mesh:epoch'
/** A request refused for now (we copy the range from that peer, or reconcile with it) is to be asked again after this long (ms). */
const BUSY_RETRY_MS = 5_000

interface MeshCoreInit {
  /** This node's peer id: the origin of its versions and the signer of its frames. */
  selfId: PeerKey
  runtime: MeshRuntime
  store: ReplicaStore
  options?: Partial<MeshOptions>
  logger?: Logger
}

export class MeshCore {
  readonly selfId: PeerKey
  readonly options: MeshOptions
  private readonly rt: MeshRuntime
  private readonly store: ReplicaStore
  private readonly log: Logger
  private readonly peers = new Map<PeerKey, PeerEntry>()
  private readonly intake: GossipIntake
  /** The node's copy of the whole range from its peers (a join), one whatever the number of peers. */
  private readonly copy: RangeCopy
  private readonly blocked: Set<string>
  /** This node's clock against its peers': what refuses local writes while out of bound. */
  readonly clock: ClockGuard
  private pusher: Pusher | undefined
  private unsubscribe: (() => void) | undefined
  private applyQueue: Promise<void> = Promise.resolve()
  /** Store work the core started and has not seen finish: stop waits for it, drivers of virtual time too. */
  private readonly inflight = new Set<Promise<unknown>>()
  private state: 'new' | 'starting' | 'running' | 'stopped' = 'new'
  private startPromise: Promise<void> | undefined
  private stopPromise: Promise<void> | undefined

  constructor (init: MeshCoreInit) {
    this.selfId = init.selfId
    this.rt = init.runtime
    this.store = init.store
    this.options = meshOptions(init.options)
    this.log = init.logger ?? silentLogger
    this.blocked = new Set(this.options.blockedPeers)
    this.intake = new GossipIntake({
      selfId: this.selfId,
      options: this.options,
      blocked: this.blocked,
      peers: this.peers,
      peer: (id) => this.peer(id),
      screen: (entries, perEntry) => this.screen(entries, perEntry),
      apply: async (entries) => { await this.enqueueApply(entries) },
      pull: (sync) => { this.kick(sync, true) },
      random: () => this.rt.random(),
      log: this.log
    })
    this.copy = new RangeCopy({
      store: this.store,
      opts: this.options,
      track: async (op) => await this.track(op),
      log: (msg, fields) => { this.log.info(msg, fields) },
      now: () => this.rt.now(),
      schedule: (ms, fn) => this.rt.schedule(ms, fn),
      // An abandoned copy keeps what arrived: a bulk transfer it left under way ends (its held-back record applied).
      endBulk: async () => { if (this.state === 'running') await this.enqueueApply([], { bulk: { done: true } }) }
    })
    this.clock = new ClockGuard(this.rt, this.options, () => this.store.clock(), (c) => { this.clockChanged(c) })
  }

  private clockChanged (c: ClockStatus): void {
    if (c.inBound) this.log.info('clock back in bound: local writes accepted again', { offsetMs: c.offsetMs, measured: c.measured })
    else this.log.warn('clock out of bound: local writes refused', { offsetMs: c.offsetMs, measured: c.measured, outOfBound: c.outOfBound, hlcAheadMs: c.hlcAheadMs, why: c.message })
  }

  // ------------------------------------------------------------ lifecycle

  /** Picks this start's frame epoch, subscribes to the store's changes and starts syncing connected peers. Idempotent. */
  async start (): Promise<void> {
    this.startPromise ??= this.doStart()
    await this.startPromise
  }

  private async doStart (): Promise<void> {
    this.state = 'starting'
    // The epoch is this start's time, never below the last one used: a restart never reuses a sequence.
    const last = Number(this.store.getLocal(EPOCH_KEY) ?? '0')
    const epoch = Math.max(Math.floor(this.rt.now()), (Number.isSafeInteger(last) ? last : 0) + 1)
    await this.track(this.store.setLocal(EPOCH_KEY, String(epoch)))
    if (this.state !== 'starting') return // stopped while starting
    this.copy.start()
    // A transfer a node stopped in, with no copy to finish it (abandoned, or its last page in): it ends now, keeping what arrived.
    if (!this.copy.active && this.store.bulkPending?.() === true) this.enqueueApply([], { bulk: { done: true } }).catch((err: unknown) => {
      this.log.warn('ending a bulk transfer failed', { err })
    })
    this.pusher = new Pusher(this.rt, this.selfId, epoch, this.options, (err) => { this.log.warn('push frame not published', { err }) })
    this.unsubscribe = this.store.onChanges((changes) => { this.pusher?.add(changes) })
    this.store.setClockGate?.(() => this.clock.refusal())
    this.state = 'running'
    for (const p of this.peers.values()) if (p.sync.connected) this.kick(p.sync)
  }

  /**
   * Publishes what is waiting, stops the timers and waits for the store work
   * already started (queued applies, cursor writes). Pulls waiting on a
   * peer's reply are abandoned, not awaited: their reply, if it comes, is
   * dropped. After stop resolves the core no longer touches the store.
   * Idempotent.
   */
  async stop (): Promise<void> {
    this.stopPromise ??= this.doStop()
    await this.stopPromise
  }

  private async doStop (): Promise<void> {
    await this.startPromise?.catch(() => {}) // a failed start has nothing more to stop
    this.state = 'stopped'
    this.unsubscribe?.()
    this.unsubscribe = undefined
    this.store.setClockGate?.(undefined)
    this.pusher?.stop()
    this.copy.stop()
    for (const p of this.peers.values()) p.sync.stop()
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight])
  }

  /** True while store work the core started (applies, cursor writes) has not finished: drivers of virtual time wait for it. */
  get busy (): boolean {
    return this.inflight.size > 0
  }

  // ------------------------------------------------------------ peers

  peerConnected (peer: PeerKey): void {
    if (peer === this.selfId || this.blocked.has(peer)) return
    const p = this.peer(peer)
    if (p.sync.connected) return
    p.sync.connect()
    if (this.state === 'running') this.kick(p.sync)
  }

  peerDisconnected (peer: PeerKey): void {
    this.peers.get(peer)?.sync.disconnect()
    this.clock.forget(peer)
  }

  /** Pulls from `peer` (or every connected peer) now; resolves when those rounds end. */
  async syncNow (peer?: PeerKey): Promise<void> {
    if (this.state !== 'running') return
    const targets = peer === undefined ? [...this.peers.values()].filter(p => p.sync.connected) : [this.peers.get(peer)].filter(p => p !== undefined)
    await Promise.all(targets.map(async p => { await p.sync.sync() }))
  }

  isBlocked (peer: PeerKey): boolean {
    return this.blocked.has(peer)
  }

  // ------------------------------------------------------------ gossip

  /**
   * A push frame from the gossip topic, signed by `signer` (authenticated by
   * the adapter) and relayed to us by `relay`. Decides synchronously
   * (gossip-intake.ts); the apply runs later through the queue.
   */
  onGossip (signer: PeerKey, bytes: Uint8Array, relay?: PeerKey): GossipVerdict {
    try {
      return this.state === 'running' ? this.intake.admit(signer, bytes, relay) : 'ignore'
    } catch (err) {
      // A bug here must not take the node down or punish the sender: drop the frame, pull repairs.
      this.log.error('gossip frame handling failed', { err, signer })
      return 'ignore'
    }
  }

  private screen (entries: readonly RemoteEntry[], perEntry: boolean): Screened {
    return screenEntries(this.store, entries, { perEntry, now: this.rt.now(), maxClockDriftMs: this.options.maxClockDriftMs, selfId: this.selfId })
  }

  /** `bulk`: a page of a bulk transfer (ReplicaStore.applyBulk); `ties`: a reconciliation's entries (ReplicaStore.apply). */
  private async enqueueApply (entries: RemoteEntry[], opts: { bulk?: BulkPage, ties?: boolean } = {}): Promise<void> {
    const { bulk, ties } = opts
    const run = this.applyQueue.then(async () => {
      // After stop the store may be closing: refuse, so a pull does not move its cursor past a page it never applied.
      if (this.state === 'stopped') throw new Error('mesh stopped')
      const store = this.store
      if (bulk !== undefined && store.applyBulk !== undefined) {
        const r = await store.applyBulk(entries, bulk)
        if (r.refused > 0) this.log.warn('store refused entries for clock drift', { refused: r.refused })
        return
      }
      if (entries.length === 0) return
      const r = await store.apply(entries, ties === true ? { ties } : undefined)
      if (r.refused > 0) this.log.warn('store refused entries for clock drift', { refused: r.refused })
    })
    // The queue goes on after a failed apply (the store was closing, say): the pull path repairs what it missed.
    this.applyQueue = run.catch((err: unknown) => { this.log.warn('applying remote entries failed', { err }) })
    await this.track(run)
  }

  private kick (sync: PeerSync, urgent = false): void {
    sync.sync(urgent).catch((err: unknown) => { this.log.warn('pull round failed', { err, peer: sync.peer }) }) // the next anti-entropy tick retries
  }

  // ------------------------------------------------------------ serving

  /** A peer's pull request; always resolves with reply bytes (an error message when refused). */
  async handleRequest (peer: PeerKey, bytes: Uint8Array): Promise<Uint8Array> {
    try {
      if (this.state !== 'running') return errorReply('busy', 'not running', 1_000)
      if (this.blocked.has(peer)) return errorReply('blocked', 'blocked')
      const p = this.peer(peer)
      const now = this.rt.now()
      p.bucket ??= new TokenBucket(this.options.servePagesPerSecond, this.options.servePageBurst, now)
      if (!p.bucket.take(now)) {
        p.counters.busyRefusals++
        return errorReply('busy', 'too many pulls', p.bucket.waitMs(now))
      }
      let m
      try {
        m = decodeMessage(bytes)
      } catch (err) {
        p.counters.framesRejected++
        return errorReply('bad-request', err instanceof WireError ? err.message : 'undecodable')
      }
      // A peer the copy takes from (one we never synced with), while we copy the range (range-copy.ts).
      const copyPeer = p.sync.connected && p.sync.copyPeer && this.copy.active
      if (m.t === 'pull' && copyPeer && this.store.digest().keys > 0) {
        // What its pull would bring it is its own records coming back (a join's pages are in our log too). Only
        // while we hold something: two nodes meeting with empty stores must not hold each other off. It pulls
        // again once our copy is done (at the retry hint); push carries our own writes meanwhile. Range requests
        // are still served, so two nodes copying from each other both finish. Every other peer's pulls and
        // checks are served as always: a copy holds no one hostage.
        p.counters.busyRefusals++
        return errorReply('busy', 'resyncing from you', BUSY_RETRY_MS)
      }
      let reply: Uint8Array
      if (m.t === 'pull') reply = servePull(this.store, this.options, m, Math.floor(now))
      else if (m.t === 'snap') reply = serveSnap(this.store, this.options, m, Math.floor(now))
      // While we copy the whole range from this peer, its reconciliation would send us the same entries again: later.
      else if (m.t === 'recon' && copyPeer) return errorReply('busy', 'copying the range', BUSY_RETRY_MS)
      else if (m.t === 'recon') {
        // Two peers reconciling with each other at once would move the keys each lacks twice. A lone top
        // range (a check, or a first step) is always answered; past it, the peer with the smaller id goes
        // on: the other's next step is refused busy, or its reconciliation stops when the smaller's arrives.
        const descending = m.ranges.length !== 1 || m.ranges[0].p !== ''
        if (descending && p.sync.reconciling && this.selfId < peer) return errorReply('busy', 'reconciling with you', BUSY_RETRY_MS)
        if (descending) p.sync.yieldReconciliation()
        reply = serveRecon(this.store, m, Math.floor(now))
      }
      else if (m.t === 'roots') {
        // The key comparison is a reconciliation under way too: the same rule as for its descending ranges.
        if (p.sync.reconciling && this.selfId < peer) return errorReply('busy', 'reconciling with you', BUSY_RETRY_MS)
        p.sync.yieldReconciliation()
        reply = serveRoots(this.store, m, Math.floor(now))
      }
      else if (m.t === 'give') reply = await this.takeGiven(p, m)
      else {
        p.counters.framesRejected++
        return errorReply('bad-request', `a ${m.t} message is not a request`)
      }
      p.counters.pagesServed++
      p.counters.bytesServed += reply.length
      return reply
    } catch (err) {
      this.log.error('serving a pull failed', { err, peer })
      return errorReply('internal', 'internal error')
    }
  }

  /**
   * Entries a peer's reconciliation found we lack: screened as a pulled
   * page is (malformed and forged entries dropped, drifted ones refused:
   * the peer's next reconciliation offers them again), applied through the
   * queue before the reply, ties decided by value.
   */
  private async takeGiven (p: PeerEntry, m: GiveMessage): Promise<Uint8Array> {
    const screened = this.screen(m.entries, true)
    if ('bad' in screened) return errorReply('bad-request', screened.bad)
    p.counters.entriesDropped += screened.dropped
    p.counters.forged += screened.forged
    p.counters.driftRefusals += screened.drifted.length
    await this.enqueueApply(screened.ok, { ties: true })
    p.counters.reconKeysIn += screened.ok.length
    return encodeMessage({ t: 'taken', applied: screened.ok.length })
  }

  // ------------------------------------------------------------ status

  status (): MeshStatus {
    const peers: PeerStatus[] = []
    const now = this.rt.now()
    for (const [peerId, p] of [...this.peers].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      peers.push({
        peerId,
        connected: p.sync.connected,
        cursor: p.sync.cursor,
        behind: p.sync.behind,
        resyncing: p.sync.connected && p.sync.resyncing,
        reconciling: p.sync.connected && p.sync.reconciling,
        lastSyncAt: p.sync.lastSyncAt,
        caughtUpAt: p.sync.caughtUpAt,
        lagMs: p.sync.lagMs(now),
        parked: p.sync.parked,
        ...p.counters
      })
    }
    return {
      self: {
        peerId: this.selfId,
        hlc: this.store.clock(),
        epoch: Number(this.store.getLocal(EPOCH_KEY) ?? '0'),
        seq: this.pusher?.lastSeq ?? 0,
        framesOut: this.pusher?.stats.framesOut ?? 0,
        bytesOut: this.pusher?.stats.bytesOut ?? 0,
        publishFailures: this.pusher?.stats.publishFailures ?? 0,
        clock: this.clock.status()
      },
      peers,
      copy: this.copy.status()
    }
  }

  // ------------------------------------------------------------ internals

  private peer (id: PeerKey): PeerEntry {
    let p = this.peers.get(id)
    if (p === undefined) {
      const counters = emptyCounters()
      p = {
        counters,
        bucket: undefined,
        queued: 0,
        sync: new PeerSync(id, {
          rt: this.rt,
          store: this.store,
          opts: this.options,
          counters,
          screen: (entries, perEntry) => this.screen(entries, perEntry),
          mark: () => this.clock.mark(),
          clockSample: (peer, sent, wall) => { this.clock.record(peer, sent, wall) },
          apply: async (entries, opts) => { await this.enqueueApply(entries, opts) },
          track: async (op) => await this.track(op),
          copy: this.copy,
          log: (msg, fields) => { this.log.debug(msg, fields) }
        })
      }
      this.peers.set(id, p)
    }
    return p
  }

  private async track<T> (op: Promise<T>): Promise<T> {
    this.inflight.add(op)
    try {
      return await op
    } finally {
      this.inflight.delete(op)
    }
  }
}
