/**
 * The real-stack mode's network: the model's network options applied to the
 * real nodes' connections, buffer by buffer, through the adapter's link
 * control (src/mesh/libp2p/delayed-link.ts) and the engine's link model
 * (src/mesh/testing/link-model.ts), so both runs draw delays from the same
 * model: the latency spec (a region matrix, jitter), loss and loss between
 * regions, upload and download bandwidth. And partitions: a buffer between
 * two sides of a cut waits until the heal, as a TCP stream does.
 *
 * What differs from the model, by nature: loss applies per buffer of a
 * stream and always as retransmission delay (a stream cannot lose a buffer
 * and go on; `--loss-mode drop` is run as `retransmit`); the bytes counted
 * are every byte on the connections (handshakes, identify, ping, muxer
 * window updates and framing too), where the model counts its protocol
 * messages with their framing.
 */
import type { LinkControl } from '../../src/mesh/libp2p/index.js'
import { DEFAULT_LINK, LinkModel, parseLatency, type Prng } from '../../src/mesh/testing/index.js'
import type { SimOptions } from '../scenario/options.js'

export class RealLinks implements LinkControl {
  private readonly model: LinkModel
  private readonly index = new Map<string, number>()
  private group = new Map<number, number>()
  private readonly listeners = new Set<() => void>()
  /** Bytes that crossed, in all and inside `window` (ms on `now`'s clock). */
  bytes = 0
  windowBytes = 0
  window: [number, number] = [0, Infinity]

  constructor (o: SimOptions, rng: Prng, private readonly now: () => number) {
    this.model = new LinkModel(rng, {
      ...DEFAULT_LINK,
      latency: parseLatency(o.latency, o.jitter),
      loss: o.loss,
      lossBetweenRegions: o.lossBetweenRegions,
      lossMode: 'retransmit',
      uplinkBps: o.bandwidth * 1_000_000,
      downlinkBps: o.downlink * 1_000_000
    })
  }

  /** Node `index` of the model is the peer `peerId`. */
  add (peerId: string, index: number): void {
    this.index.set(peerId, index)
  }

  delayMs (from: string, to: string, bytes: number): number | null {
    const a = this.index.get(from)
    const b = this.index.get(to)
    const now = this.now()
    if (a === undefined || b === undefined) return this.model.cfg.latency.mean(0, 1)
    const t = this.model.transit(now, a, b, 'buffer', bytes, { reachable: (this.group.get(a) ?? 0) === (this.group.get(b) ?? 0) })
    if (t.lost !== undefined) return null // only a partition: loss is retransmission delay here
    this.bytes += bytes
    if (now >= this.window[0] && now < this.window[1]) this.windowBytes += bytes
    return Math.max(0, t.arrive - now)
  }

  onChange (listener: () => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** Cuts the nodes into groups (unlisted nodes form group 0), as the model's network does. */
  partition (groups: readonly number[][]): void {
    this.group = new Map()
    groups.forEach((g, i) => { for (const n of g) this.group.set(n, i + 1) })
  }

  /** Heals every cut: buffers held at a cut cross now. */
  heal (): void {
    this.group = new Map()
    for (const l of [...this.listeners]) l()
  }
}
