/**
 * An in-process, deterministic runtime for the mesh core: many nodes in one
 * process on a virtual clock, with seeded latency, loss and duplication of
 * gossip frames and of pull requests and replies, and links that come and
 * go. Given a seed and the same calls, a run replays exactly (the stores'
 * own clocks must be the virtual clock too: pass `mesh.now` to them).
 *
 * Gossip is modelled as reaching every node in the sender's connected
 * component, each copy independently delayed, lost or duplicated (no
 * gossipsub mesh degree or IHAVE/IWANT: the simulator models those).
 *
 * Real stores do real (synchronous SQLite, `setImmediate`-batched) work:
 * after each virtual event the driver lets that work finish, waiting until
 * no node reports itself busy, before it moves time on.
 */
import type { GossipVerdict } from '../protocol/gossip-intake.js'
import type { MeshRuntime, PeerKey } from '../protocol/runtime.js'
import { prng } from './prng.js'
import { VirtualClock } from './virtual-clock.js'

/** What the virtual network drives on each node: a MeshCore fits. */
interface MeshEndpoint {
  onGossip: (signer: PeerKey, bytes: Uint8Array, relay?: PeerKey) => GossipVerdict
  handleRequest: (peer: PeerKey, bytes: Uint8Array) => Promise<Uint8Array>
  peerConnected: (peer: PeerKey) => void
  peerDisconnected: (peer: PeerKey) => void
  readonly busy: boolean
}

export interface LinkModel {
  /** One-way delay, uniform in [min, max] ms. */
  latencyMs: [number, number]
  /** Probability that one receiver's copy of a gossip frame is lost. */
  gossipLoss: number
  /** Probability that a delivered gossip frame arrives a second time (gossipsub's seen-cache expired, a replaying peer). */
  gossipDup: number
  /** Probability that a pull request, or its reply, is lost (the caller then times out). */
  requestLoss: number
}

interface VirtualMeshOptions extends Partial<LinkModel> {
  seed: number
  /** Virtual wall clock at the start (ms since 1970). */
  startMs?: number
}

interface NetworkCounters {
  framesPublished: number
  framesDelivered: number
  frameBytesDelivered: number
  verdicts: Record<GossipVerdict, number>
  requests: number
  requestBytes: number
  replyBytes: number
  requestsLost: number
}

export class VirtualMesh {
  readonly clock: VirtualClock
  readonly model: LinkModel
  readonly counters: NetworkCounters = {
    framesPublished: 0, framesDelivered: 0, frameBytesDelivered: 0, verdicts: { accept: 0, reject: 0, ignore: 0 },
    requests: 0, requestBytes: 0, replyBytes: 0, requestsLost: 0
  }

  private readonly rand: () => number
  private readonly endpoints = new Map<PeerKey, MeshEndpoint>()
  private readonly links = new Map<PeerKey, Set<PeerKey>>()

  constructor (opts: VirtualMeshOptions) {
    this.rand = prng(opts.seed)
    this.clock = new VirtualClock(opts.startMs ?? 1_700_000_000_000)
    this.model = {
      latencyMs: opts.latencyMs ?? [1, 20],
      gossipLoss: opts.gossipLoss ?? 0,
      gossipDup: opts.gossipDup ?? 0,
      requestLoss: opts.requestLoss ?? 0
    }
  }

  /** The virtual wall clock, for the nodes' stores. */
  readonly now = (): number => this.clock.now()

  /** The runtime node `id` gives its core; its randomness is its own seeded stream. */
  runtime (id: PeerKey): MeshRuntime {
    const random = prng(Math.floor(this.rand() * 2 ** 32))
    return {
      now: this.now,
      random,
      schedule: (delayMs, fn) => this.clock.schedule(delayMs, fn),
      publish: (frame) => { this.publish(id, frame) },
      request: async (peer, body, opts) => await this.request(id, peer, body, opts.timeoutMs)
    }
  }

  attach (id: PeerKey, endpoint: MeshEndpoint): void {
    this.endpoints.set(id, endpoint)
    if (!this.links.has(id)) this.links.set(id, new Set())
  }

  /** Removes a node (it crashed or stopped): its links go down first. */
  detach (id: PeerKey): void {
    for (const other of [...(this.links.get(id) ?? [])]) this.disconnect(id, other)
    this.endpoints.delete(id)
  }

  connect (a: PeerKey, b: PeerKey): void {
    if (a === b || this.linked(a, b)) return
    this.links.get(a)?.add(b)
    this.links.get(b)?.add(a)
    this.endpoints.get(a)?.peerConnected(b)
    this.endpoints.get(b)?.peerConnected(a)
  }

