/**
 * A node seeded from a copy of another node's store, the way
 * docs/operations.md ("Seeding a node from a copy of another node's store")
 * says, on two real nodes (libp2p TCP and HTTP on 127.0.0.1, real watchers
 * on real folders): node A holds a file; node C starts from a copy of A's
 * store file (never A's identity key) with an empty library and the same
 * swarm key. C's watcher finds none of A's files on its disk, and that
 * deletes nothing: after C's scan and the sync, A's record is on both
 * nodes with A's holder member and the title a person gave it, and A
 * still serves the file (to C too).
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { midhash256 } from '../../src/cid/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected, waitConverged } from '../helpers/mesh-nodes.js'

const state = meshTestState()
afterEach(state.cleanup)

const CONTENT = 'a film on the first machine\n'.repeat(3000)
const SETTLE_MS = 100

/** The store file of a node started in `dir` by startMeshNode. */
const storeOf = (dir: string): string => path.join(dir, 'db', 'meta-core.db')

/** The two ways operations.md gives to copy a node's store file; each says whether it stopped the source. */
const COPIES: Array<[string, (a: RunningNode, from: string, to: string) => Promise<boolean>]> = [
  ['the source stopped, its store file copied', async (a, from, to) => {
    await a.stop()
    state.nodes.splice(state.nodes.indexOf(a), 1)
    fs.copyFileSync(from, to)
    return true
  }],
  ['the source running, a consistent copy taken with VACUUM INTO', async (_a, from, to) => {
    // The statement operations.md gives to the sqlite3 shell, on a connection of our own beside the node's.
    const db = new Database(from, { readonly: true, fileMustExist: true })
    try { db.exec(`VACUUM INTO '${to.replaceAll("'", "''")}'`) } finally { db.close() }
    return false
  }]
]

/** Waits until the node's watcher has finished a full scan and has nothing pending. */
async function scanned (n: RunningNode): Promise<void> {
  await waitFor(() => {
    const s = n.watcher.status()
    return s.lastScan !== undefined && !s.isScanning && s.progress.filesPending === 0
  }, { timeoutMs: 20_000, what: 'the watcher\'s first scan' })
}

describe('a node seeded from a copy of another node\'s store', () => {
  it.each(COPIES)('deletes none of that node\'s records (%s)', async (_, copyStore) => {
    const key = swarmKeyIn(state.dir())
    const dirA = path.join(state.dir(), 'a')
    const dirC = path.join(state.dir(), 'c')
    const file = path.join(dirA, 'files', 'films', 'film.mkv')
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, CONTENT)
    const cid = (await midhash256(file)).cid
    let a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true, settleMs: SETTLE_MS })
    state.nodes.push(a)
    const peerA = a.mesh.peerId
    await waitFor(async () => (await getJson(a, `/api/meta/${cid}`)).body?.metadata?.[`holders/${peerA}`] === 'true',
      { timeoutMs: 20_000, what: 'A to hold its file' })
    expect((await send(a, 'PATCH', `/meta/${cid}`, { title: 'Given by a person' })).status).toBe(200)

    // The copy: the store file only, never the identity key beside it.
    fs.mkdirSync(path.join(dirC, 'db'), { recursive: true })
    if (await copyStore(a, storeOf(dirA), storeOf(dirC))) {
      a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true, settleMs: SETTLE_MS })
      state.nodes.push(a)
      expect(a.mesh.peerId).toBe(peerA)
    }
    expect(fs.readdirSync(path.join(dirC, 'db'))).toEqual(['meta-core.db'])

    // C: the copy, an empty library, the same swarm key, its own new identity.
    fs.mkdirSync(path.join(dirC, 'files'))
    const c = await startMeshNode({ dir: dirC, swarmKey: key, watcher: true, settleMs: SETTLE_MS, bootstrap: [p2pAddr(a)] })
    state.nodes.push(c)
    const peerC = c.mesh.peerId
    expect(peerC).not.toBe(peerA)
    await scanned(c)
    await waitConnected(state.nodes, 1)
    await waitConverged(state.nodes)

    const check = async (): Promise<void> => {
      for (const n of state.nodes) {
        const r = await getJson(n, `/api/meta/${cid}`)
        expect(r.status).toBe(200)
        expect(r.body.metadata).toMatchObject({ title: 'Given by a person', [`holders/${peerA}`]: 'true' })
        expect(r.body.metadata[`holders/${peerC}`]).toBeUndefined()
        expect((await getJson(n, '/api/stats')).body.records).toBe(1)
      }
      const own = await fetch(`${a.url}/file/${cid}`)
      expect(own.status).toBe(200)
      expect(await own.text()).toBe(CONTENT)
      // C, with no copy, streams the bytes from A, the holder its copy of the store names.
      const fromA = await fetch(`${c.url}/file/${cid}`)
      expect(fromA.status).toBe(200)
      expect(fromA.headers.get('x-meta-core-served-by')).toBe(peerA)
      expect(await fromA.text()).toBe(CONTENT)
    }
    await check()

    // Still true after: a rescan of C's empty library, its watcher idle again, and then an anti-entropy round
    // on each node (every second, startMeshNode), each checking its peer's whole range again.
    const rescan = await send(c, 'POST', '/api/watchers/scan?wait=true')
    expect(rescan.body.summary).toEqual({ fileCount: 0, added: 0, changed: 0, deleted: 0, renamed: 0 })
    await scanned(c)
    const checks = (n: RunningNode): number => n.mesh.status().peers.reduce((s, p) => s + p.reconcilesEqual + p.reconciles, 0)
    const before = state.nodes.map(checks)
    await waitFor(() => state.nodes.every((n, i) => checks(n) > before[i]), { timeoutMs: 10_000, what: 'an anti-entropy round on each node after the rescan' })
    await waitConverged(state.nodes)
    await check()
    expect(c.store.kv.get('meta-core:copied-from')).toBe(peerA)
  }, 90_000)
})
