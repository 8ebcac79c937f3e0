/**
 * A join killed halfway: B (a `meta-core` process) joins A (in this
 * process, holding a few thousand 40-field records), on the bulk path; it
 * is killed with SIGKILL while records arrive. Its store on disk then holds
 * whole records only (every root it has holds all of A's keys of that
 * root); started again it completes the join with a digest equal to A's,
 * and its search finds the records. While it joins, `/api/mesh` shows the
 * join's progress and search says it is building.
 */
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { prefixEnd } from '../../src/kv/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { formatHlc, newRecordId, openNodeStore, type RemoteEntry } from '../../src/records/index.js'
import { syntheticRecord } from '../../bench/lib/synthetic.js'
import { meshTestState, p2pAddr, startMeshNode, swarmKeyIn } from '../helpers/mesh-nodes.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'
import { meshCliEnv } from '../helpers/peer-bytes.js'

const RECORDS = 8000
const state = meshTestState()
const clis: Cli[] = []

afterAll(async () => {
  await reapClis(clis)
  await state.cleanup()
}, 30_000)

const ridOf = (k: string): string => { const s = k.indexOf('/', 5); return s < 0 ? k.slice(5) : k.slice(5, s) }

async function json<T> (url: string): Promise<T> {
  return (await (await fetch(url)).json()) as T
}

interface Join { active: boolean, records: number, keys: number, expectedRecords: number | null, searchBuilding: boolean }

describe('a join killed halfway', () => {
  it('leaves whole records only, and completes after a restart with equal digests and search answering', async () => {
    const key = swarmKeyIn(state.dir())
    const a: RunningNode = await startMeshNode({ dir: path.join(state.dir(), 'a'), swarmKey: key, antiEntropyMs: 600_000 })
    state.nodes.push(a)
    const baseMs = Date.now() - RECORDS - 60_000
    for (let from = 0; from < RECORDS; from += 1000) {
      const page: RemoteEntry[] = []
      for (let i = from; i < from + 1000; i++) {
        const rid = newRecordId(baseMs + i)
        const r = syntheticRecord(i)
        for (const f in r.fields) page.push({ key: `file:${rid}/${f}`, value: r.fields[f], hlc: formatHlc({ ms: baseMs + i, counter: 0 }), origin: 'origin-x' })
      }
      await a.store.records.applyBatch(page, { rootsPerTransaction: 1000 })
    }
    const perRoot = new Map<string, number>()
    for (const k of a.store.kv.keys('file:', prefixEnd('file:'))) perRoot.set(ridOf(k), (perRoot.get(ridOf(k)) ?? 0) + 1)

    const bDir = path.join(state.dir(), 'b')
    const env = meshCliEnv(bDir, key, p2pAddr(a))
    const first = runCli([], env)
    clis.push(first)
    const url1 = await listeningUrl(first)
    let seen: Join | undefined
    await waitFor(async () => {
      const j = (await json<{ join: Join }>(`${url1}/api/mesh`)).join
      if (j.active && j.records > 0) seen ??= j
      return j.active && j.records >= RECORDS / 8
    }, { timeoutMs: 60_000, what: 'B to be joining', intervalMs: 20 })
    first.child.kill('SIGKILL')
    await first.exited
    // The join was shown as it went: records and keys so far, the peer's count, search building.
    expect(seen).toMatchObject({ active: true, expectedRecords: RECORDS, searchBuilding: true })
    expect(seen!.keys).toBeGreaterThan(seen!.records)

    // On disk: whole records only.
    const off = openNodeStore({ path: env.META_CORE_DB_PATH, nodeId: 'inspect' })
    const held = new Map<string, number>()
    for (const k of off.kv.keys('file:', prefixEnd('file:'))) held.set(ridOf(k), (held.get(ridOf(k)) ?? 0) + 1)
    off.close()
    expect(held.size).toBeGreaterThan(0)
    expect(held.size).toBeLessThan(RECORDS)
    expect([...held].filter(([rid, n]) => perRoot.get(rid) !== n)).toEqual([])

    const again = runCli([], env)
    clis.push(again)
    const url2 = await listeningUrl(again)
    const want = a.mesh.digest().digest
    await waitFor(async () => (await json<{ digest: string }>(`${url2}/api/mesh/digest`)).digest === want, { timeoutMs: 120_000, what: 'B\'s digest to equal A\'s after the restart', intervalMs: 250 })
    const last = syntheticRecord(RECORDS - 1)
    await waitFor(async () => !(await json<{ join: Join }>(`${url2}/api/mesh`)).join.searchBuilding,
      { timeoutMs: 60_000, what: 'B\'s search index to be complete', intervalMs: 250 })
    const found = await json<{ total: number }>(`${url2}/api/search?q=${encodeURIComponent(`imdbid:=${last.fields.imdbid}`)}`)
    expect(found.total).toBe(1)
    const all = await json<{ total: number }>(`${url2}/api/search?q=`)
    expect(all.total).toBe(RECORDS)
  }, 240_000)
})
