/**
 * The cache as a holder (issue 43: "a node holds bytes it fetched and
 * serves them, and says so in holders only while it keeps them"), with
 * three real nodes on 127.0.0.1: A has two files in its library; C runs a
 * cache (META_CORE_CACHE_PATH) room for one of them; D has neither.
 * C fetching a file whole keeps it and adds `holders/<C>`, which D learns;
 * D then streams the file from C when A cannot serve it (A's file changed
 * since it was hashed); C fetching the other file evicts the first, and
 * `holders/<C>` leaves that record on every node. A restart of C without
 * its cache releases what the cache kept.
 *
 * Watchers are off and files are recorded through `/api/files/register`.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected } from '../helpers/mesh-nodes.js'

const SIZE = 8 * 1024 * 1024
const MTIME_S = 1_700_000_000
const state = meshTestState()
let a: RunningNode
let c: RunningNode
let d: RunningNode
let key: string
const files = [{ rel: 'plugin/one.mp4', content: randomBytes(SIZE), cid: '' }, { rel: 'plugin/two.mp4', content: randomBytes(SIZE), cid: '' }]
const cacheDir = (): string => path.join(state.dir(), 'c-cache')
const cDir = (): string => path.join(state.dir(), 'c')

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const holds = (n: RunningNode, cid: string, by: RunningNode): boolean => n.store.records.getFlat(cid)?.[`holders/${by.mesh.peerId}`] === 'true'

async function get (n: RunningNode, cid: string): Promise<{ status: number, servedBy: string | null, body: Buffer }> {
  const r = await fetch(`${n.url}/file/${cid}`)
  return { status: r.status, servedBy: r.headers.get('x-meta-core-served-by'), body: Buffer.from(await r.arrayBuffer()) }
}

async function startC (withCache: boolean): Promise<RunningNode> {
  return await startMeshNode({
    dir: cDir(),
    swarmKey: key,
    bootstrap: [p2pAddr(a)],
    extraFlags: withCache ? ['--cache-path', cacheDir(), '--cache-max-bytes', String(SIZE + 1024 * 1024)] : []
  })
}

beforeAll(async () => {
  key = swarmKeyIn(state.dir())
  a = await startMeshNode({ dir: path.join(state.dir(), 'a'), swarmKey: key })
  c = await startC(true)
  d = await startMeshNode({ dir: path.join(state.dir(), 'd'), swarmKey: key, bootstrap: [p2pAddr(a), p2pAddr(c)] })
  state.nodes.push(a, c, d)
  await waitConnected(state.nodes, 2)
  for (const f of files) {
    const file = path.join(a.config.filesPath, f.rel)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, f.content)
    fs.utimesSync(file, MTIME_S, MTIME_S)
    const reg = await send(a, 'POST', '/api/files/register', { path: f.rel })
    expect(reg.status).toBe(201)
    f.cid = reg.body.cid
  }
  await waitFor(async () => (await Promise.all([c, d].flatMap(n => files.map(async f => (await getJson(n, `/api/meta/${f.cid}`)).status)))).every(s =>
    s === 200),
    { timeoutMs: 15_000, what: 'C and D to learn the records' })
}, 60_000)

afterAll(state.cleanup, 30_000)

describe('a node with a cache holds what it keeps', () => {
  it('keeps a file it fetched whole and says so in holders; peers learn it', async () => {
    const [one] = files
    expect(holds(c, one.cid, c)).toBe(false)
    const r = await get(c, one.cid)
    expect(r.servedBy).toBe(a.mesh.peerId)
    expect(sha(r.body)).toBe(sha(one.content))
    await waitFor(() => holds(c, one.cid, c), { timeoutMs: 10_000, what: 'C to hold the kept file' })
    await waitFor(() => holds(d, one.cid, c) && holds(a, one.cid, c), { timeoutMs: 15_000, what: 'A and D to learn that C holds it' })
    // Served again from the cache, not A.
    const again = await get(c, one.cid)
    expect(again.servedBy).toBeNull()
    expect(sha(again.body)).toBe(sha(one.content))
  }, 60_000)

  it('serves the kept bytes to a peer that asks it', async () => {
    const [one] = files
    // A's file changes (not hashed again, the watcher is off): A refuses it, so D gets it from C or from nobody.
    const file = path.join(a.config.filesPath, one.rel)
    fs.utimesSync(file, MTIME_S + 60, MTIME_S + 60)
    try {
      const r = await get(d, one.cid)
      expect(r.status).toBe(200)
      expect(r.servedBy).toBe(c.mesh.peerId)
      expect(sha(r.body)).toBe(sha(one.content))
    } finally {
      fs.utimesSync(file, MTIME_S, MTIME_S)
    }
  }, 60_000)

  it('lets go of the holder member on every node when the entry is evicted', async () => {
    const [one, two] = files
    const r = await get(c, two.cid)
    expect(sha(r.body)).toBe(sha(two.content))
    await waitFor(() => holds(c, two.cid, c) && !holds(c, one.cid, c), { timeoutMs: 10_000, what: 'C to hold the second file, not the first' })
    expect(fs.readdirSync(cacheDir())).toEqual([c.store.records.resolveRoot(two.cid)])
    await waitFor(() => !holds(d, one.cid, c) && !holds(a, one.cid, c) && holds(d, two.cid, c), { timeoutMs: 15_000, what: 'A and D to learn it' })
    // A still holds the first: the record stays, with A's member.
    expect(holds(d, one.cid, a)).toBe(true)
  }, 60_000)

  it('releases what the cache kept when the node starts without it', async () => {
    const [, two] = files
    await c.stop()
    state.nodes.splice(state.nodes.indexOf(c), 1)
    c = await startC(false)
    state.nodes.push(c)
    expect(holds(c, two.cid, c)).toBe(false)
    expect(c.store.records.getFlat(two.cid)?.[`holders/${a.mesh.peerId}`]).toBe('true')
    await waitFor(() => !holds(d, two.cid, c), { timeoutMs: 15_000, what: 'D to learn that C let it go' })
  }, 60_000)
})
