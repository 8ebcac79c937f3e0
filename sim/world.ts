/**
 * A simulated mesh: the scheduler, the network, the nodes and the metrics
 * of one run, and the wait that keeps store work in step with virtual time.
 *
 * Determinism: every random choice comes from a stream forked from the
 * run's seed (per node, per life of a node, per link model, per workload);
 * node ids are derived from the seed; stores run on the virtual clock. After
 * any task that may have started store work, the world waits on Node's own
 * event loop until every node it touched is idle (`MeshCore.busy`) and every
 * client write has committed, so that work lands at the virtual time that
 * started it, in the same order every run.
 */
import { Prng, Scheduler, parseLatency } from '../src/mesh/testing/index.js'
import { checkGossipConfig, GOSSIPSUB_DEFAULTS, type GossipConfig } from './gossip/config.js'
import { VirtualCpu, type CpuCosts } from './cpu.js'
import { Metrics } from './metrics/collector.js'
import { DEFAULT_NET, Network, type LinkMode, type LossMode } from './net/network.js'
import { SimNode, type NodeWorld } from './node/sim-node.js'
import type { MeshOptions } from '../src/mesh/protocol/index.js'

interface WorldSpec {
  seed: string
  latency: string
  link: LinkMode
  jitterMs: number
  loss: number
  lossBetweenRegions: number
  lossMode: LossMode
  /** Upload bandwidth per node in bits/s (0: unlimited). */
  uplinkBps: number
  /** Download bandwidth per node in bits/s (0: unlimited). */
  downlinkBps: number
  gossip: Partial<GossipConfig>
  mesh: Partial<MeshOptions>
  /** The virtual CPU's costs (sim/cpu.ts), scaled already; all 0: processing takes no virtual time. */
  cpu: CpuCosts
  /** Every node on one CPU (the real-stack comparison: its nodes share one thread). */
  cpuShared?: boolean
}

/** 1 January 2025, 00:00 UTC: virtual time 0 on every node's wall clock (plus its skew). */
const EPOCH_MS = Date.UTC(2025, 0, 1)
/** Shaped like the node's topic, `/meta-core/mesh/<16 hex digits of the swarm key's id>/1`, so RPC sizes match. */
export const TOPIC = '/meta-core/mesh/0123456789abcdef/1'

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** A string shaped like an Ed25519 libp2p peer id (52 characters), so frames and keys have their real sizes. */
function fakePeerId (rng: Prng): string {
  let s = '12D3KooW'
  while (s.length < 52) s += BASE58[rng.int(58)]
  return s
}

export class World implements NodeWorld {
  readonly sched = new Scheduler()
  readonly rng: Prng
  readonly net: Network
  readonly metrics: Metrics
  readonly gossip: GossipConfig
  readonly mesh: Partial<MeshOptions>
  readonly cpu: CpuCosts
  /** The one CPU every node runs on, with `cpuShared`. */
  readonly sharedCpu: VirtualCpu | undefined
  readonly topic = TOPIC
  readonly epochMs = EPOCH_MS
  readonly nodes: SimNode[] = []
  readonly failures: string[] = []
  private readonly byPeerId = new Map<string, number>()
  private readonly touched = new Set<number>()
  private clientWrites = 0
  private msgIds = 0

  constructor (readonly spec: WorldSpec) {
    this.rng = new Prng(spec.seed)
    this.metrics = new Metrics(() => this.sched.now)
    this.gossip = checkGossipConfig({ ...GOSSIPSUB_DEFAULTS, ...spec.gossip })
    this.mesh = spec.mesh
    this.cpu = spec.cpu
    this.sharedCpu = spec.cpuShared === true ? new VirtualCpu(() => this.sched.now) : undefined
    this.metrics.completion = (i) => this.nodes[i].cpu.doneAt()
    this.net = new Network(this.sched, this.rng.fork('net'), {
      ...DEFAULT_NET,
      latency: parseLatency(spec.latency, spec.jitterMs),
      link: spec.link,
      loss: spec.loss,
      lossBetweenRegions: spec.lossBetweenRegions,
      lossMode: spec.lossMode,
      uplinkBps: spec.uplinkBps,
      downlinkBps: spec.downlinkBps
    }, this.metrics)
    this.metrics.regionOf = this.net.cfg.latency.regionOf
    this.net.attach({
      connected: (n, p, d) => { this.nodes[n].connected(p, d) },
      disconnected: (n, p) => { this.nodes[n].disconnected(p) }
    })
  }

  /** Creates node number `nodes.length` (not started), its store empty or a copy of `image`. */
  addNode (image?: Buffer): SimNode {
    const index = this.nodes.length
    const rng = this.rng.fork(`node-${index}`)
    const peerId = fakePeerId(rng.fork('peer-id'))
    const n = new SimNode(index, peerId, rng, this, image)
    this.nodes.push(n)
    this.byPeerId.set(peerId, index)
    this.metrics.addNode(index)
    return n
  }

  // ------------------------------------------------------------ NodeWorld

  node (index: number): SimNode {
    return this.nodes[index]
  }

  indexOf (peerId: string): number | undefined {
    return this.byPeerId.get(peerId)
  }

  nextMessageId = (): number => ++this.msgIds

  touch (index: number): void {
    this.touched.add(index)
  }

  fail (err: unknown, where: string): void {
    const msg = `${where}: ${err instanceof Error ? err.stack ?? err.message : String(err)}`
    if (this.failures.length < 20) this.failures.push(msg)
  }

  // ------------------------------------------------------------ client writes

  /** Runs a client write on a node's store; the world waits for it before moving time on. */
  clientWrite<T> (op: () => Promise<T>): Promise<T> {
    this.clientWrites++
    return op().finally(() => { this.clientWrites-- })
  }

  // ------------------------------------------------------------ running

  /** Runs every task due up to `untilMs` of virtual time. */
  async runUntil (untilMs: number): Promise<void> {
    await this.sched.run({ until: untilMs, settle: this.settle })
    await this.drain()
  }

  private readonly settle = (): Promise<void> | undefined => {
    if (this.touched.size === 0 && this.clientWrites === 0) return undefined
    return this.drain()
  }

  /**
   * Lets Node's event loop run until the nodes touched since the last wait
   * are idle and no client write is pending. Store commits settle on
   * `setImmediate`, and each turn also drains the promise continuations
   * queued before it.
   */
  private async drain (): Promise<void> {
    for (let turns = 0; ; turns++) {
      await new Promise<void>(resolve => { setImmediate(resolve) })
      for (const i of this.touched) if (!this.nodes[i].busy) this.touched.delete(i)
      if (this.touched.size === 0 && this.clientWrites === 0) return
      if (turns > 100_000) throw new Error('store work did not settle after 100 000 event-loop turns')
    }
  }
}
