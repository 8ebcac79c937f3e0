/**
 * Nemesis: a node's wall clock steps an hour ahead for a few seconds and
 * back (an NTP step, a VM resume) while every node keeps writing. Three
 * real nodes, each its own `meta-core` process, over TCP on 127.0.0.1; node
 * A runs under libfaketime, its offset read from a file on every clock call
 * (FAKETIME_NO_CACHE) with the monotonic clock left real. While A's clock
 * is out of bound its writes answer 503 retryable and /health says degraded;
 * within 30 s of the correction every write acknowledged after it is
 * readable on every node and the digests are equal.
 *
 * Needs Debian's `faketime` package (.ci/run installs it); skipped without.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { sleep, waitFor } from '../../src/common/index.js'
import { http, p2pAddrOf, processTestState, startMeshProcess, type MeshProcess } from '../helpers/mesh-processes.js'
import { testCid } from '../helpers/record-ops.js'
import { swarmKeyIn } from '../helpers/mesh-nodes.js'

const FAKETIME_LIBS = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/faketime/libfaketime.so.1']
const libfaketime = FAKETIME_LIBS.find(f => fs.existsSync(f))
if (libfaketime === undefined) console.warn('clock-step nemesis skipped: libfaketime is not installed (Debian package `faketime`; .ci/run installs it)')

const state = processTestState('mc-clock-')
const clis = state.clis
afterEach(state.cleanup)

type Node = MeshProcess

async function start (name: string, dir: string, key: string, bootstrap: string[], env: Record<string, string> = {}): Promise<Node> {
  return await startMeshProcess(clis, { name, dir, key, bootstrap, env })
}

interface Acked { node: Node, cid: string, at: number }

describe.skipIf(libfaketime === undefined)('a clock step on one node', () => {
  it('refuses its writes while out of bound and converges within 30 s of the correction', async () => {
    const dir = state.dir()
    const key = swarmKeyIn(dir)
    const offsetFile = path.join(dir, 'faketime')
    fs.writeFileSync(offsetFile, '+0\n')
    const a = await start('a', dir, key, [], {
      LD_PRELOAD: libfaketime!,
      FAKETIME_TIMESTAMP_FILE: offsetFile,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1'
    })
    const addrOf = p2pAddrOf
    const b = await start('b', dir, key, [await addrOf(a)])
    const c = await start('c', dir, key, [await addrOf(a), await addrOf(b)])
    const nodes = [a, b, c]
    // Connected, and each node has measured its clock against both others.
    await waitFor(async () => {
      const views = await Promise.all(nodes.map(async n => (await http(n, 'GET', '/api/mesh')).body))
      return views.every(v => v.peers.filter((p: any) => p.connected).length === 2 && (v.self.clock?.measured ?? 2) === 2)
    }, { timeoutMs: 20_000, what: 'three connected nodes measuring each other\'s clocks', intervalMs: 100 })

    // Writers: one per node, each write a new record, until told to stop.
    const acked: Acked[] = []
    const refused: Array<{ at: number, status: number, body: any }> = []
    let writing = true
    let seq = 0
    const writer = async (n: Node, base: number): Promise<void> => {
      while (writing) {
        const cid = testCid(base + seq++)
        const r = await http(n, 'PATCH', `/meta/${cid}`, { title: `${n.name} ${seq}` })
        if (r.status === 200) acked.push({ node: n, cid, at: performance.now() })
        else if (n === a) refused.push({ at: performance.now(), status: r.status, body: r.body })
        else throw new Error(`a write on ${n.name} failed: ${r.status} ${JSON.stringify(r.body)}`)
        await sleep(50) // pacing: a steady stream of writes (about 20 a second per node), not a wait for anything
      }
    }
    let stepAt = 0
    let correctedAt = 0
    /** Writes acknowledged on `n` after `t` (performance.now()). */
    const ackedOn = (n: Node, t: number): number => acked.filter(w => w.node === n && w.at > t).length
    const stepAndCorrect = async (): Promise<void> => {
      // Writes flowing on every node before the step.
      await waitFor(() => nodes.every(n => ackedOn(n, 0) >= 5), { timeoutMs: 10_000, what: 'five writes acknowledged on every node before the step', intervalMs: 20 })
      stepAt = performance.now()
      fs.writeFileSync(offsetFile, '+1h\n')
      let health: any
      await waitFor(async () => {
        health = (await http(a, 'GET', '/health')).body
        return health.status === 'degraded'
      }, { timeoutMs: 2_000, what: 'A\'s /health to say degraded', intervalMs: 50 })
      expect(health.clock).toMatchObject({ inBound: false })
      const metrics = await (await fetch(a.url + '/metrics')).text()
      expect(metrics).toMatch(/^meta_core_mesh_clock_out_of_bound 1$/m)
      // Stepped: A refuses its writes while the others' go on.
      await waitFor(() => refused.filter(r => r.at > stepAt).length >= 5 && nodes.every(n => n === a || ackedOn(n, stepAt + 500) >= 5), {
        timeoutMs: 10_000, what: 'A to refuse five writes while the others acknowledge theirs', intervalMs: 20
      })
      fs.writeFileSync(offsetFile, '+0\n')
      correctedAt = performance.now()
      // Corrected: A writes again, and every node goes on.
      await waitFor(() => nodes.every(n => ackedOn(n, correctedAt) >= 5), { timeoutMs: 10_000, what: 'five writes acknowledged on every node after the correction', intervalMs: 20 })
    }
    const writers = nodes.map(async (n, i) => { await writer(n, (i + 1) * 1_000_000) })
    try {
      await stepAndCorrect()
    } finally {
      writing = false
      await Promise.allSettled(writers)
    }
    await Promise.all(writers) // a writer's failure fails the test

    // While stepped, A refused its writes, retryable, saying by how much its clock is off.
    const during = refused.filter(r => r.at > stepAt && r.at < correctedAt)
    expect(during.length).toBeGreaterThan(0)
    for (const r of refused) {
      expect(r.status).toBe(503)
      expect(r.body).toMatchObject({ error: 'clock_out_of_bound', retryable: true })
      expect(r.body.message).toMatch(/clock is off by about 3[56]\d{5} ms/)
    }
    expect(acked.filter(w => w.node === a && w.at > stepAt + 500 && w.at < correctedAt).length).toBe(0)
    expect(acked.filter(w => w.node === a && w.at > correctedAt).length).toBeGreaterThan(0)
    expect(a.cli.stdout() + a.cli.stderr()).toMatch(/clock out of bound: local writes refused/)

    // Within 30 s of the correction: every write acknowledged after it is readable everywhere, digests equal.
    const after = acked.filter(w => w.at > correctedAt)
    await waitFor(async () => {
      for (const n of nodes) {
        for (const w of after) if ((await http(n, 'GET', `/api/meta/${w.cid}`)).status !== 200) return false
      }
      const digests = await Promise.all(nodes.map(async n => (await http(n, 'GET', '/api/mesh/digest')).body.digest))
      return new Set(digests).size === 1
    }, { timeoutMs: Math.max(1_000, 30_000 - (performance.now() - correctedAt)), what: 'every write after the correction on every node, equal digests', intervalMs: 200 })
    expect((await http(a, 'GET', '/health')).body.status).toBe('ok')
  }, 90_000)
})
