/**
 * An in-process, deterministic runtime for the mesh core: many nodes in one
 * process on the engine's virtual clock (scheduler.ts), every message's
 * delay, loss and duplication decided by the engine's link model
 * (link-model.ts) from one seed, and links that come and go. Given a seed
 * and the same calls, a run replays exactly (the stores' own clocks must be
 * the virtual clock too: pass `mesh.now` to them).
 *
 * Gossip is modelled as reaching every node in the sender's connected
 * component, each copy its own message on the link model (kind `gossip`,
 * no order kept between copies): no gossipsub mesh degree or IHAVE/IWANT,
 * which the simulator models. A pull is a `request` message and a `reply`
 * message, each its own transit; a lost one leaves the caller to its
 * timeout, a link that goes down fails the requests across it at once (the
 * stream closes), and a reply over MAX_MESSAGE_BYTES is refused as the
 * libp2p adapter refuses it.
 *
 * Real stores do real (synchronous SQLite, `setImmediate`-batched) work:
 * after each virtual event the driver lets that work finish, waiting until
 * no node reports itself busy, before it moves time on.
 */
import { MAX_MESSAGE_BYTES } from '../messages.js'
import type { GossipVerdict } from '../protocol/gossip-intake.js'
import type { MeshEndpoint, MeshRuntime, PeerKey } from '../protocol/runtime.js'
import { parseLatency } from './latency.js'
import { DEFAULT_LINK, LinkModel } from './link-model.js'
import { Prng } from './prng.js'
import { Scheduler } from './scheduler.js'

export type { MeshEndpoint }

/** What the virtual mesh drives on a node: a MeshCore fits (`busy`: store work under way, which the mesh waits for). */
type Endpoint = MeshEndpoint & { readonly busy?: boolean }

export interface VirtualLinkOptions {
  /** One-way delay per message: a latency spec (latency.ts: `uniform:1:20`, `regions:3:80`…); nodes are numbered in the order they attach. */
  latency: string
  /** Probability that one receiver's copy of a gossip frame is lost. */
  gossipLoss: number
  /** Probability that a delivered gossip frame arrives a second time (gossipsub's seen-cache expired, a replaying peer). */
  gossipDup: number
  /** Probability that a pull request, or its reply, is lost (the caller then times out). */
  requestLoss: number
}

interface VirtualMeshOptions extends Partial<VirtualLinkOptions> {
  seed: number | string
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

interface PendingRequest { from: PeerKey, to: PeerKey, fail: (err: Error) => void }

export class VirtualMesh {
  readonly clock: Scheduler
  /** The link model every message crosses; its `cfg` may be changed between events (`setLoss`). */
  readonly links: LinkModel
  readonly counters: NetworkCounters = {
    framesPublished: 0, framesDelivered: 0, frameBytesDelivered: 0, verdicts: { accept: 0, reject: 0, ignore: 0 },
    requests: 0, requestBytes: 0, replyBytes: 0, requestsLost: 0
  }

  private readonly rng: Prng
  private readonly endpoints = new Map<PeerKey, Endpoint>()
  private readonly adjacent = new Map<PeerKey, Set<PeerKey>>()
  /** Node numbers for the latency model, in attach order (kept across a detach). */
  private readonly numbers = new Map<PeerKey, number>()
  private readonly runtimes = new Map<PeerKey, number>()
  private readonly pending = new Set<PendingRequest>()

  constructor (opts: VirtualMeshOptions) {
    this.rng = new Prng(opts.seed)
    this.clock = new Scheduler(opts.startMs ?? 1_700_000_000_000)
    const requestLoss = opts.requestLoss ?? 0
    this.links = new LinkModel(this.rng.fork('links'), {
      ...DEFAULT_LINK,
      latency: parseLatency(opts.latency ?? 'uniform:1:20'),
      byKind: { gossip: { loss: opts.gossipLoss ?? 0, duplicate: opts.gossipDup ?? 0 }, request: { loss: requestLoss }, reply: { loss: requestLoss } }
    })
  }

  /** The virtual wall clock, for the nodes' stores. */
  readonly now = (): number => this.clock.now

  /** Sets the loss of gossip copies or of pull messages (requests and replies) from now on. */
  setLoss (kind: 'gossip' | 'request', p: number): void {
    const byKind = this.links.cfg.byKind ??= {}
    for (const k of kind === 'gossip' ? ['gossip'] : ['request', 'reply']) byKind[k] = { ...byKind[k], loss: p }
  }

  /** The runtime node `id` gives its core; its randomness is its own seeded stream (a new one per call: a restarted core). */
  runtime (id: PeerKey): MeshRuntime {
    const life = (this.runtimes.get(id) ?? 0) + 1
    this.runtimes.set(id, life)
    const rng = this.rng.fork(`runtime/${id}/${life}`)
    return {
      now: this.now,
      monotonic: this.now,
      random: () => rng.next(),
      schedule: (delayMs, fn) => this.clock.after(delayMs, fn),
      publish: (frame) => { this.publish(id, frame) },
      request: async (peer, body, opts) => await this.request(id, peer, body, opts.timeoutMs)
    }
  }

