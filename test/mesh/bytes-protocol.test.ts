/**
 * The byte protocol between two real meshes (TCP on 127.0.0.1), with the
 * holder's library replaced by an opener over temp files: per-peer limits
 * (busy with a retry hint, bytes per second), backpressure (a requester
 * that stops reading stops the holder without a reset), a requester that
 * goes away (the holder's transfer ends), and, through the HTTP route of
 * the requesting node, a holder whose bytes do not match the record's CIDs
 * (the response is cut, counted, and the holder not asked again).
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import { createHash } from 'node:crypto'
import { open, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/api/index.js'
import { midhash256, sha256FileCid } from '../../src/cid/index.js'
import { silentLogger, waitFor } from '../../src/common/index.js'
import type { LocalFileOpener } from '../../src/mesh/index.js'
import { Libp2pMesh, parseSwarmKey, prepareIdentity } from '../../src/mesh/libp2p/index.js'
import type { BytesLimits } from '../../src/mesh/libp2p/bytes-protocol.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { tmpDir } from '../helpers/tmp.js'

const SIZE = 8 * 1024 * 1024
const t = tmpDir()
const swarmKey = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'5e'.repeat(32)}`)!
const stores: NodeStore[] = []
const meshes: Libp2pMesh[] = []
let goodFile: string
let badFile: string
/** Sparse, larger than anything in flight (yamux's 16 MiB window and the socket buffers). */
let bigFile: string
const BIG = 64 * 1024 * 1024
let cid: string
let shaCid: string

async function fileOpener (file: (cid: string) => string): Promise<LocalFileOpener> {
  return async (c) => {
    const fh = await open(file(c), 'r')
    const st = await fh.stat()
    return { fh, size: st.size, mtimeMs: st.mtimeMs, ext: '.mkv' }
  }
}

/**
 * An opener whose first transfer (shared by every holder given the same
 * `state`) stops sending after 1 MiB, as a holder with a dying disk would,
 * and ends 3 s later.
 */
function stallingOpener (state: { armed: boolean }): LocalFileOpener {
  return async () => {
    const fh = await open(goodFile, 'r')
    const st = await fh.stat()
    const stall = state.armed
    state.armed = false
    const wrapped = {
      read: async (buf: Buffer, off: number, len: number, pos: number) => {
        if (stall && pos >= 1024 * 1024) {
          // The fault itself, not a wait: a disk read that hangs past the serving side's deadline.
          await new Promise(resolve => setTimeout(resolve, 3_000))
          return { bytesRead: 0, buffer: buf }
        }
        return await fh.read(buf, off, len, pos)
      },
      stat: async () => await fh.stat(),
      close: async () => { await fh.close() }
    }
    return { fh: wrapped as unknown as FileHandle, size: st.size, mtimeMs: st.mtimeMs, ext: '.mkv' }
  }
}

async function startMesh (name: string, opts: { localFiles?: LocalFileOpener, limits?: Partial<BytesLimits>, bootstrap?: string[] } = {}): Promise<Libp2pMesh> {
  const { identity } = await prepareIdentity(path.join(t.dir, `${name}.key`))
  const store = openNodeStore({ path: path.join(t.dir, `${name}.db`), nodeId: identity.peerId, backgroundCheckpoint: false })
  stores.push(store)
  const mesh = new Libp2pMesh({ records: store.records, logger: silentLogger }, {
    identity, swarmKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: opts.bootstrap ?? [], localFiles: opts.localFiles, bytesLimits: opts.limits
  })
  meshes.push(mesh)
  await mesh.start()
  return mesh
}

async function connected (m: Libp2pMesh, peer: string): Promise<void> {
  await waitFor(() => m.status().peers.some(p => p.peerId === peer && p.connected), { timeoutMs: 10_000, what: `a connection to ${peer}` })
}

beforeAll(async () => {
  const content = randomBytes(SIZE)
  goodFile = path.join(t.dir, 'good.mkv')
  badFile = path.join(t.dir, 'bad.mkv')
  fs.writeFileSync(goodFile, content)
  const tampered = Buffer.from(content)
  tampered[SIZE / 2] ^= 0xff // inside the midhash sample
  fs.writeFileSync(badFile, tampered)
  bigFile = path.join(t.dir, 'big.mkv')
  fs.writeFileSync(bigFile, '')
  fs.truncateSync(bigFile, BIG)
  cid = (await midhash256(goodFile)).cid
  shaCid = (await sha256FileCid(goodFile)).cid
})

afterAll(async () => {
  for (const m of meshes) await m.stop()
  for (const s of stores) s.close()
  t.cleanup()
})