  disconnect (a: PeerKey, b: PeerKey): void {
    if (!this.linked(a, b)) return
    this.links.get(a)?.delete(b)
    this.links.get(b)?.delete(a)
    this.endpoints.get(a)?.peerDisconnected(b)
    this.endpoints.get(b)?.peerDisconnected(a)
  }

  /** Links every pair of attached nodes. */
  connectAll (): void {
    const ids = [...this.endpoints.keys()]
    for (let i = 0; i < ids.length; i++) for (let j = i + 1; j < ids.length; j++) this.connect(ids[i], ids[j])
  }

  linked (a: PeerKey, b: PeerKey): boolean {
    return this.links.get(a)?.has(b) === true
  }

  /** Runs every event due in the next `ms` of virtual time, letting store work finish after each. */
  async runFor (ms: number): Promise<void> {
    const until = this.clock.now() + ms
    while (this.clock.runNext(until)) await this.settle()
    this.clock.advanceTo(until)
    await this.settle()
  }

  /** Runs until `done()` holds (checked after each event), or throws after `maxMs` of virtual time. */
  async runUntil (done: () => boolean, maxMs: number, what: string): Promise<void> {
    const until = this.clock.now() + maxMs
    await this.settle()
    while (!done()) {
      if (!this.clock.runNext(until)) {
        if (done()) return
        throw new Error(`virtual mesh: ${what} did not happen within ${maxMs} ms of virtual time`)
      }
      await this.settle()
    }
  }

  /** Lets real asynchronous store work (group commits) finish, without moving virtual time. */
  async settle (): Promise<void> {
    do {
      await new Promise<void>(resolve => { setImmediate(resolve) })
    } while ([...this.endpoints.values()].some(e => e.busy))
  }

  private delay (): number {
    const [lo, hi] = this.model.latencyMs
    return lo + Math.floor(this.rand() * (hi - lo + 1))
  }

  /** Every node reachable from `from` over live links. */
  private component (from: PeerKey): PeerKey[] {
    const seen = new Set<PeerKey>([from])
    const todo = [from]
    while (todo.length > 0) {
      const x = todo.pop()!
      for (const y of [...(this.links.get(x) ?? [])].sort()) {
        if (!seen.has(y)) { seen.add(y); todo.push(y) }
      }
    }
    seen.delete(from)
    return [...seen].sort()
  }

  private publish (from: PeerKey, frame: Uint8Array): void {
    this.counters.framesPublished++
    const bytes = frame.slice()
    for (const to of this.component(from)) {
      if (this.rand() < this.model.gossipLoss) continue
      const copies = this.rand() < this.model.gossipDup ? 2 : 1
      for (let i = 0; i < copies; i++) {
        this.clock.schedule(this.delay(), () => {
          const ep = this.endpoints.get(to)
          if (ep === undefined) return
          this.counters.framesDelivered++
          this.counters.frameBytesDelivered += bytes.length
          const relay = this.linked(to, from) ? from : undefined
          this.counters.verdicts[ep.onGossip(from, bytes, relay)]++
        })
      }
    }
  }

  private async request (from: PeerKey, to: PeerKey, body: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    this.counters.requests++
    this.counters.requestBytes += body.length
    return await new Promise<Uint8Array>((resolve, reject) => {
      let settled = false
      const finish = (fn: () => void): void => {
        if (settled) return
        settled = true
        cancelTimeout()
        fn()
      }
      const cancelTimeout = this.clock.schedule(timeoutMs, () => { finish(() => { reject(new Error(`request to ${to} timed out`)) }) })
      if (!this.linked(from, to)) {
        this.clock.schedule(0, () => { finish(() => { reject(new Error(`no connection to ${to}`)) }) })
        return
      }
      if (this.rand() < this.model.requestLoss) { this.counters.requestsLost++; return }
      const replyLost = this.rand() < this.model.requestLoss
      this.clock.schedule(this.delay(), () => {
        const ep = this.endpoints.get(to)
        if (ep === undefined || !this.linked(from, to)) return
        ep.handleRequest(from, body.slice()).then((reply) => {
          if (replyLost) { this.counters.requestsLost++; return }
          this.clock.schedule(this.delay(), () => {
            if (!this.linked(from, to)) { finish(() => { reject(new Error(`connection to ${to} closed`)) }); return }
            this.counters.replyBytes += reply.length
            finish(() => { resolve(reply) })
          })
        }, (err: unknown) => { finish(() => { reject(err instanceof Error ? err : new Error(String(err))) }) })
      })
    })
  }
}
