/**
 * Holders and locations on two real nodes (libp2p TCP and HTTP on
 * 127.0.0.1, real watchers on real folders):
 * - a file's location is a fact of one node's disk: a client's write of
 *   `filePath` is refused (400), and a peer's replicated `filePath` never
 *   stops a node serving its own copy; a node without a copy shows a
 *   holder's path;
 * - the same file deleted on one node while it is added on the other,
 *   during a partition: after the heal the record is on both nodes, with
 *   the fields a person gave it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { midhash256 } from '../../src/cid/index.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected, waitConverged } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(state.cleanup)

const CONTENT = 'a film, byte for byte\n'.repeat(4000)

describe('locations are node-local', () => {
  it('refuses a client write of filePath, and a peer\'s filePath never breaks this node\'s serving', async () => {
    const key = swarmKeyIn(state.dir())
    const dirA = path.join(state.dir(), 'a')
    const dirB = path.join(state.dir(), 'b')
    fs.mkdirSync(path.join(dirA, 'files', 'films'), { recursive: true })
    fs.writeFileSync(path.join(dirA, 'files', 'films', 'film.mkv'), CONTENT)
    const cid = (await midhash256(path.join(dirA, 'files', 'films', 'film.mkv'))).cid
    const a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true })
    state.nodes.push(a)
    const b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true, bootstrap: [p2pAddr(a)] })
    state.nodes.push(b)
    await waitFor(async () => (await getJson(b, `/api/meta/${cid}`)).status === 200, { timeoutMs: 20_000, what: 'the record on B' })

    // B holds no copy: it shows A's path, and its /file streams A's bytes from A (never a path of its own disk).
    expect((await getJson(b, `/meta/${cid}`)).body.metadata.filePath).toBe('/files/films/film.mkv')
    const fromA = await fetch(`${b.url}/file/${cid}`)
    expect(fromA.status).toBe(200)
    expect(fromA.headers.get('x-meta-core-served-by')).toBe(a.mesh.peerId)
    expect(await fromA.text()).toBe(CONTENT)

    // A client's write to a location field is refused with a clear 400, on every write route.
    const patch = await send(b, 'PATCH', `/meta/${cid}`, { filePath: '/files/oops.mkv' })
    expect(patch.status).toBe(400)
    expect(patch.body).toMatchObject({ error: 'watcher_owned_field' })
    expect((await send(b, 'PUT', `/meta/${cid}/filePath`, { value: '/files/oops.mkv' })).status).toBe(400)
    expect((await send(b, 'DELETE', `/meta/${cid}/sizeByte`)).status).toBe(400)
    expect((await send(b, 'PUT', `/api/metadata/${cid}`, { mtimeNano: '1' })).status).toBe(400)
    // A read-modify-write client that sends the shown value back is not refused: the field is left alone.
    const doc = (await getJson(b, `/meta/${cid}`)).body.metadata
    expect((await send(b, 'PATCH', `/meta/${cid}`, { ...doc, title: 'Given by a person' })).status).toBe(200)

    // A peer's replicated filePath (an older node's write, say) changes what B shows, never what A serves.
    await b.store.records.mergeFlat(cid, { filePath: '/files/oops.mkv' })
    await waitConverged(state.nodes)
    const served = await fetch(`${a.url}/file/${cid}`)
    expect(served.status).toBe(200)
    expect(await served.text()).toBe(CONTENT)
    expect((await getJson(a, `/meta/${cid}`)).body.metadata).toMatchObject({ filePath: '/files/films/film.mkv', title: 'Given by a person' })
    expect((await getJson(a, `/api/file/${cid}/info`)).body).toMatchObject({ exists: true, filePath: 'films/film.mkv' })
  }, 60_000)
})

describe('a holder added during a partition while the other node releases', () => {
  it('keeps the record on both nodes, with the fields a person gave it', async () => {
    const key = swarmKeyIn(state.dir())
    const dirA = path.join(state.dir(), 'a')
    const dirB = path.join(state.dir(), 'b')
    fs.mkdirSync(path.join(dirA, 'files'), { recursive: true })
    fs.mkdirSync(path.join(dirB, 'files', 'other'), { recursive: true })
    const fileA = path.join(dirA, 'files', 'film.mkv')
    fs.writeFileSync(fileA, CONTENT)
    const cid = (await midhash256(fileA)).cid
    const a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true })
    state.nodes.push(a)
    let b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true, bootstrap: [p2pAddr(a)] })
    state.nodes.push(b)
    await waitFor(async () => (await getJson(b, `/api/meta/${cid}`)).status === 200, { timeoutMs: 20_000, what: 'the record on B' })
    expect((await send(b, 'PATCH', `/meta/${cid}`, { title: 'Given by a person', rating: '5' })).status).toBe(200)
    await waitConverged(state.nodes)
    const peerA = a.mesh.peerId
    const peerB = b.mesh.peerId

    // The partition: B stops, and comes back refusing A.
    await b.stop()
    state.nodes.pop()
    fs.writeFileSync(path.join(dirB, 'files', 'other', 'same film.mkv'), CONTENT)
    b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true, extraFlags: ['--blocked-peers', peerA] })
    state.nodes.push(b)
    // B adds its holder while A releases its last copy.
    fs.rmSync(fileA)
    await waitFor(async () => (await getJson(b, `/api/meta/${cid}`)).body?.metadata?.[`holders/${peerB}`] === 'true',
      { timeoutMs: 20_000, what: 'B to hold the file' })
    await waitFor(async () => (await getJson(a, `/api/meta/${cid}`)).status === 404, { timeoutMs: 20_000, what: 'A to release its last copy' })
    expect(a.mesh.status().peers.filter(p => p.connected)).toHaveLength(0)

    // The heal.
    await b.stop()
    state.nodes.pop()
    b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true, bootstrap: [p2pAddr(a)] })
    state.nodes.push(b)
    await waitConnected(state.nodes, 1)
    await waitConverged(state.nodes)
    for (const n of state.nodes) {
      const r = await getJson(n, `/api/meta/${cid}`)
      expect(r.status).toBe(200)
      expect(r.body.metadata).toMatchObject({ title: 'Given by a person', rating: '5', [`holders/${peerB}`]: 'true' })
      expect(r.body.metadata[`holders/${peerA}`]).toBeUndefined()
      expect((await getJson(n, '/api/stats')).body.records).toBe(1)
    }
    // B shows and serves its own copy; A, with none, shows B's path and streams the bytes from B.
    expect((await getJson(b, `/api/meta/${cid}`)).body.metadata.filePath).toBe('/files/other/same film.mkv')
    const own = await fetch(`${b.url}/file/${cid}`)
    expect(own.status).toBe(200)
    expect(own.headers.get('x-meta-core-served-by')).toBeNull()
    await own.arrayBuffer()
    const fromB = await fetch(`${a.url}/file/${cid}`)
    expect(fromB.status).toBe(200)
    expect(fromB.headers.get('x-meta-core-served-by')).toBe(peerB)
    await fromB.arrayBuffer()
  }, 90_000)
})