describe('serving limits and flow', () => {
  it('answers busy with a retry hint beyond the per-peer transfers, and ends a transfer whose requester went away', async () => {
    const holder = await startMesh('h1', { localFiles: await fileOpener(() => bigFile), limits: { maxStreamsPerPeer: 1 } })
    const req = await startMesh('r1', { bootstrap: [holder.status().self.addrs[0]] })
    await connected(req, holder.peerId)
    const first = await req.bytes!.openRange(holder.peerId, cid, 0, BIG)
    expect(first.ok).toBe(true)
    const second = await req.bytes!.openRange(holder.peerId, cid, 0, 100)
    expect(second).toMatchObject({ ok: false, code: 'busy' })
    expect(second.ok === false && second.retryAfterMs).toBeGreaterThanOrEqual(500)
    const served = (): { servingNow: number, bytesServed: number, busyRefusals: number } => holder.bytes!.figures().find(f => f.peerId === req.peerId)!
    expect(served().busyRefusals).toBe(1)
    // A requester that stops reading holds the holder back (no reset, not the whole range sent at once)…
    if (!first.ok) throw new Error('unreachable')
    const it = first.body[Symbol.asyncIterator]()
    await it.next()
    let last = -1
    await waitFor(() => { const now = served().bytesServed; const still = now === last; last = now; return still },
      { timeoutMs: 10_000, intervalMs: 200, what: 'the holder to wait on the requester' })
    expect(served().servingNow).toBe(1)
    expect(served().bytesServed).toBeLessThan(BIG / 2)
    // …and one that goes away ends the transfer on the holder.
    await it.return?.()
    await waitFor(() => served().servingNow === 0, { timeoutMs: 10_000, what: 'the holder to end the transfer' })
    const again = await req.bytes!.openRange(holder.peerId, cid, BIG - 10, 100)
    expect(again.ok && again.header.length).toBe(10)
  }, 30_000)

  it('sends one peer no more than its bytes per second', async () => {
    const rate = 2 * 1024 * 1024
    const holder = await startMesh('h2', { localFiles: await fileOpener(() => goodFile), limits: { bytesPerSecondPerPeer: rate } })
    const req = await startMesh('r2', { bootstrap: [holder.status().self.addrs[0]] })
    await connected(req, holder.peerId)
    const t0 = Date.now()
    const r = await req.bytes!.openRange(holder.peerId, cid, 0, 3 * rate)
    if (!r.ok) throw new Error('refused')
    let got = 0
    for await (const chunk of r.body) got += chunk.length
    expect(got).toBe(3 * rate)
    // One second's burst, then the rate: at least about two seconds for three seconds' worth.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1800)
  }, 30_000)
})

describe('integrity through the HTTP route', () => {
  it('cuts a whole transfer whose bytes do not match, counts it, and does not ask that holder again', async () => {
    const liar = await startMesh('liar', { localFiles: await fileOpener(() => badFile) })
    const req = await startMesh('r3', { bootstrap: [liar.status().self.addrs[0]] })
    await connected(req, liar.peerId)
    const store = stores[stores.length - 1]
    await store.records.mint('/files/film.mkv', SIZE, 1, { [`cids/${cid}`]: 'true', [`cids/${shaCid}`]: 'true', [`holders/${liar.peerId}`]: 'true' })
    const app = buildApp({ records: store.records, kv: store.kv, mesh: req, logger: silentLogger }, { filesPath: path.join(t.dir, 'no-files') })
    try {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      // A range away from the sample cannot be checked: it is served as the holder sent it (docs/api.md).
      const part = await fetch(`${url}/file/${cid}`, { headers: { range: 'bytes=0-999' } })
      expect(part.status).toBe(206)
      expect((await part.arrayBuffer()).byteLength).toBe(1000)
      const whole = await fetch(`${url}/file/${cid}`)
      expect(whole.status).toBe(200)
      expect(whole.headers.get('x-meta-core-served-by')).toBe(liar.peerId)
      await expect(whole.arrayBuffer()).rejects.toThrow()
      const metrics = await (await fetch(`${url}/metrics`)).text()
      expect(metrics).toContain(`meta_core_peer_bytes_integrity_failures_total{peer="${liar.peerId}"} 1`)
      const after = await fetch(`${url}/file/${cid}`)
      expect(after.status).toBe(404)
    } finally {
      await app.close()
    }
  }, 30_000)
})

