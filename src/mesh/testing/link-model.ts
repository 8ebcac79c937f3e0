/**
 * The link model: what the network does to one message between two nodes.
 * One model for the virtual mesh (virtual-mesh.ts, the property tests) and
 * the simulator's network (`sim/net/network.ts`, which adds connections,
 * handshakes and partitions around it).
 *
 * A message sent at `now`:
 * - leaves once the sender's uplink has sent what was queued before it
 *   (`uplinkBps`, shared by all its links; unlimited when 0);
 * - takes one sample of the latency model (latency.ts);
 * - is lost with the loss probability of its kind (`byKind`, else `loss`;
 *   between two regions of the latency model, `lossBetweenRegions` on top):
 *   `drop` loses it, `retransmit` delays it one `rtoMs` per lost try, which
 *   is what loss does to a TCP stream;
 * - on a `lane` (one direction of a connection) it never overtakes an
 *   earlier message: `pipelined` delays overlap as on a real link, `serial`
 *   holds each message for the whole delay before the next starts (libp2p's
 *   in-memory transport with its `latency` option); without a lane messages
 *   travel apart and may arrive in any order;
 * - queues on the receiver's downlink (`downlinkBps`) once it arrives;
 * - with the duplicate probability of its kind, arrives a second time, one
 *   more latency sample after it left.
 *
 * Every draw comes from the one seeded stream given, in a fixed order per
 * message (latency, loss, duplicate), and a probability of 0 draws nothing.
 */
import type { LatencyModel } from './latency.js'
import type { Prng } from './prng.js'

export type LossMode = 'drop' | 'retransmit'

/** See the header: how messages on one direction of a connection follow each other. */
export type LinkMode = 'pipelined' | 'serial'

export interface LinkConfig {
  latency: LatencyModel
  link: LinkMode
  /** Probability that one transmission of a message is lost. */
  loss: number
  /** Between regions (the latency model's), a further loss on top of `loss`: 1 − (1 − loss)(1 − this) in all. */
  lossBetweenRegions: number
  lossMode: LossMode
  /** TCP retransmission timeout (Linux's minimum RTO is 200 ms). */
  rtoMs: number
  /** Upload bandwidth of every node in bits/s; 0 = unlimited. */
  uplinkBps: number
  /** Download bandwidth of every node in bits/s (messages to a node queue on it); 0 = unlimited. */
  downlinkBps: number
  /** Probability that a delivered message arrives a second time (a replaying peer, an expired seen-cache). Default 0. */
  duplicate?: number
  /** Per kind of message: a loss or duplicate probability that replaces `loss` or `duplicate` for it. */
  byKind?: Record<string, { loss?: number, duplicate?: number }>
}

/** A lossless link of unlimited bandwidth, pipelined, with Linux's minimum RTO: what is left to set is the latency. */
export const DEFAULT_LINK: Omit<LinkConfig, 'latency'> = {
  link: 'pipelined',
  loss: 0,
  lossBetweenRegions: 0,
  lossMode: 'drop',
  rtoMs: 200,
  uplinkBps: 0,
  downlinkBps: 0
}

/** One direction of a connection: the last arrival on it, which the next message may not precede. */
export interface Lane { last: number }

/** A message's fate: when it arrives (and again, when duplicated), or why it is lost. */
export type Transit = { lost: 'loss' | 'partition' } | { lost?: undefined, arrive: number, again?: number }

export class LinkModel {
  private readonly upBusy = new Map<number, number>()
  private readonly downBusy = new Map<number, number>()

  /** `cfg` is read on every message: changing it (a test raising the loss for a while) takes effect at once. */
  constructor (private readonly rng: Prng, readonly cfg: LinkConfig) {}

  /**
   * One message of `bytes` from node `from` to node `to`, sent at `now`.
   * `reachable: false` (a partition between them) loses it after its loss
   * draws, so the draws of a run do not depend on when partitions fall.
   */
  transit (now: number, from: number, to: number, kind: string, bytes: number, opts: { reachable?: boolean, lane?: Lane } = {}): Transit {
    const c = this.cfg
    let depart = now
    if (c.uplinkBps > 0) {
      depart = Math.max(now, this.upBusy.get(from) ?? 0) + (bytes * 8 * 1000) / c.uplinkBps
      this.upBusy.set(from, depart)
    }
    let delay = c.latency.sample(from, to, this.rng)
    const loss = this.lossOf(from, to, kind)
    if (loss > 0) {
      if (c.lossMode === 'drop') {
        if (this.rng.chance(loss)) return { lost: 'loss' }
      } else {
        // Geometric number of lost tries, each costing one RTO before the resend.
        let tries = 0
        while (tries < 20 && this.rng.chance(loss)) tries++
        delay += tries * c.rtoMs
      }
    }
    if (opts.reachable === false) return { lost: 'partition' }
    const lane = opts.lane
    let arrive = lane === undefined
      ? depart + delay
      : c.link === 'serial' ? Math.max(depart, lane.last) + delay : Math.max(depart + delay, lane.last)
    if (c.downlinkBps > 0) {
      // The receiver's downlink is shared by its connections: a message is in once what arrived before it is.
      arrive = Math.max(arrive, this.downBusy.get(to) ?? 0) + (bytes * 8 * 1000) / c.downlinkBps
      this.downBusy.set(to, arrive)
    }
    if (lane !== undefined) lane.last = arrive
    const dup = c.byKind?.[kind]?.duplicate ?? c.duplicate ?? 0
    if (dup > 0 && this.rng.chance(dup)) return { arrive, again: depart + c.latency.sample(from, to, this.rng) }
    return { arrive }
  }

  /** The probability that one transmission from `from` to `to` of a message of `kind` is lost. */
  lossOf (from: number, to: number, kind: string): number {
    const c = this.cfg
    const loss = c.byKind?.[kind]?.loss ?? c.loss
    const regionOf = c.latency.regionOf
    const between = c.lossBetweenRegions > 0 && regionOf !== undefined && regionOf(from) !== regionOf(to)
    return between ? 1 - (1 - loss) * (1 - c.lossBetweenRegions) : loss
  }
}
