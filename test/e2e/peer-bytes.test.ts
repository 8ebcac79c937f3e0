/**
 * Playing a file from any node: three real nodes on 127.0.0.1 (TCP libp2p,
 * HTTP), a 24 MiB file only in A's library. C, which has no copy, serves
 * A's exact bytes with A's headers, ranges and HEAD; with B holding a copy
 * too, the holder serving C can die mid-stream and C finishes from the
 * other; a holder whose file changed since it was hashed is not used; a
 * node with another swarm key gets nothing.
 *
 * The nodes' watchers are off and files are recorded through
 * `/api/files/register`, so nothing rehashes behind the test's back. B's
 * copy lies at another path than A's, with its own mtime: each holder
 * serves the copy its own watcher recorded.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { sha256FileCid } from '../../src/cid/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { readAcross } from '../helpers/peer-bytes.js'
import { getJson, meshTestState, p2pAddr, send, startMeshNode, swarmKeyIn, waitConnected } from '../helpers/mesh-nodes.js'

const SIZE = 24 * 1024 * 1024
const REL = 'plugin/movie.mp4'
const REL_B = 'plugin/films/the movie.mp4'
const MTIME_S = 1_700_000_000
const relOf = (n: RunningNode): string => (n === b ? REL_B : REL)
const mtimeOf = (n: RunningNode): number => (n === b ? MTIME_S + 7 : MTIME_S)

const state = meshTestState()
let a: RunningNode
let b: RunningNode
let c: RunningNode
let content: Buffer
let cid: string

function sha (b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex')
}

async function get (n: RunningNode, range?: string, method = 'GET'): Promise<{ status: number, headers: Headers, body: Buffer }> {
  const r = await fetch(`${n.url}/file/${cid}`, { method, headers: range === undefined ? {} : { range } })
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) }
}

function putFile (n: RunningNode): void {
  const file = path.join(n.config.filesPath, relOf(n))
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  // Whole seconds, so a test can set them back exactly; B's differs from A's.
  fs.utimesSync(file, mtimeOf(n), mtimeOf(n))
}

beforeAll(async () => {
  const key = swarmKeyIn(state.dir())
  a = await startMeshNode({ dir: path.join(state.dir(), 'a'), swarmKey: key })
  b = await startMeshNode({ dir: path.join(state.dir(), 'b'), swarmKey: key, bootstrap: [p2pAddr(a)] })
  c = await startMeshNode({ dir: path.join(state.dir(), 'c'), swarmKey: key, bootstrap: [p2pAddr(a), p2pAddr(b)] })
  state.nodes.push(a, b, c)
  await waitConnected(state.nodes, 2)
  content = randomBytes(SIZE)
  putFile(a)
  const reg = await send(a, 'POST', '/api/files/register', { path: REL })
  expect(reg.status).toBe(201)
  cid = reg.body.cid
  // The full-file sha2-256 as a second CID of the record: a whole transfer is checked against both.
  const full = await sha256FileCid(path.join(a.config.filesPath, REL))
  await a.store.records.mergeFlat(cid, { [`cids/${full.cid}`]: 'true' })
  await waitFor(async () => (await getJson(c, `/api/meta/${full.cid}`)).status === 200, { timeoutMs: 15_000, what: 'C to learn the record' })
}, 60_000)

afterAll(state.cleanup, 30_000)

describe('a file only A holds, asked of C', () => {
  it('is served with A\'s exact bytes and A\'s headers, naming A', async () => {
    const local = await get(a)
    const remote = await get(c)
    expect(remote.status).toBe(200)
    expect(remote.body.length).toBe(SIZE)
    expect(sha(remote.body)).toBe(sha(content))
    for (const h of ['content-type', 'content-length', 'accept-ranges', 'etag', 'last-modified']) {
      expect(remote.headers.get(h), h).toBe(local.headers.get(h))
    }
    expect(remote.headers.get('content-type')).toBe('video/mp4')
    expect(remote.headers.get('x-meta-core-served-by')).toBe(a.mesh.peerId)
  })

  it('serves ranges (start-end, open-ended, suffix) as 206 with the right slices, and HEAD with the size', async () => {
    const mid = SIZE / 2
    const r1 = await get(c, `bytes=${mid}-${mid + 99_999}`)
    expect(r1.status).toBe(206)
    expect(r1.headers.get('content-range')).toBe(`bytes ${mid}-${mid + 99_999}/${SIZE}`)
    expect(r1.body.equals(content.subarray(mid, mid + 100_000))).toBe(true)
    const r2 = await get(c, `bytes=${SIZE - 12_345}-`)
    expect(r2.status).toBe(206)
    expect(r2.body.equals(content.subarray(SIZE - 12_345))).toBe(true)
    const r3 = await get(c, 'bytes=-777')
    expect(r3.status).toBe(206)
    expect(r3.body.equals(content.subarray(SIZE - 777))).toBe(true)
    const r4 = await get(c, `bytes=${SIZE}-`)
    expect(r4.status).toBe(416)
    // Conditional requests get the holder's validators, as a local copy's.
    const etag = (await get(c, undefined, 'HEAD')).headers.get('etag')!
    const notModified = await fetch(`${c.url}/file/${cid}`, { headers: { 'if-none-match': etag } })
    expect(notModified.status).toBe(304)
    const stale = await fetch(`${c.url}/file/${cid}`, { headers: { range: 'bytes=0-9', 'if-range': '"other"' } })
    expect(stale.status).toBe(200)
    expect(sha(Buffer.from(await stale.arrayBuffer()))).toBe(sha(content))
    const current = await fetch(`${c.url}/file/${cid}`, { headers: { range: 'bytes=0-9', 'if-range': etag } })
    expect(current.status).toBe(206)
    expect(Buffer.from(await current.arrayBuffer()).equals(content.subarray(0, 10))).toBe(true)
    const h = await get(c, undefined, 'HEAD')
    expect(h.status).toBe(200)
    expect(h.headers.get('content-length')).toBe(String(SIZE))
    expect(h.body.length).toBe(0)
  })

  it('counts the bytes per peer on both sides, and the time to first byte', async () => {
    const mc = await (await fetch(`${c.url}/metrics`)).text()
    const ma = await (await fetch(`${a.url}/metrics`)).text()
    const fetched = new RegExp(`meta_core_peer_bytes_fetched_total\\{peer="${a.mesh.peerId}"\\} (\\d+)`).exec(mc)
    const served = new RegExp(`meta_core_peer_bytes_served_total\\{peer="${c.mesh.peerId}"\\} (\\d+)`).exec(ma)
    expect(Number(fetched?.[1])).toBeGreaterThanOrEqual(SIZE)
    expect(Number(served?.[1])).toBeGreaterThanOrEqual(SIZE)
    expect(mc).toMatch(/meta_core_peer_bytes_first_byte_seconds_count [1-9]/)
  })

  it('ends the holder\'s transfer when the client goes away', async () => {
    const ac = new AbortController()
    const r = await fetch(`${c.url}/file/${cid}`, { signal: ac.signal })
    const reader = r.body!.getReader()
    await reader.read()
    const toC = (): { servingNow: number } | undefined => a.mesh.bytes!.figures().find(f => f.peerId === c.mesh.peerId)
    // The client reads no more: flow control holds A back (it has not sent the whole file)…
    expect(toC()?.servingNow).toBe(1)
    ac.abort()
    // …and once the client is gone, A's transfer ends.
    await waitFor(() => toC()?.servingNow === 0, { timeoutMs: 10_000, what: 'A to end the transfer' })
  })

  it('gives a node with another swarm key nothing', async () => {
    const other = swarmKeyIn(state.dir(), 'other.key')
    const d = await startMeshNode({ dir: path.join(state.dir(), 'd'), swarmKey: other, bootstrap: [p2pAddr(a)] })
    state.nodes.push(d)
    await expect(d.mesh.bytes!.openRange(a.mesh.peerId, cid, 0, 1024, { idleMs: 2_000 })).rejects.toThrow()
    expect(a.mesh.bytes!.figures().some(f => f.peerId === d.mesh.peerId)).toBe(false)
    await d.stop()
    state.nodes.splice(state.nodes.indexOf(d), 1)
  })
})

describe('with B holding a copy too', () => {
  beforeAll(async () => {
    putFile(b)
    expect((await send(b, 'POST', '/api/files/register', { path: REL_B })).status).toBe(200)
    await waitFor(async () => (await getJson(c, `/api/meta/${cid}`)).body?.metadata?.[`holders/${b.mesh.peerId}`] === 'true',
      { timeoutMs: 15_000, what: 'C to learn that B holds the file' })
  })

  it('does not use a holder whose file changed since it was hashed', async () => {
    // Each holder in turn has a changed file: whichever C asks first, the changed one never serves.
    for (const [changed, good] of [[a, b], [b, a]]) {
      const file = path.join(changed.config.filesPath, relOf(changed))
      fs.utimesSync(file, MTIME_S + 60, MTIME_S + 60)
      for (let i = 0; i < 3; i++) {
        const r = await get(c, `bytes=${i * 1000}-${i * 1000 + 999}`)
        expect(r.status).toBe(206)
        expect(r.headers.get('x-meta-core-served-by')).toBe(good.mesh.peerId)
        expect(r.body.equals(content.subarray(i * 1000, i * 1000 + 1000))).toBe(true)
      }
      fs.utimesSync(file, mtimeOf(changed), mtimeOf(changed))
    }
  })

  it('finishes from the other holder when the one serving dies mid-stream', async () => {
    const r = await fetch(`${c.url}/file/${cid}`)
    const first = r.headers.get('x-meta-core-served-by')
    const [dying, other] = first === a.mesh.peerId ? [a, b] : [b, a]
    const fetchedBefore = c.mesh.bytes!.figures().find(f => f.peerId === other.mesh.peerId)?.bytesFetched ?? 0
    const body = await readAcross(r, 2 * 1024 * 1024, async () => {
      await dying.stop()
      state.nodes.splice(state.nodes.indexOf(dying), 1)
    })
    expect(body.length).toBe(SIZE)
    expect(sha(body)).toBe(sha(content))
    // The other holder sent the rest: this was a failover, not a transfer that had already ended.
    const fetchedAfter = c.mesh.bytes!.figures().find(f => f.peerId === other.mesh.peerId)?.bytesFetched ?? 0
    expect(fetchedAfter - fetchedBefore).toBeGreaterThan(0)
    expect(await (await fetch(`${c.url}/metrics`)).text()).toMatch(/meta_core_peer_bytes_failovers_total\{reason="failed"\} [1-9]/)

    // With the dead holder gone, the next request goes to the other one from the start.
    const again = await get(c)
    expect(again.headers.get('x-meta-core-served-by')).toBe(other.mesh.peerId)
    expect(sha(again.body)).toBe(sha(content))
  }, 60_000)

  it('answers a retryable 503 when no holder left can serve the file', async () => {
    const [holder] = state.nodes.filter(n => n !== c)
    fs.utimesSync(path.join(holder.config.filesPath, relOf(holder)), MTIME_S + 60, MTIME_S + 60)
    const r = await get(c, 'bytes=0-99')
    expect(r.status).toBe(503)
    expect(JSON.parse(r.body.toString())).toMatchObject({ error: 'holders_unavailable', retryable: true })
  })
})
