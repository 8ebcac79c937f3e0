/**
 * The real-stack mode on a few real libp2p nodes (the node's own adapter on
 * the in-memory transport with 100 ms links), in real time, and the
 * simulator's import rule.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
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
      scenario: 'fresh-join', profile: 'library', seed: 'real-join', warmup: 1, duration: 4, joinAt: 1, tail: 8, rate: 5, preload: 300, recordShape: 'library', targetPeers: 2
    })
    const r = await runRealStack(opts, 3)
    expect(r.converged).toBe(true)
    expect(r.lostWrites).toBe(0)
    expect(r.catchUpMs).not.toBeNull()
    expect(r.catchUpMs).toBeGreaterThan(0)
  }, 120_000)
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
