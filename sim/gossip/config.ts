/**
 * Gossipsub parameters. Defaults are those of @libp2p/gossipsub 17.1.1 (the
 * version the node runs, design/stack.md): `src/constants.ts` and the option
 * defaults in the `GossipSub` constructor (`src/gossipsub.ts`), checked
 * against the installed library by test/sim/gossip-constants.test.ts. A
 * scenario that tunes one says so in its report (`node.modelOnly` when no
 * node option sets it).
 */
export interface GossipConfig {
  /** Target mesh degree (GossipsubD = 6). */
  D: number
  /** Graft below this many mesh peers (GossipsubDlo = 4). */
  Dlo: number
  /** Prune above this many (GossipsubDhi = 12). */
  Dhi: number
  /** Peers kept by score when pruning (GossipsubDscore = 4); scores are all equal here, so this only orders the choice. */
  Dscore: number
  /** Outbound mesh peers kept (GossipsubDout = 2). */
  Dout: number
  /** Minimum peers sent IHAVE per heartbeat (GossipsubDlazy = 6). */
  Dlazy: number
  /** IHAVE goes to max(Dlazy, gossipFactor × non-mesh peers) (GossipsubGossipFactor = 0.25). */
  gossipFactor: number
  /** GossipsubHeartbeatInterval = 1 s. */
  heartbeatMs: number
  /** GossipsubHeartbeatInitialDelay = 100 ms. */
  heartbeatInitialDelayMs: number
  /** Heartbeats a message stays in the cache (GossipsubHistoryLength = 5). */
  mcacheLength: number
  /** Heartbeats whose messages are advertised in IHAVE (GossipsubHistoryGossip = 3). */
  mcacheGossip: number
  /** Seen-cache time to live (GossipsubSeenTTL = 2 min). */
  seenTtlMs: number
  /** GossipsubFanoutTTL = 1 min. */
  fanoutTtlMs: number
  /** GossipsubPruneBackoff = 1 min. */
  pruneBackoffMs: number
  /** Publish to every subscribed peer, not just the mesh (constructor default `floodPublish: true`). */
  floodPublish: boolean
  /** Messages with at least this many data bytes trigger IDONTWANT to mesh peers (GossipsubIdontwantMinDataSize = 512). */
  idontwantMinDataSize: number
  /** IDONTWANT ids accepted per peer per heartbeat (GossipsubIdontwantMaxMessages = 512). */
  idontwantMaxMessages: number
  /** GossipsubMaxIHaveLength = 5000. */
  maxIHaveLength: number
  /** GossipsubMaxIHaveMessages = 10. */
  maxIHaveMessages: number
  /** GossipsubMaxIWantMessages = 10. */
  maxIWantMessages: number
  /** GossipsubGossipRetransmission = 3. */
  gossipRetransmission: number
}

export const GOSSIPSUB_DEFAULTS: Readonly<GossipConfig> = Object.freeze({
  D: 6,
  Dlo: 4,
  Dhi: 12,
  Dscore: 4,
  Dout: 2,
  Dlazy: 6,
  gossipFactor: 0.25,
  heartbeatMs: 1000,
  heartbeatInitialDelayMs: 100,
  mcacheLength: 5,
  mcacheGossip: 3,
  seenTtlMs: 120_000,
  fanoutTtlMs: 60_000,
  pruneBackoffMs: 60_000,
  floodPublish: true,
  idontwantMinDataSize: 512,
  idontwantMaxMessages: 512,
  maxIHaveLength: 5000,
  maxIHaveMessages: 10,
  maxIWantMessages: 10,
  gossipRetransmission: 3
})

export class InvalidGossipConfigError extends Error {
  constructor (why: string) {
    super(`invalid gossipsub parameters: ${why}`)
    this.name = 'InvalidGossipConfigError'
  }
}

/** The constraints gossipsub itself states (Dout < Dlo, Dout ≤ D/2, Dlo ≤ D ≤ Dhi, mcacheGossip ≤ mcacheLength). */
export function checkGossipConfig (c: GossipConfig): GossipConfig {
  if (!(c.Dlo <= c.D && c.D <= c.Dhi)) throw new InvalidGossipConfigError(`need Dlo <= D <= Dhi, got ${c.Dlo}, ${c.D}, ${c.Dhi}`)
  if (c.Dout >= c.Dlo && c.Dlo > 0) throw new InvalidGossipConfigError(`need Dout < Dlo, got ${c.Dout} and ${c.Dlo}`)
  if (c.Dout > c.D / 2) throw new InvalidGossipConfigError(`need Dout <= D/2, got ${c.Dout} and D=${c.D}`)
  if (c.mcacheGossip > c.mcacheLength) throw new InvalidGossipConfigError('mcacheGossip must not exceed mcacheLength')
  if (!(c.heartbeatMs > 0)) throw new InvalidGossipConfigError('heartbeat must be > 0 ms')
  return c
}
