/**
 * Region-aware dialing on what a node can measure: the round-trip time to
 * its peers (one ping when a connection opens; libp2p's connection monitor
 * measures it again every 10 s). A peer's round trip is the least sample of
 * the last minute (SAMPLE_WINDOW_MS): a sample is the path's delay plus
 * whatever queued it (a busy event loop on either side, a full link), so the
 * least one is the path, and one taken at a busy moment never makes a near
 * member far; a path that got longer shows within the minute. A member is
 * near when its RTT is within twice the nearest measured member's, and within
 * 20 ms of it at least; far otherwise. Inside a LAN or a cloud region RTTs
 * are a few milliseconds, between regions tens to hundreds, so near is "my
 * region" without the node being told its region.
 *
 * With `crossPeers` > 0 the membership (libp2p/membership.ts) keeps that many
 * connections to far members and fills the rest of its target with near
 * ones; a member never measured is tried between the two (dialing it is how
 * its RTT is learned). A far connection beyond `crossPeers` that this node
 * dialed gives way, one per tick, while a near or unmeasured member waits;
 * inbound ones and the bootstrap peers are never given up (another node may
 * count on them as its own link out). Plain data, no libp2p. The simulator
 * models the same rule (`--dial regions --cross-region-peers N`, with its
 * latency matrix's regions as near and far).
 */
/** A member is far when its RTT is above this many times the nearest one's… */
const FAR_FACTOR = 2
/** …and above the nearest one's plus this (ms): jitter on a LAN is no region. */
const FAR_MARGIN_MS = 20

/** Whether a round trip of `rttMs` is far for a node whose nearest member is `nearestMs` away. */
export function isFar (rttMs: number, nearestMs: number): boolean {
  return rttMs > Math.max(FAR_FACTOR * nearestMs, nearestMs + FAR_MARGIN_MS)
}

/** How long a round-trip sample counts (ms): a peer's round trip is the least sample within it. */
export const SAMPLE_WINDOW_MS = 60_000
/** Samples kept per peer (a connection's figure is recorded at every look, every few seconds). */
const MAX_SAMPLES = 32

export type Distance = 'near' | 'far' | 'unknown'

export class PeerDistance {
  /** Per peer: its samples, oldest first (`at`: the wall time they were taken, ms). */
  private readonly samples = new Map<string, Array<{ ms: number, at: number }>>()
  /** Per peer: the least of its samples, its round trip. */
  private readonly rtts = new Map<string, number>()

  constructor (readonly crossPeers: number) {}

  /**
   * A measured round trip to `peer` (ms) at `now` (ms). Samples older than
   * SAMPLE_WINDOW_MS give way to it; the newest are kept after the
   * connection drops.
   */
  record (peer: string, rttMs: number, now: number): void {
    if (!Number.isFinite(rttMs) || rttMs < 0) return
    const list = (this.samples.get(peer) ?? []).filter(x => now - x.at < SAMPLE_WINDOW_MS)
    list.push({ ms: rttMs, at: now })
    if (list.length > MAX_SAMPLES) list.splice(0, list.length - MAX_SAMPLES)
    this.samples.set(peer, list)
    this.rtts.set(peer, Math.min(...list.map(x => x.ms)))
  }

  rtt (peer: string): number | undefined {
    return this.rtts.get(peer)
  }

  kind (peer: string): Distance {
    const rtt = this.rtts.get(peer)
    if (rtt === undefined) return 'unknown'
    return isFar(rtt, Math.min(...this.rtts.values())) ? 'far' : 'near'
  }

  farCount (peers: Iterable<string>): number {
    let n = 0
    for (const p of peers) if (this.kind(p) === 'far') n++
    return n
  }

  /**
   * Puts first the members this node needs (far ones while it holds fewer
   * than `crossPeers` far connections, else near ones), then the unmeasured,
   * then the rest; the order within each group is kept (the caller shuffled).
   */
  order<T> (candidates: Array<[string, T]>, connected: Iterable<string>): void {
    const wantFar = this.farCount(connected) < this.crossPeers
    const rank = (peer: string): number => {
      const k = this.kind(peer)
      return k === 'unknown' ? 1 : (k === 'far') === wantFar ? 0 : 2
    }
    candidates.sort((a, b) => rank(a[0]) - rank(b[0]))
  }

  /**
   * What region-aware dialing does besides dialing up to the target in
   * `order`'s order, given the connections (`outbound`: this node dialed it;
   * `keep`: never given up) and the members waiting to be dialed:
   * - fewer far connections than `crossPeers` while a far or unmeasured
   *   member waits: dial one over the target (`extra`), or, one over it
   *   already (the try was near), give up a near connection this node dialed
   *   to make room for the next try;
   * - more far connections than `crossPeers` at the target while a near or
   *   unmeasured member waits: give up the farthest far one this node
   *   dialed (`park`: not to be dialed again soon).
   */
  step (connections: ReadonlyArray<{ peer: string, outbound: boolean, keep: boolean }>, waiting: readonly string[],
    target: number): { extra: boolean, drop?: { peer: string, park: boolean } } {
    const far = connections.filter(c => this.kind(c.peer) === 'far')
    const spare = (kind: Distance): string | undefined => connections
      .filter(c => c.outbound && !c.keep && this.kind(c.peer) === kind)
      .sort((a, b) => (this.rtts.get(b.peer) ?? 0) - (this.rtts.get(a.peer) ?? 0))[0]?.peer
    if (far.length < this.crossPeers && waiting.some(p => this.kind(p) !== 'near')) {
      if (connections.length <= target) return { extra: true }
      const peer = spare('near')
      return peer === undefined ? { extra: false } : { extra: false, drop: { peer, park: false } }
    }
    if (far.length > this.crossPeers && connections.length >= target && waiting.some(p => this.kind(p) !== 'far')) {
      const peer = spare('far')
      if (peer !== undefined) return { extra: false, drop: { peer, park: true } }
    }
    return { extra: false }
  }
}
