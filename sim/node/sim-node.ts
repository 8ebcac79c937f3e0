/**
 * One simulated node: a real record store (SQLite in memory), the mesh's
 * replication core (`src/mesh/protocol`, the very code a node runs) driven
 * through a `MeshRuntime` on virtual time, and a gossipsub router model in
 * place of libp2p.
 *
 * A node is stopped like a killed process: its router is dropped and its
 * core stopped with a runtime that is already dead (unflushed push frames
 * are lost, as on a crash: nothing it does after reaches the network),
 * timers it scheduled never fire, and its store stays as it was committed.
 * A restart builds a new core and router over the same store; a fresh join
 * is a new node with an empty store.
 */
import { KvStore } from '../../src/kv/index.js'
import { RecordStore } from '../../src/records/index.js'
import { RecordReplica } from '../../src/mesh/replica-store.js'
import { decodeMessage, FRAME_LIMITS, MAX_MESSAGE_BYTES } from '../../src/mesh/messages.js'
import { MeshCore, type MeshEndpoint, type MeshOptions, type MeshRuntime, type RuntimeProbe } from '../../src/mesh/protocol/index.js'
import type { Prng, Cancel, Scheduler } from '../../src/mesh/testing/index.js'
import type { GossipConfig } from '../gossip/config.js'
import { GossipRouter } from '../gossip/router.js'
import type { GossipMessage, Rpc, RpcKind, Verdict } from '../gossip/rpc.js'
import { streamMessageBytes } from '../gossip/wire-size.js'
import type { Metrics } from '../metrics/collector.js'
import type { Network } from '../net/network.js'
import { VirtualCpu, type CpuCosts } from '../cpu.js'

/** The pull protocol id the real node negotiates (its bytes count in multistream-select); the libp2p adapter's PULL_PROTOCOL. */
export const SYNC_PROTOCOL = '/meta-core/pull/1.0.0'

export interface NodeWorld {
  sched: Scheduler
  net: Network
  metrics: Metrics
  topic: string
  /** Virtual wall clock at t = 0 (ms since 1970). */
  epochMs: number
  gossip: GossipConfig
  mesh: Partial<MeshOptions>
  node: (index: number) => SimNode
  indexOf: (peerId: string) => number | undefined
  nextMessageId: () => number
  /** Marks that node `index` may have started asynchronous store work (the world then lets it finish). */
  touch: (index: number) => void
  /** An unexpected failure inside the node (a bug): the run reports it. */
  fail: (err: unknown, where: string) => void
  /** The virtual CPU's cost model (sim/cpu.ts), already scaled by --cpu-factor. */
  cpu: CpuCosts
  /** The one CPU of every node, with --cpu-shared. */
  sharedCpu: VirtualCpu | undefined
}

interface PendingRequest {
  reject: (err: Error) => void
}

export class SimNode {
  readonly kv: KvStore
  readonly records: RecordStore
  readonly replica: RecordReplica
  core: MeshCore | undefined
  router: GossipRouter | undefined
  skewMs = 0
  /** Bumped on every start and stop: callbacks of an older life are ignored. */
  private life = 0
  private readonly pending = new Map<number, Set<PendingRequest>>()
  /** Gossip messages this node received, kept for a replaying bad peer. */
  readonly captured: GossipMessage[] = []
  capture = false
  /** This node's virtual CPU: work queues on it, and its effects land when it is done. */
  readonly cpu: VirtualCpu
  /** Tests: a hold on the runtime each life's core gets and on what the network drives here (runtime.ts). */
  probe: RuntimeProbe | undefined
  /** What the network drives on this node while it is up: its core, unless a probe put something in front. */
  inbound: MeshEndpoint | undefined

  constructor (
    readonly index: number,
    readonly peerId: string,
    readonly rng: Prng,
    private readonly w: NodeWorld,
    /** A store image to start from (the preload, sim/preload.ts); none: an empty store. */
    image?: Buffer
  ) {
    const now = (): number => this.now()
    this.cpu = w.sharedCpu ?? new VirtualCpu(() => w.sched.now)
    this.kv = new KvStore({ path: ':memory:', cacheKiB: 256, backgroundCheckpoint: false, now, ...(image !== undefined ? { image } : {}) })
    const ids = rng.fork('root-ids')
    this.records = new RecordStore(this.kv, { nodeId: peerId, now, random: () => ids.next(), maxClockDriftMs: w.mesh.maxClockDriftMs })
    const logRng = rng.fork('log-id')
    this.replica = new RecordReplica(this.records, { newLogId: () => Buffer.from(logRng.bytes(8)).toString('hex') })
    // The record layer's change log tells which keys each commit changed: that is when a write becomes readable here.
    // Each committed key costs CPU time, and is readable once that work is done.
    this.records.onChanges((changes) => {
      this.cpu.charge(changes.length * w.cpu.entryMs)
      w.metrics.committed(index, changes.map(c => c.key))
    })
  }