describe('failover through the HTTP route', () => {
  it('finishes from another holder when the one sending stalls mid-body', async () => {
    const state = { armed: true }
    const h1 = await startMesh('s1', { localFiles: stallingOpener(state) })
    const h2 = await startMesh('s2', { localFiles: stallingOpener(state) })
    const req = await startMesh('r4', { bootstrap: [h1.status().self.addrs[0], h2.status().self.addrs[0]], limits: { stallMs: 500 } })
    await connected(req, h1.peerId)
    await connected(req, h2.peerId)
    const store = stores[stores.length - 1]
    await store.records.mint('/files/film.mkv', SIZE, 1, { [`cids/${cid}`]: 'true', [`cids/${shaCid}`]: 'true', [`holders/${h1.peerId}`]: 'true',
      [`holders/${h2.peerId}`]: 'true' })
    const app = buildApp({ records: store.records, kv: store.kv, mesh: req, logger: silentLogger }, { filesPath: path.join(t.dir, 'no-files') })
    try {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      const r = await fetch(`${url}/file/${cid}`)
      const body = Buffer.from(await r.arrayBuffer())
      expect(state.armed).toBe(false)
      expect(body.length).toBe(SIZE)
      expect(createHash('sha256').update(body).digest('hex')).toBe(createHash('sha256').update(fs.readFileSync(goodFile)).digest('hex'))
      expect(await (await fetch(`${url}/metrics`)).text()).toMatch(/meta_core_peer_bytes_failovers_total\{reason="stalled"\} 1/)
    } finally {
      await app.close()
    }
  }, 30_000)
})

describe('the cache (META_CORE_CACHE_PATH)', () => {
  it('keeps a file fetched whole and checked, serves it again without the peer, and evicts the least recently used', async () => {
    const other = path.join(t.dir, 'other.mkv')
    fs.writeFileSync(other, randomBytes(SIZE))
    const otherCid = (await midhash256(other)).cid
    const holder = await startMesh('c1', { localFiles: await fileOpener(c => (c === otherCid ? other : goodFile)) })
    const req = await startMesh('c2', { bootstrap: [holder.status().self.addrs[0]] })
    await connected(req, holder.peerId)
    const store = stores[stores.length - 1]
    // The records are the holder's (its library), learnt by the requester over the mesh: no location of its own.
    const holderStore = stores[stores.length - 2]
    await holderStore.records.mint('/files/film.mkv', SIZE, 1, { [`cids/${cid}`]: 'true', [`holders/${holder.peerId}`]: 'true' })
    await holderStore.records.mint('/files/other.mkv', SIZE, 1, { [`cids/${otherCid}`]: 'true', [`holders/${holder.peerId}`]: 'true' })
    await waitFor(() => store.records.getFlat(cid) !== undefined && store.records.getFlat(otherCid) !== undefined,
      { timeoutMs: 15_000, what: 'the requester to learn the records' })
    const cacheDir = path.join(t.dir, 'cache')
    const app = buildApp({ records: store.records, kv: store.kv, mesh: req, logger: silentLogger },
      { filesPath: path.join(t.dir, 'no-files'), cachePath: cacheDir, cacheMaxBytes: SIZE + 1 })
    const fetched = (): number => req.bytes!.figures().find(f => f.peerId === holder.peerId)?.bytesFetched ?? 0
    const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')
    try {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      const get = async (c: string, range?: string): Promise<{ r: Response, body: Buffer }> => {
        const r = await fetch(`${url}/file/${c}`, { headers: range === undefined ? {} : { range } })
        return { r, body: Buffer.from(await r.arrayBuffer()) }
      }
      // A range is not kept; a whole checked file is.
      await get(cid, 'bytes=0-99')
      expect(fs.readdirSync(cacheDir)).toEqual([])
      const first = await get(cid)
      expect(first.r.headers.get('x-meta-core-served-by')).toBe(holder.peerId)
      await waitFor(() => fs.readdirSync(cacheDir).length === 1, { timeoutMs: 5_000, what: 'the file to be kept' })
      await waitFor(() => store.records.getFlat(cid)?.[`holders/${req.peerId}`] === 'true', { timeoutMs: 5_000, what: 'the kept file held here' })
      const before = fetched()
      const again = await get(cid, 'bytes=100-199')
      expect(again.r.status).toBe(206)
      expect(again.r.headers.get('x-meta-core-served-by')).toBeNull()
      expect(again.body.equals(fs.readFileSync(goodFile).subarray(100, 200))).toBe(true)
      const whole = await get(cid)
      expect(sha(whole.body)).toBe(sha(fs.readFileSync(goodFile)))
      expect(fetched()).toBe(before)
      // Another file fills the cap: the first one goes, and is fetched from the peer again.
      await get(otherCid)
      const only = [store.records.resolveRoot(otherCid)]
      await waitFor(() => JSON.stringify(fs.readdirSync(cacheDir)) === JSON.stringify(only), { timeoutMs: 5_000, what: 'the first file to be evicted, the second kept' })
      // This node says it holds what its cache keeps, and only that (byte-cache.ts).
      await waitFor(() => store.records.getFlat(otherCid)?.[`holders/${req.peerId}`] === 'true', { timeoutMs: 5_000, what: 'the second file held here' })
      expect(store.records.getFlat(cid)?.[`holders/${req.peerId}`]).toBeUndefined()
      expect((await get(cid, 'bytes=0-9')).r.headers.get('x-meta-core-served-by')).toBe(holder.peerId)
    } finally {
      await app.close()
    }
  }, 30_000)
})