  attach (id: PeerKey, endpoint: Endpoint): void {
    this.endpoints.set(id, endpoint)
    if (!this.adjacent.has(id)) this.adjacent.set(id, new Set())
    if (!this.numbers.has(id)) this.numbers.set(id, this.numbers.size)
  }

  /** Removes a node (it crashed or stopped): its links go down first. */
  detach (id: PeerKey): void {
    for (const other of [...(this.adjacent.get(id) ?? [])]) this.disconnect(id, other)
    this.endpoints.delete(id)
  }

  connect (a: PeerKey, b: PeerKey): void {
    if (a === b || this.linked(a, b)) return
    this.adjacent.get(a)?.add(b)
    this.adjacent.get(b)?.add(a)
    this.endpoints.get(a)?.peerConnected(b)
    this.endpoints.get(b)?.peerConnected(a)
  }

  /** Takes the link down: requests across it fail (their stream closed), then both ends hear of it. */
  disconnect (a: PeerKey, b: PeerKey): void {
    if (!this.linked(a, b)) return
    this.adjacent.get(a)?.delete(b)
    this.adjacent.get(b)?.delete(a)
    for (const p of [...this.pending]) {
      if ((p.from === a && p.to === b) || (p.from === b && p.to === a)) p.fail(new Error(`connection to ${p.to} closed`))
    }
    this.endpoints.get(a)?.peerDisconnected(b)
    this.endpoints.get(b)?.peerDisconnected(a)
  }

  /** Links every pair of attached nodes. */
  connectAll (): void {
    const ids = [...this.endpoints.keys()]
    for (let i = 0; i < ids.length; i++) for (let j = i + 1; j < ids.length; j++) this.connect(ids[i], ids[j])
  }

  linked (a: PeerKey, b: PeerKey): boolean {
    return this.adjacent.get(a)?.has(b) === true
  }

  /** Runs every event due in the next `ms` of virtual time, letting store work finish after each. */
  async runFor (ms: number): Promise<void> {
    await this.clock.run({ until: this.clock.now + ms, settle: async () => { await this.settle() } })
    await this.settle()
  }

  /** Runs until `done()` holds (checked after each event), or throws after `maxMs` of virtual time. */
  async runUntil (done: () => boolean, maxMs: number, what: string): Promise<void> {
    const until = this.clock.now + maxMs
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
    } while ([...this.endpoints.values()].some(e => e.busy === true))
  }

  private number (id: PeerKey): number {
    return this.numbers.get(id) ?? 0
  }

  /** Every node reachable from `from` over live links. */
  private component (from: PeerKey): PeerKey[] {
    const seen = new Set<PeerKey>([from])
    const todo = [from]
    while (todo.length > 0) {
      const x = todo.pop()!
      for (const y of [...(this.adjacent.get(x) ?? [])].sort()) {
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
      const t = this.links.transit(this.clock.now, this.number(from), this.number(to), 'gossip', bytes.length)
      if (t.lost !== undefined) continue
      for (const at of t.again === undefined ? [t.arrive] : [t.arrive, t.again]) {
        this.clock.at(at, () => {
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
        this.pending.delete(entry)
        fn()
      }
      const entry: PendingRequest = { from, to, fail: (err) => { finish(() => { reject(err) }) } }
      const cancelTimeout = this.clock.after(timeoutMs, () => { entry.fail(new Error(`request to ${to} timed out`)) })
      if (!this.linked(from, to)) {
        this.clock.after(0, () => { entry.fail(new Error(`no connection to ${to}`)) })
        return
      }
      this.pending.add(entry)
      const sent = this.links.transit(this.clock.now, this.number(from), this.number(to), 'request', body.length)
      if (sent.lost !== undefined) { this.counters.requestsLost++; return }
      this.clock.at(sent.arrive, () => {
        const ep = this.endpoints.get(to)
        if (settled || ep === undefined || !this.linked(from, to)) return
        ep.handleRequest(from, body.slice()).then((reply) => {
          if (settled) return
          const back = this.links.transit(this.clock.now, this.number(to), this.number(from), 'reply', reply.length)
          if (back.lost !== undefined) { this.counters.requestsLost++; return }
          this.clock.at(back.arrive, () => {
            if (reply.length > MAX_MESSAGE_BYTES) { entry.fail(new Error(`reply of ${reply.length} bytes from ${to} is over the ${MAX_MESSAGE_BYTES}-byte limit`)); return }
            this.counters.replyBytes += reply.length
            finish(() => { resolve(reply) })
          })
        }, (err: unknown) => { entry.fail(err instanceof Error ? err : new Error(String(err))) })
      })
    })
  }
}
