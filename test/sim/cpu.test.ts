/**
 * The virtual CPU: processing costs virtual time through the cost model,
 * a busy node's next task waits, and its effects land when its work is
 * done; `--cpu-factor 0` gives back the free-CPU model.
 */
import { describe, expect, it } from 'vitest'
import { VirtualCpu } from '../../sim/cpu.js'
import { runScenario, type SimOptions } from '../../sim/index.js'

const SHORT: Partial<SimOptions> = { scenario: 'baseline', profile: 'low-latency', nodes: [6], warmup: 2, duration: 4, tail: 6, rate: 40, seed: 'cpu' }

describe('virtual CPU', () => {
  it('queues work: a task that arrives while the CPU is busy starts when it is free', () => {
    let now = 0
    const cpu = new VirtualCpu(() => now)
    expect(cpu.charge(10)).toBe(10)
    now = 4
    expect(cpu.charge(5)).toBe(15) // waited 6 ms
    expect(cpu.maxWaitMs).toBe(6)
    now = 20
    expect(cpu.doneAt()).toBe(20)
    expect(cpu.busyMs).toBe(15)
  })

  it('costs nothing with --cpu-factor 0, and adds processing time to latency otherwise', async () => {
    const free = (await runScenario({ ...SHORT, cpuFactor: 0 })).report
    const costed = (await runScenario({ ...SHORT, cpuFactor: 1 })).report
    expect(free.runs[0].cpu.busyFraction.max).toBe(0)
    expect(free.latencyMs.p50).toBe(105) // one 100 ms hop after a 5 ms window, exactly
    expect(costed.runs[0].cpu.busyFraction.max).toBeGreaterThan(0)
    expect(costed.latencyMs.p50).toBeGreaterThan(105)
    expect(costed.latencyMs.p50).toBeLessThan(200)
    expect(costed.converged).toBe(true)
    expect(costed.options.cpuEntryMs).toBeGreaterThan(0) // the calibration is part of the options, so of the report
  })

  it('--cpu-shared puts every node on one CPU (the real-stack mode\'s one thread): work of all of them queues together', async () => {
    const own = (await runScenario({ ...SHORT, cpuFactor: 20 })).report.runs[0]
    const shared = (await runScenario({ ...SHORT, cpuFactor: 20, cpuShared: true })).report.runs[0]
    expect(shared.cpu.busyFraction.p50).toBe(shared.cpu.busyFraction.max) // one CPU: the same figure for every node
    expect(shared.cpu.busyFraction.max).toBeGreaterThan(own.cpu.busyFraction.max * 3)
    expect(shared.latencyMs.p50).toBeGreaterThan(own.latencyMs.p50)
  })

  it('a node that cannot keep up queues: waits and latency grow with the cost', async () => {
    const slow = (await runScenario({ ...SHORT, cpuFactor: 150 })).report
    const c = slow.runs[0].cpu
    expect(c.busiest.busyFraction).toBeGreaterThan(0.5)
    expect(c.maxWaitMs.max).toBeGreaterThan(500)
    expect(slow.latencyMs.p99).toBeGreaterThan(1000)
  })
})
