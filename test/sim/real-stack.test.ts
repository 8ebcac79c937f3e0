/**
 * The real-stack mode on a few real libp2p nodes (the node's own adapter on
 * the in-memory transport, each buffer delayed by the model's link model),
 * in real time, with the scenario's events (partitions, a node stopped and
 * returning, a fresh join), and the simulator's import rule.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Prng } from '../../src/mesh/testing/index.js'
import { compareWithRealStack } from '../../sim/real/compare.js'
import { RealLinks } from '../../sim/real/real-links.js'
import { runRealStack } from '../../sim/real/real-stack.js'
import { resolveOptions } from '../../sim/scenario/scenarios.js'

describe('real-stack mode', () => {
  it('runs the load on real nodes: converges, counts gossip RPCs and pulls, and pays the link delay', async () => {
    const { opts } = resolveOptions({ scenario: 'baseline', seed: 'real-test', warmup: 1, duration: 3, tail: 4, rate: 10 })
    const r = await runRealStack(opts, 5)
    expect(r.converged).toBe(true)
    expect(r.lostWrites).toBe(0)
    expect(r.operations.writes).toBeGreaterThan(5)
    expect(r.messages.gossipRpcs).toBeGreaterThan(r.operations.writes * 3) // each write goes to the 4 other nodes
    expect(r.messages.pullMessages).toBeGreaterThan(0) // every connection starts with a pull
    expect(r.latency.count).toBe(r.operations.writesAcked)
    expect(r.latency.p50).toBeGreaterThanOrEqual(100) // one 100 ms hop at least
    expect(r.latency.p50).toBeLessThan(3_000)
  }, 120_000)

  it('fresh-join with a preload: the real joiner catches up on the library, timed as in the model', async () => {
    const { opts } = resolveOptions({
      scenario: 'fresh-join', profile: 'library', seed: 'real-join', warmup: 1, duration: 4, joinAt: 1, tail: 8, rate: 5, preload: 300, recordShape: 'library',
        targetPeers: 2
    })
    const r = await runRealStack(opts, 3)
    expect(r.converged).toBe(true)
    expect(r.lostWrites).toBe(0)
    expect(r.catchUpMs).not.toBeNull()
    expect(r.catchUpMs).toBeGreaterThan(0)
  }, 120_000)
})

describe('real-stack events', () => {
  it('partition-heal against the model: the model\'s cuts hold writes back on the real stack until the heal, and every figure is compared', async () => {
    const { opts } = resolveOptions({
      scenario: 'partition-heal', profile: 'library', seed: 'real-cut', warmup: 1, duration: 6, partitionEvery: 2, tail: 6, rate: 10, realNodes: 4,
        realRate: 10, targetPeers: 3
    })
    const c = await compareWithRealStack(opts)
    expect(c.real.converged).toBe(true)
    expect(c.real.lostWrites).toBe(0)
    expect(c.events.run.join()).toMatch(/partitions \(halves\) every 2 s/)
    // A write made on one side during a 2 s cut reaches the other side at the heal, in both runs.
    expect(c.real.latencyMax).toBeGreaterThan(500)
    expect(c.model.latencyP99).toBeGreaterThan(500)
    for (const k of ['messagesPerOp', 'messagesPerWrite', 'bytesPerWriteUnderLoad', 'latencyP50', 'latencyP99'] as const) {
      expect(c.real[k], k).toBeGreaterThan(0)
      expect(c.ratio[k], k).toBeGreaterThan(0)
    }
    expect(c.agrees).toBe(c.outside.length === 0)
  }, 180_000)

  it('return-after-absence: the stopped node comes back and catches up, timed from its return', async () => {
    const { opts } = resolveOptions({
      scenario: 'return-after-absence', profile: 'library', seed: 'real-back', warmup: 1, duration: 7, absent: 3, tail: 6, rate: 10, targetPeers: 2,
        latency: 'regions:2:30', loss: 0.01, lossMode: 'retransmit'
    })
    const r = await runRealStack(opts, 4)
    expect(r.converged).toBe(true)
    expect(r.lostWrites).toBe(0)
    expect(r.events.run.join()).toMatch(/node 1 down for 3 s/)
    expect(r.catchUpMs).not.toBeNull()
    expect(r.catchUpMs).toBeGreaterThan(0)
  }, 120_000)

  it('holds buffers across a cut and releases them at the heal; loss costs whole retransmission timeouts', () => {
    const { opts } = resolveOptions({ scenario: 'baseline', latency: 'regions:2:40', loss: 0.3, lossMode: 'retransmit' })
    let t = 0
    const links = new RealLinks(opts, new Prng('links'), () => t)
    for (const [id, i] of [['a', 0], ['b', 1], ['c', 2]] as const) links.add(id, i)
    let changes = 0
    links.onChange(() => { changes++ })
    const delays = Array.from({ length: 200 }, () => links.delayMs('a', 'b', 100)!)
    expect(delays.every(d => (d - 40) % 200 === 0)).toBe(true) // 40 ms between regions, plus lost tries
    expect(delays.some(d => d > 40)).toBe(true)
    links.partition([[0], [1, 2]])
    expect(links.delayMs('a', 'b', 100)).toBeNull()
    expect(links.delayMs('b', 'c', 100)).not.toBeNull() // same side
    t = 50
    links.heal()
    expect(changes).toBe(1)
    expect(links.delayMs('a', 'b', 100)).not.toBeNull()
  })
})

describe('import rule', () => {
  it('sim/ loads libp2p only through the mesh adapter, only in sim/real, and never fastify or the watcher', () => {
    const files: string[] = []
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name)
        if (e.isDirectory()) walk(p)
        else if (p.endsWith('.ts')) files.push(p)
      }
    }
    walk('sim')
    expect(files.length).toBeGreaterThan(10)
    for (const f of files) {
      const imports = [...fs.readFileSync(f, 'utf8').matchAll(/from '([^']+)'|import\('([^']+)'\)/g)].map(m => m[1] ?? m[2])
      for (const i of imports) {
        expect(i, `${f} imports ${i}`).not.toMatch(/^(@libp2p\/|libp2p$|@chainsafe\/|fastify|@fastify\/)/)
        expect(i, `${f} imports ${i}`).not.toMatch(/src\/(watcher|api)\//)
        if (i.includes('src/mesh/libp2p')) expect(f.startsWith(path.join('sim', 'real')), `${f} imports the libp2p adapter`).toBe(true)
      }
    }
  })
})
