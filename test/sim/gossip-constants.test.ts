/**
 * The gossip model's constants, and the node's mesh-degree defaults, are
 * gossipsub's own: read from the installed @libp2p/gossipsub (its constants
 * module and the options its constructor resolves), so an upgrade that
 * changes one fails here instead of drifting from the model.
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { defaultLogger } from '@libp2p/logger'
import { gossipsub } from '@libp2p/gossipsub'
import { describe, expect, it } from 'vitest'
import { DEFAULT_GOSSIP_DEGREE, DEFAULT_GOSSIP_DOUT, gossipDout } from '../../src/mesh/gossip-degree.js'
import { GOSSIPSUB_DEFAULTS } from '../../sim/gossip/config.js'
import { BASE_DEFAULTS } from '../../sim/scenario/options.js'
import { SYNC_PROTOCOL } from '../../sim/node/sim-node.js'
import { PULL_PROTOCOL } from '../../src/mesh/libp2p/pull-protocol.js'

/** The package's constants module (not in its exports map, so loaded by file). */
async function constants (): Promise<Record<string, number>> {
  const main = createRequire(import.meta.url).resolve('@libp2p/gossipsub')
  return await import(pathToFileURL(path.join(path.dirname(main), 'constants.js')).href) as Record<string, number>
}

describe('gossipsub constants', () => {
  it('the model runs with the constants and constructor defaults of the gossipsub the node runs', async () => {
    const c = await constants()
    const router = gossipsub()({ logger: defaultLogger() } as unknown as Parameters<ReturnType<typeof gossipsub>>[0])
    const opts = (router as unknown as { opts: Record<string, unknown> }).opts
    expect({
      D: opts.D,
      Dlo: opts.Dlo,
      Dhi: opts.Dhi,
      Dscore: opts.Dscore,
      Dout: opts.Dout,
      Dlazy: opts.Dlazy,
      gossipFactor: opts.gossipFactor,
      heartbeatMs: opts.heartbeatInterval,
      heartbeatInitialDelayMs: c.GossipsubHeartbeatInitialDelay,
      mcacheLength: opts.mcacheLength,
      mcacheGossip: opts.mcacheGossip,
      seenTtlMs: opts.seenTTL,
      fanoutTtlMs: opts.fanoutTTL,
      pruneBackoffMs: opts.pruneBackoff,
      floodPublish: opts.floodPublish,
      idontwantMinDataSize: opts.idontwantMinDataSize,
      idontwantMaxMessages: opts.idontwantMaxMessages,
      maxIHaveLength: c.GossipsubMaxIHaveLength,
      maxIHaveMessages: c.GossipsubMaxIHaveMessages,
      maxIWantMessages: c.GossipsubMaxIWantMessages,
      gossipRetransmission: c.GossipsubGossipRetransmission
    }).toEqual({ ...GOSSIPSUB_DEFAULTS })
  })

  it('the node\'s degree defaults, and the simulator\'s, are gossipsub\'s', async () => {
    const c = await constants()
    expect(DEFAULT_GOSSIP_DEGREE).toEqual({ D: c.GossipsubD, Dlo: c.GossipsubDlo, Dhi: c.GossipsubDhi })
    expect(DEFAULT_GOSSIP_DOUT).toBe(c.GossipsubDout)
    expect(gossipDout(DEFAULT_GOSSIP_DEGREE)).toBe(c.GossipsubDout)
    expect({ D: BASE_DEFAULTS.D, Dlo: BASE_DEFAULTS.Dlo, Dhi: BASE_DEFAULTS.Dhi, Dout: BASE_DEFAULTS.Dout })
      .toEqual({ D: c.GossipsubD, Dlo: c.GossipsubDlo, Dhi: c.GossipsubDhi, Dout: c.GossipsubDout })
    // Dout follows gossipsub's rules (Dout < Dlo, Dout <= D/2) for any degree a node is given.
    expect(gossipDout({ D: 2, Dlo: 2, Dhi: 3 })).toBe(1)
    expect(gossipDout({ D: 0, Dlo: 0, Dhi: 0 })).toBe(0)
  })

  it('the model\'s pull protocol id is the node\'s (its bytes count in every request)', () => {
    expect(SYNC_PROTOCOL).toBe(PULL_PROTOCOL)
  })
})
