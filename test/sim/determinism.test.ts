import { describe, expect, it } from 'vitest'
import { reportJson, runScenario, type SimOptions } from '../../sim/index.js'

// Partitions, a bad peer and lossy links exercise every random stream of a run.
const OPTS: Partial<SimOptions> = {
  scenario: 'bad-peer', nodes: [7], warmup: 2, duration: 4, tail: 4, rate: 30, partitionEvery: 2, loss: 0.02, latency: 'uniform:20:120', profile: 'library'
}

describe('determinism', () => {
  it('gives a byte-identical report.json for the same seed and options', async () => {
    const a = reportJson((await runScenario({ ...OPTS, seed: '42' })).report)
    const b = reportJson((await runScenario({ ...OPTS, seed: '42' })).report)
    expect(b).toBe(a)
    expect(a).not.toMatch(/wall|rss/i) // machine figures live in timing.json
    const c = reportJson((await runScenario({ ...OPTS, seed: '43' })).report)
    expect(c).not.toBe(a)
    const r = JSON.parse(a) as { runs: Array<{ lostMessages: Record<string, number>, operations: { writes: number } }> }
    expect(r.runs[0].lostMessages.loss).toBeGreaterThan(0)
    expect(r.runs[0].operations.writes).toBeGreaterThan(20)
  })

  it('stays byte-identical with a preload, a scan, library records, a clock step and regions with loss between them', async () => {
    const o: Partial<SimOptions> = {
      scenario: 'clock-step', nodes: [6], warmup: 2, duration: 8, tail: 4, rate: 20, profile: 'library', clockStepFor: 2,
      preload: 120, recordShape: 'library', scan: 40, latency: 'regions:3:40', lossBetweenRegions: 0.05, lossMode: 'retransmit', downlink: 20
    }
    const a = reportJson((await runScenario({ ...o, seed: '9' })).report)
    const b = reportJson((await runScenario({ ...o, seed: '9' })).report)
    expect(b).toBe(a)
    const r = JSON.parse(a) as { runs: Array<{ cpu: { busyFraction: { max: number } }, checks: Record<string, unknown> }> }
    expect(r.runs[0].cpu.busyFraction.max).toBeGreaterThan(0)
    expect(r.runs[0].checks.scan).toMatchObject({ acknowledged: 40 })
  })
})