  get up (): boolean {
    return this.core !== undefined
  }

  /**
   * This node's wall clock: virtual time, the epoch and its skew, in whole
   * milliseconds as `Date.now()` gives them (virtual time itself is
   * fractional; the HLC and event ids need integers).
   */
  now (): number {
    return Math.floor(this.w.epochMs + this.w.sched.now + this.skewMs)
  }

  /** Starts a new life: router, core, network presence. */
  start (): void {
    if (this.up) return
    const life = ++this.life
    const alive = (): boolean => this.life === life
    const rng = this.rng.fork(`life-${life}`)
    this.router = new GossipRouter({
      index: this.index,
      rng: rng.fork('gossip'),
      now: () => this.w.sched.now,
      after: (ms, fn) => this.w.sched.after(ms, () => { if (alive()) fn() }),
      transmit: (to, rpc, kind, bytes) => this.transmit(to, rpc, kind, bytes),
      validate: (msg, source) => this.validate(msg, source),
      onValidateError: (err) => { this.w.fail(err, `node ${this.index} gossip validation`) },
      nextMessageId: this.w.nextMessageId,
      stats: this.w.metrics
    }, this.w.gossip)
    const runtime = this.runtime(rng.fork('core'), alive)
    this.core = new MeshCore({ selfId: this.peerId, runtime: this.probe?.runtime?.(runtime) ?? runtime, store: this.replica, options: this.w.mesh })
    this.inbound = this.probe?.endpoint?.(this.core) ?? this.core
    this.router.start()
    this.router.subscribe(this.w.topic)
    this.w.touch(this.index)
    this.core.start().catch((err: unknown) => { this.w.fail(err, `node ${this.index} start`) })
    this.w.net.start(this.index)
  }

  /** Kills the node (see the header): nothing is flushed. */
  stop (): void {
    if (!this.up) return
    this.life++
    this.w.net.stop(this.index)
    this.router?.stop()
    this.router = undefined
    // The dead life's core is stopped too, not only dropped: its work already under way (a range copy waiting for a
    // page) would otherwise ask again at once each time a request fails for want of a connection, in promises alone,
    // and hold the process for ever (nothing it does reaches the network or the timers: its runtime is dead).
    const core = this.core
    this.core = undefined
    this.inbound = undefined
    core?.stop().catch((err: unknown) => { this.w.fail(err, `node ${this.index} stop`) })
    for (const set of this.pending.values()) for (const p of set) p.reject(new Error('node stopped'))
    this.pending.clear()
  }

  /**
   * Runs `fn` once this node's CPU has done the work of handling a message
   * of `bytes` (`messages` of them: 0 for the sending side of a reply),
   * queued behind the work already on it. With no cost it runs at once. A
   * task of an earlier life is dropped.
   */
  task (bytes: number, fn: () => void, messages = 1): void {
    const cost = messages * this.w.cpu.messageMs + (bytes / 1024) * this.w.cpu.kibMs
    if (cost <= 0 && this.cpu.freeAt <= this.w.sched.now) {
      fn()
      return
    }
    const at = this.cpu.charge(cost)
    const life = this.life
    this.w.sched.at(at, () => { if (this.life === life) fn() })
  }

  /** True while store work the core started has not finished. */
  get busy (): boolean {
    return this.core?.busy === true
  }

  // ------------------------------------------------------------ network events

  connected (peer: number, direction: 'inbound' | 'outbound'): void {
    if (!this.up) return
    this.router?.addPeer(peer, direction)
    this.w.touch(this.index)
    this.inbound?.peerConnected(this.w.node(peer).peerId)
  }

  disconnected (peer: number): void {
    if (!this.up) return
    this.router?.removePeer(peer)
    this.inbound?.peerDisconnected(this.w.node(peer).peerId)
    // An open stream fails when its connection closes: requests to that peer end now, not at their timeout.
    const set = this.pending.get(peer)
    if (set !== undefined) for (const p of [...set]) p.reject(new Error(`connection to peer ${peer} closed`))
  }

