/**
 * A short version of every scenario (few nodes, seconds of virtual time):
 * the checks each run must pass, on the real core over real stores. The
 * full-size runs are `npm run sim -- --scenario NAME`.
 */
import { describe, expect, it } from 'vitest'
import { runScenario, type SimOptions } from '../../sim/index.js'

const SHORT: Partial<SimOptions> = { nodes: [8], warmup: 3, duration: 4, tail: 6, rate: 40, seed: 'test' }

async function run (o: Partial<SimOptions>) {
  const { report } = await runScenario({ ...SHORT, ...o })
  const head = report.runs[report.runs.length - 1]
  expect(head.failures).toEqual([])
  return { report, head }
}

describe('scenarios (short)', () => {
  it('baseline: converges with nothing lost, and counts every message', async () => {
    const { report, head } = await run({ scenario: 'baseline' })
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
    expect(head.operations.writes).toBeGreaterThan(50)
    expect(head.latencyMs.count).toBe(head.operations.writesAcked)
    // Low-latency profile: every node connected to all others, one hop.
    expect(head.topology.connections.p50).toBe(7)
    expect(head.topology.connections.max).toBe(7)
    expect(report.latencyMs.max).toBeLessThan(300)
    const counted = Object.values(head.messages.byKind).reduce((a, k) => a + k.count, 0)
    expect(counted).toBe(head.messages.total)
    expect(report.messagesPerOp).toBeCloseTo(head.messages.total / head.operations.total, 1)
    expect(report.bars.map(b => b.label)).toEqual([expect.stringMatching(/3d/), expect.stringMatching(/3e/)])
    expect(report.node.runnable).toBe(true)
    expect(report.node.command).toMatch(/^META_CORE_TARGET_PEERS=100 META_CORE_GOSSIP_D=0 .* meta-core start$/)
  })

  it('baseline library: a node with default options, checked against both bars', async () => {
    const { report, head } = await run({ scenario: 'baseline', profile: 'library', nodes: [16] })
    expect(report.bars).toHaveLength(2)
    expect(report.node).toMatchObject({ runnable: true, env: {}, command: 'meta-core start' })
    // Every node dialled until it held its target of 8 connections, inbound ones counting.
    expect(head.topology.connections.p50).toBeGreaterThanOrEqual(8)
    expect(head.topology.connections.max).toBeLessThan(15)
    expect(head.topology.connections.mean).toBeGreaterThanOrEqual(8)
  })

  it('baseline batched with partitions: converges after the heal, msgs/op under the 3e bar', async () => {
    const { report, head } = await run({ scenario: 'baseline', profile: 'batched', nodes: [12], duration: 14, partitionEvery: 4, tail: 10 })
    expect(head.timeline.filter(e => e.kind === 'partition').length).toBe(2)
    expect(head.lostMessages.partition).toBeGreaterThan(0)
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
    expect(report.latencyMs.max).toBeGreaterThan(report.latencyMsUnpartitioned.max) // writes born in a partition wait for the heal
    expect(report.messagesPerOp).toBeLessThan(20)
  })

  it('partition-heal: writes from both sides reach everyone after the heal', async () => {
    const { report, head } = await run({ scenario: 'partition-heal', duration: 8, partitionEvery: 3 })
    expect(head.timeline.map(e => e.kind)).toContain('heal')
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
  })

  it('fresh-join: a node with an empty store catches up on every write made before it joined', async () => {
    const { report, head } = await run({ scenario: 'fresh-join', duration: 6, joinAt: 3 })
    expect(report.converged).toBe(true)
    expect(head.catchUp).toHaveLength(1)
    const c = head.catchUp[0]
    expect(c.kind).toBe('fresh-join')
    expect(c.target).toBeGreaterThan(20)
    expect(c.got).toBe(c.target)
    expect(c.timeMs).not.toBeNull()
    expect(c.bytes).toBeGreaterThan(0)
    expect(head.messages.byKind['snap-reply'].count).toBeGreaterThan(0)
  })

  it('return-after-absence: a node down for a while catches up when it returns', async () => {
    const { report, head } = await run({ scenario: 'return-after-absence', duration: 8, absent: 4 })
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
    const c = head.catchUp[0]
    expect(c.kind).toBe('return')
    expect(c.target).toBeGreaterThan(10)
    expect(c.got).toBe(c.target)
    expect(head.timeline.map(e => e.kind)).toEqual(['stop', 'start'])
  })

  it('clock-skew: the node out of bound refuses its writes, nobody else\'s are refused or delayed, and the mesh converges', async () => {
    const { report, head } = await run({ scenario: 'clock-skew', duration: 6, tail: 20 })
    // Node 0 runs 12 s ahead: out of bound against every peer, it mints nothing the others would refuse.
    expect(head.operations.writeErrors).toBeGreaterThan(0)
    expect(head.rejected.honestDriftRefusals).toBe(0)
    expect(report.latencyMs.max).toBeLessThan(1_000)
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
  })

  it('clock-step: the stepped node refuses its writes while its clock is off, nobody else does, and it writes again once back', async () => {
    const { report, head } = await run({ scenario: 'clock-step', duration: 12, clockStepFor: 4 })
    const c = head.checks['clock-step'] as Record<string, number | string>
    expect(c.detectedAfterMs).toBeGreaterThanOrEqual(0)
    expect(c.detectedAfterMs).toBeLessThan(1000) // the monotonic clock shows the step at once
    expect(c.node0RefusedMs).toBeGreaterThanOrEqual(3000)
    expect(c.node0RefusedMs).toBeLessThanOrEqual(6000)
    expect(c.resumedAfterBackMs).toBeGreaterThanOrEqual(0)
    expect(c.othersRefusedMs).toBe(0)
    expect(JSON.parse(c.refusedWritesByNode as string)).toEqual({ 'node 0': head.operations.writeErrors })
    expect(head.operations.writeErrors).toBeGreaterThan(0)
    expect(head.timeline.map(e => e.kind)).toEqual(['clock-step', 'clock-back'])
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
    // A step within the offset bound (5 s) refuses nothing.
    const small = await run({ scenario: 'clock-step', duration: 10, clockStepFor: 3, clockStep: 3000 })
    expect((small.head.checks['clock-step'] as Record<string, number>).node0RefusedMs).toBe(0)
    expect(small.head.operations.writeErrors).toBe(0)
  })

  it('a library scan on node 0 beside the load: written at the rate its CPU allows, and everywhere in the end', async () => {
    const { report, head } = await run({ scenario: 'baseline', profile: 'library', nodes: [5], duration: 4, rate: 10, scan: 150 })
    const scan = head.checks.scan as Record<string, number>
    expect(scan.acknowledged).toBe(150)
    expect(scan.durationMs).toBeGreaterThan(0)
    // Each record's keys cost CPU time on node 0 (--cpu-entry-ms): no faster than that allows.
    expect(scan.recordsPerSecond).toBeLessThan(1000 / (35 * report.options.cpuEntryMs))
    expect(head.operations.writes).toBeGreaterThan(150)
    expect(report.converged).toBe(true)
    expect(report.lostWrites).toBe(0)
  })

  it('bad-peer: nothing forged is applied, bad frames are rejected, honest writes arrive everywhere', async () => {
    const { report, head } = await run({ scenario: 'bad-peer', badRate: 30 })
    expect(head.badPeers).toBe(1)
    expect(report.forgedApplied).toBe(0)
    expect(report.lostWrites).toBe(0)
    expect(report.converged).toBe(true)
    expect(head.rejected.fromBad).toBeGreaterThan(50)
    expect(head.rejected.fromHonest).toBe(0)
    const c = head.rejected.badPeerCounters
    expect(c.forged).toBeGreaterThan(0)
    expect(c.replays).toBeGreaterThan(0)
    expect(c.driftRefusals).toBeGreaterThan(0)
  })

  it('same-content-twice: both sides\' roots for one CID read as one document everywhere, with no merge writes', async () => {
    const { report, head } = await run({ scenario: 'same-content-twice', duration: 6, tail: 8 })
    expect(report.converged).toBe(true)
    const sc = head.checks.sameContent as Record<string, number>
    expect(sc.cids).toBe(50)
    expect(sc.grouped).toBe(50)
    expect(sc.mismatched).toBe(0)
    expect(sc.mergeWrites).toBe(0)
  })

  it('scale: a sweep over node counts reports cost per node for each', async () => {
    const { report } = await run({ scenario: 'scale', nodes: [5, 15], rate: 20, duration: 3, tail: 4 })
    expect(report.nodeCounts).toEqual([5, 15])
    expect(report.runs).toHaveLength(2)
    expect(report.converged).toBe(true)
    expect(report.runs[1].messagesPerOp).toBeGreaterThan(report.runs[0].messagesPerOp)
    for (const r of report.runs) expect(r.perNode.bytesPerWrite).toBeGreaterThan(0)
  })
})
