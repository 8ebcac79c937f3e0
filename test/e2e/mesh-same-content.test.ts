/**
 * The same file in two nodes' folders before they meet: each node's watcher
 * mints its own root for it; once they meet, both read one record (one
 * group, canonical root = the smaller rid), identical on both, listed and
 * counted once, with both nodes as holders, and the meeting itself writes
 * nothing into the mesh.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { midhash256, sha256FileCid } from '../../src/cid/index.js'
import { RecordReplica } from '../../src/mesh/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { getJson, meshTestState, p2pAddr, startMeshNode, swarmKeyIn, waitConverged } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(state.cleanup)

/** Every replicated entry of a node, as `key version value` lines. */
function replicated (n: RunningNode): Set<string> {
  const r = new RecordReplica(n.store.records)
  const out = new Set<string>()
  let after: string | null = null
  for (;;) {
    const p = r.exportRange(after, { maxBytes: 1 << 20 })
    for (const e of p.entries) out.add(`${e.key} ${e.hlc}${e.origin} ${e.value ?? '∅'}`)
    if (p.next === null) return out
    after = p.next
  }
}

describe('the same content on two nodes before they meet', () => {
  it('reads as one identical record on both, listed and counted once, with no writes caused by the merge', async () => {
    const key = swarmKeyIn(state.dir())
    const content = 'the same film, byte for byte\n'.repeat(5000)
    const dirA = path.join(state.dir(), 'a')
    const dirB = path.join(state.dir(), 'b')
    fs.mkdirSync(path.join(dirA, 'files'), { recursive: true })
    fs.mkdirSync(path.join(dirB, 'files', 'films'), { recursive: true })
    fs.writeFileSync(path.join(dirA, 'files', 'film.mkv'), content)
    fs.writeFileSync(path.join(dirB, 'files', 'films', 'same film.mkv'), content)
    const cid = (await midhash256(path.join(dirA, 'files', 'film.mkv'))).cid

    const a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true })
    let b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true })
    state.nodes.push(a, b)
    for (const n of state.nodes) await waitFor(async () => (await getJson(n, `/api/meta/${cid}`)).status === 200,
      { timeoutMs: 15_000, what: 'each watcher to record the file' })
    // And to add its full-content CIDs in the background (each node hashes its own copy: they have not met yet).
    const sha = (await sha256FileCid(path.join(dirA, 'files', 'film.mkv'))).cid
    for (const n of state.nodes) await waitFor(async () => (await getJson(n, `/api/meta/${sha}`)).status === 200, { timeoutMs: 15_000, what: 'each watcher to add the full-content CIDs' })
    const ridA = a.store.records.resolveRoot(cid)!
    const ridB = b.store.records.resolveRoot(cid)!
    expect(ridA).not.toBe(ridB)
    const before = new Set([...replicated(a), ...replicated(b)])

    // They meet: B comes back knowing A.
    await b.stop()
    state.nodes.pop()
    b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true, bootstrap: [p2pAddr(a)] })
    state.nodes.push(b)
    await waitConverged(state.nodes)

    const docA = (await getJson(a, `/api/meta/${cid}`)).body
    const docB = (await getJson(b, `/api/meta/${cid}`)).body
    // Each shows its own copy's path (records' local-location.ts); the rest reads the same.
    expect(docA.metadata.filePath).toBe('/files/film.mkv')
    expect(docB.metadata.filePath).toBe('/files/films/same film.mkv')
    const strip = (d: any): unknown => ({ ...d, metadata: { ...d.metadata, filePath: undefined, sizeByte: undefined, mtimeNano: undefined } })
    expect(strip(docA)).toEqual(strip(docB))
    expect(docA.metadata[`holders/${a.mesh.peerId}`]).toBe('true')
    expect(docA.metadata[`holders/${b.mesh.peerId}`]).toBe('true')
    for (const n of state.nodes) {
      expect(n.store.records.resolveRoot(cid)).toBe(ridA < ridB ? ridA : ridB)
      expect((await getJson(n, '/api/stats')).body.records).toBe(1)
      expect((await getJson(n, '/meta')).body).toMatchObject({ count: 1, total: 1 })
    }
    // Nothing was written because of the merge: each node holds exactly the two mints' entries (and each one's full-content CIDs).
    expect(replicated(a)).toEqual(before)
    expect(replicated(b)).toEqual(before)
  })
})
