/**
 * Every profile the simulator checks is one a node can be set to run, with
 * the node's own options (src/node/config.ts); anything else is marked
 * model only in the report.
 */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/node/index.js'
import { PROFILES, resolveOptions } from '../../sim/scenario/scenarios.js'
import { nodeSettings } from '../../sim/scenario/node-config.js'
import type { SimOptions } from '../../sim/scenario/options.js'

describe('the node configuration of a simulation', () => {
  it('sets every profile with node options, which the node parses back into the same values', async () => {
    for (const profile of Object.keys(PROFILES) as Array<SimOptions['profile']>) {
      const { opts } = resolveOptions({ scenario: 'baseline', profile })
      const s = nodeSettings(opts)
      expect(s.modelOnly, profile).toEqual([])
      expect(s.runnable).toBe(true)
      const r = await parseConfig([], s.env, '/srv')
      if (r.kind !== 'config') throw new Error('expected a config')
      expect({ targetPeers: r.config.targetPeers, D: r.config.gossipD, Dlo: r.config.gossipDlo, Dhi: r.config.gossipDhi, flushMs: r.config.pushWindowMs,
        antiEntropy: r.config.antiEntropyMs })
        .toEqual({ targetPeers: opts.targetPeers, D: opts.D, Dlo: opts.Dlo, Dhi: opts.Dhi, flushMs: opts.flushMs, antiEntropy: opts.antiEntropy })
    }
    expect(nodeSettings(resolveOptions({ scenario: 'baseline', profile: 'library' }).opts).env).toEqual({})
    expect(nodeSettings(resolveOptions({ scenario: 'baseline', profile: 'batched' }).opts).env).toEqual({
      META_CORE_TARGET_PEERS: '10', META_CORE_GOSSIP_D: '2', META_CORE_GOSSIP_DLO: '2', META_CORE_GOSSIP_DHI: '3', META_CORE_PUSH_WINDOW_MS: '500',
        META_CORE_ANTI_ENTROPY_MS: '30000'
    })
  })

  it('derives Dout from the degree as the node does, and marks what no node option sets as model only', () => {
    expect(resolveOptions({ profile: 'library', D: 2, Dlo: 2, Dhi: 3 }).opts.Dout).toBe(1)
    const lazy = nodeSettings(resolveOptions({ profile: 'library', Dlazy: 3 }).opts)
    expect(lazy.runnable).toBe(false)
    expect(lazy.modelOnly.join()).toMatch(/--gossip-dlazy 3: a node runs 6/)
    expect(nodeSettings(resolveOptions({ profile: 'library', Dout: 1 }).opts).modelOnly.join()).toMatch(/gossip-dout 1/)
    expect(nodeSettings(resolveOptions({ targetPeers: 500 }).opts).modelOnly.join()).toMatch(/META_CORE_TARGET_PEERS=500: the node takes whole numbers from 0 to 100/)
    expect(nodeSettings(resolveOptions({ flushBytes: 1000 }).opts).runnable).toBe(false)
  })
})