  // ------------------------------------------------------------ gossip

  private transmit (to: number, rpc: Rpc, kind: RpcKind, bytes: number): boolean {
    const from = this.index
    return this.w.net.send(from, to, kind, bytes, () => {
      const peer = this.w.node(to)
      peer.task(bytes, () => { peer.router?.handleRpc(from, rpc) })
    })
  }

  private validate (msg: GossipMessage, source: number): Verdict {
    if (this.capture) {
      this.captured.push(msg)
      if (this.captured.length > 64) this.captured.shift()
    }
    const inbound = this.inbound
    if (inbound === undefined) return 'ignore'
    this.w.touch(this.index)
    return inbound.onGossip(this.w.node(msg.from).peerId, msg.data, this.w.node(source).peerId)
  }

  // ------------------------------------------------------------ runtime

  private runtime (rng: Prng, alive: () => boolean): MeshRuntime {
    return {
      now: () => this.now(),
      // Virtual time never steps: the clock guard sees a step of the wall clock (skew) at once, as a node does with performance.now().
      monotonic: () => this.w.sched.now,
      random: () => rng.next(),
      schedule: (delayMs, fn) => this.w.sched.after(delayMs, () => {
        if (!alive()) return
        this.w.touch(this.index)
        fn()
      }),
      publish: (frame) => {
        if (alive()) this.router?.publish(this.w.topic, frame)
      },
      request: async (peer, body, opts) => await this.request(peer, body, opts.timeoutMs, alive)
    }
  }

  /**
   * A pull over a fresh stream: one request message, the peer's core answers,
   * one reply message. Fails when there is no connection, when it closes
   * first, or at the deadline.
   */
  private async request (peerId: string, body: Uint8Array, timeoutMs: number, alive: () => boolean): Promise<Uint8Array> {
    const to = this.w.indexOf(peerId)
    if (to === undefined || !this.w.net.connected(this.index, to)) throw new Error(`not connected to ${peerId}`)
    const from = this.index
    const kind = requestKind(body)
    return await new Promise<Uint8Array>((resolve, reject) => {
      let set = this.pending.get(to)
      if (set === undefined) this.pending.set(to, set = new Set())
      let done = false
      let cancelTimeout: Cancel = () => {}
      const entry: PendingRequest = {
        reject: (err) => {
          if (done) return
          done = true
          cancelTimeout()
          set.delete(entry)
          this.w.touch(this.index)
          reject(err)
        }
      }
      set.add(entry)
      cancelTimeout = this.w.sched.after(timeoutMs, () => { entry.reject(new Error(`request to ${peerId} timed out`)) })
      const requestBytes = streamMessageBytes(body.length, SYNC_PROTOCOL)
      const sent = this.w.net.send(from, to, `${kind}-request`, requestBytes, () => {
        const server = this.w.node(to)
        server.task(requestBytes, () => {
          if (server.inbound === undefined) return
          this.w.touch(to)
          server.inbound.handleRequest(this.peerId, body).then((reply) => {
            if (!server.up) return
            const replyBytes = streamMessageBytes(reply.length, SYNC_PROTOCOL)
            // Reading and encrypting the page is the server's work: the reply leaves when it is done.
            server.task(replyBytes, () => {
              server.w.net.send(to, from, `${kind}-reply`, replyBytes, () => {
                this.task(replyBytes, () => {
                  if (done || !alive()) return
                  if (reply.length > MAX_MESSAGE_BYTES) { entry.reject(new Error(`reply of ${reply.length} bytes from ${peerId} is over the ${MAX_MESSAGE_BYTES}-byte limit`)); return }
                  done = true
                  cancelTimeout()
                  set.delete(entry)
                  this.w.touch(this.index)
                  resolve(reply)
                })
              })
            }, 0)
          }, (err: unknown) => { this.w.fail(err, `node ${to} handleRequest`) })
        })
      })
      if (!sent) entry.reject(new Error(`not connected to ${peerId}`))
    })
  }
}

/** `pull` or `snap`: the request's type, decoded by the wire module (requests are tiny). */
function requestKind (body: Uint8Array): 'pull' | 'snap' {
  try {
    return decodeMessage(body, FRAME_LIMITS).t === 'snap' ? 'snap' : 'pull'
  } catch {
    return 'pull' // the serving core answers a malformed request with an error; counted as a pull
  }
}
