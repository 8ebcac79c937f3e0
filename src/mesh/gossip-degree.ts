/**
 * The gossipsub mesh degree a node runs with (D, Dlo, Dhi: node options
 * META_CORE_GOSSIP_D / _DLO / _DHI), and the outbound quota Dout derived
 * from it. Free of libp2p, so the simulator resolves a profile exactly as
 * a node resolves its options.
 *
 * Defaults are @libp2p/gossipsub's (17.1.1: GossipsubD = 6, GossipsubDlo = 4,
 * GossipsubDhi = 12, GossipsubDout = 2); test/sim/gossip-constants.test.ts
 * checks them against the library itself.
 */

export interface GossipDegree {
  /** Target mesh degree. 0: no relaying mesh; flood publishing alone reaches the publisher's peers. */
  D: number
  /** Graft below this many mesh peers. */
  Dlo: number
  /** Prune above this many. */
  Dhi: number
}

export const DEFAULT_GOSSIP_DEGREE: Readonly<GossipDegree> = Object.freeze({ D: 6, Dlo: 4, Dhi: 12 })
/** gossipsub's own Dout (GossipsubDout). */
export const DEFAULT_GOSSIP_DOUT = 2

/**
 * Outbound mesh peers gossipsub keeps: its default (2), lowered to what its
 * own rules allow for the degree (Dout < Dlo, Dout ≤ D/2), so any degree a
 * node is given is one gossipsub accepts.
 */
export function gossipDout (d: GossipDegree): number {
  return Math.max(0, Math.min(DEFAULT_GOSSIP_DOUT, d.Dlo - 1, Math.floor(d.D / 2)))
}

/** Why gossipsub would refuse the degree (Dlo ≤ D ≤ Dhi), or undefined. */
export function gossipDegreeProblem (d: GossipDegree): string | undefined {
  if (!(d.Dlo <= d.D && d.D <= d.Dhi)) return `gossipsub needs Dlo <= D <= Dhi, got Dlo=${d.Dlo}, D=${d.D}, Dhi=${d.Dhi}`
  return undefined
}
