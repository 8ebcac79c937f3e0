/**
 * The connection plan: the node's rule (random members up to the target)
 * and region-aware dialing (--dial regions), which keeps most connections
 * inside a region and a few across, so every region stays reachable from
 * every other while little traffic crosses between them.
 */
import { describe, expect, it } from 'vitest'
import { parseLatency, Prng } from '../../src/mesh/testing/index.js'
import { planConnections, regionLinks } from '../../sim/net/topology.js'
import { resolveOptions, runScenario, type SimOptions } from '../../sim/index.js'
import { nodeSettings } from '../../sim/scenario/node-config.js'

const nodes = (n: number): number[] => [...Array(n).keys()]

describe('region-aware dialing', () => {
  it('keeps 3 regions connected to each other with few links between them; random dialing crosses regions on most links', () => {
    const regionOf = parseLatency('regions:3:80').regionOf!
    for (const seed of ['1', '2', '3', '4', '5']) {
      for (const crossPeers of [1, 2]) {
        const plan = planConnections(new Prng(seed), nodes(30), 8, { regionOf, crossPeers })
        const r = regionLinks(plan, regionOf, nodes(30))
        expect(r.regionsConnected, `seed ${seed}`).toBe(true)
        expect(r.between / plan.length, `seed ${seed}, ${crossPeers} across`).toBeLessThan(crossPeers === 1 ? 0.2 : 0.3)
        // Every node still holds its target, inbound ones counting.
        const degree = nodes(30).map(n => plan.filter(([a, b]) => a === n || b === n).length)
        expect(Math.min(...degree)).toBeGreaterThanOrEqual(8)
      }
      const random = regionLinks(planConnections(new Prng(seed), nodes(30), 8), regionOf, nodes(30))
      expect(random.between / (random.between + random.inside)).toBeGreaterThan(0.5)
    }
  })

  it('fills from other regions when a node\'s own region is too small for its target', () => {
    const regionOf = parseLatency('regions:3:80').regionOf! // 12 nodes: 4 per region, 3 neighbours at home
    const plan = planConnections(new Prng('small'), nodes(12), 8, { regionOf, crossPeers: 1 })
    const degree = nodes(12).map(n => plan.filter(([a, b]) => a === n || b === n).length)
    expect(Math.min(...degree)).toBeGreaterThanOrEqual(8)
    const r = regionLinks(plan, regionOf, nodes(12))
    expect(r.inside).toBe(18) // every pair inside each region: 3 × C(4, 2)
    expect(r.regionsConnected).toBe(true)
  })

  it('runs as the node\'s option: fewer bytes between regions, the regions still connected, everything delivered', async () => {
    const o: Partial<SimOptions> = {
      scenario: 'baseline', profile: 'library', nodes: [9], seed: 'dial', latency: 'regions:3:80', warmup: 3, duration: 3, tail: 4, rate: 30, targetPeers: 4
    }
    const random = (await runScenario(o)).report
    const near = (await runScenario({ ...o, dial: 'regions', crossRegionPeers: 1 })).report
    expect(near.options).toMatchObject({ dial: 'regions', crossRegionPeers: 1 })
    // The node's region-aware dialing: its option, which tells these regions apart by round trip (2 ms inside, 160 ms between).
    expect(near.node.env).toEqual({ META_CORE_TARGET_PEERS: '4', META_CORE_CROSS_REGION_PEERS: '1' })
    expect(random.node.env).toEqual({ META_CORE_TARGET_PEERS: '4' })
    for (const r of [random, near]) {
      expect(r.converged).toBe(true)
      expect(r.lostWrites).toBe(0)
      expect(r.runs[0].regions?.regionsConnected).toBe(true)
    }
    expect(near.runs[0].regions!.connections.between).toBeLessThan(random.runs[0].regions!.connections.between)
    expect(near.runs[0].regions!.bytesBetween).toBeLessThan(random.runs[0].regions!.bytesBetween)
    await expect(runScenario({ ...o, latency: '100', dial: 'regions' })).rejects.toThrow(/--dial regions needs a latency with regions/)
  }, 120_000)

  it('is model only where a node could not run it: no link across, or regions a node cannot tell apart by round trip', () => {
    const base = resolveOptions({ scenario: 'baseline', profile: 'library', latency: 'regions:3:80', dial: 'regions', crossRegionPeers: 2 }).opts
    expect(nodeSettings(base).env).toEqual({ META_CORE_CROSS_REGION_PEERS: '2' })
    expect(nodeSettings({ ...base, crossRegionPeers: 0 }).modelOnly.join()).toMatch(/keeps 1 to 16 connections across regions/)
    expect(nodeSettings({ ...base, latency: 'regions:3:12:5' }).modelOnly.join()).toMatch(/do not look apart/) // 24 ms against 10 ms
    expect(nodeSettings({ ...base, latency: 'regions:world3' }).runnable).toBe(true)
  }, 120_000)
})
