/**
 * The background full hash through real nodes (store, watcher on a real
 * folder, HTTP API; a mesh over TCP on 127.0.0.1 for the second node): each
 * file resolves by its sha2-256 CID and its IPFS CID once hashed, both equal
 * to CIDs computed without the node's code (the original's vectors; beyond
 * them, the encoder of test/helpers/unixfs-reference.ts, written from the
 * UnixFS and dag-pb specs); a file rewritten while it is read ends with the
 * new bytes' CIDs only; a restart goes on with what was left; a node that
 * holds content a peer already hashed does not read it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger, waitFor } from '../../src/common/index.js'
import { midhash256 } from '../../src/cid/index.js'
import { parseConfig, startNode, type RunningNode } from '../../src/node/index.js'
import type { FullHashStatus } from '../../src/watcher/index.js'
import { fixturePath, patternBytes } from '../cid/fixture-files.js'
import { getJson, meshTestState, p2pAddr, startMeshNode, swarmKeyIn } from '../helpers/mesh-nodes.js'
import { referenceIpfsCid, referenceSha256Cid } from '../helpers/unixfs-reference.js'

const state = meshTestState()
afterEach(state.cleanup)

const KiB = 1024
const MiB = 1_048_576

/** A standalone node over `dir` (its store and its library folder `dir/files`). */
async function startLocal (dir: string, flags: string[] = []): Promise<RunningNode> {
  const parsed = await parseConfig([
    '--db-path', path.join(dir, 'db', 'meta-core.db'),
    '--files-path', path.join(dir, 'files'),
    '--http-port', '0',
    '--settle-ms', '100',
    '--log-level', 'silent',
    ...flags
  ], {})
  if (parsed.kind !== 'config') throw new Error('expected a configuration')
  const n = await startNode(parsed.config, { logger: silentLogger })
  state.nodes.push(n)
  return n
}

async function stopNode (n: RunningNode): Promise<void> {
  await n.stop()
  state.nodes.splice(state.nodes.indexOf(n), 1)
}

async function fullHash (n: RunningNode): Promise<FullHashStatus> {
  const r = await getJson<{ watchers: Array<{ fullHash: FullHashStatus }> }>(n, '/api/watchers')
  return r.body.watchers[0].fullHash
}

async function record (n: RunningNode, cid: string): Promise<{ status: number, body: { cids: string[], canonical_cid: string,
  metadata: Record<string, string> } }> {
  return await getJson(n, `/api/meta/${cid}`)
}

/** Every key the node's change log ever carried (the replicated writes, in order). */
function loggedKeys (n: RunningNode): string {
  return n.store.kv.readStream('meta:events', undefined, 1_000_000).map(e => JSON.stringify(e.fields)).join('\n')
}

function write (dir: string, rel: string, bytes: Uint8Array): void {
  fs.mkdirSync(path.dirname(path.join(dir, 'files', rel)), { recursive: true })
  fs.writeFileSync(path.join(dir, 'files', rel), bytes)
}

describe('full-content CIDs in the background', () => {
  it('every size resolves by its sha2-256 and IPFS CIDs within the hashing\'s time, each as computed independently', async () => {
    const dir = path.join(state.dir(), 'sizes')
    const files: Array<[string, Buffer]> = [
      ['empty.bin', Buffer.alloc(0)],
      ['one.bin', Buffer.from('x')],
      ['hello.txt', Buffer.from('hello world')],
      ['test.txt', fs.readFileSync(fixturePath('meta-hash-test.txt'))],
      ['leaf.bin', Buffer.from(patternBytes(256 * KiB))],
      ['two-leaves.bin', Buffer.from(patternBytes(256 * KiB + 1)).reverse()],
      ['film.mkv', Buffer.from(patternBytes(3 * MiB + 7))]
    ]
    for (const [rel, b] of files) write(dir, rel, b)
    const rate = 4 * MiB
    const t0 = Date.now()
    const n = await startLocal(dir, ['--full-hash-bytes-per-second', String(rate)])
    // The bytes at the bound, plus the scan and a generous margin for a shared machine.
    const budgetMs = 1000 * files.reduce((s, [, b]) => s + b.length, 0) / rate + 15_000
    const expected = files.map(([rel, b]) => ({ rel, size: b.length, sha: referenceSha256Cid(b), ipfs: referenceIpfsCid(b) }))
    // The original's vectors (docs/design/original.md#hash-spellings): the reference encoder is held to them in test/cid/content-cids.test.ts too.
    expect(expected.find(e => e.rel === 'empty.bin')?.sha).toBe('bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku')
    expect(expected.find(e => e.rel === 'hello.txt')?.sha).toBe('bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e')
    expect(expected.find(e => e.rel === 'test.txt')?.sha).toBe('bafkreif6exbiu6xq37kywo6uq6cy2dca7l2mr6z2oioj7zov3n776mkx5q')
    for (const e of expected) {
      await waitFor(async () => (await record(n, e.ipfs)).status === 200 && (await record(n, e.sha)).status === 200, {
        timeoutMs: Math.max(1000, budgetMs - (Date.now() - t0)), what: `${e.rel} to resolve by ${e.sha} and ${e.ipfs}`
      })
      const bySha = await record(n, e.sha)
      const byIpfs = await record(n, e.ipfs)
      const midhash = (await midhash256(path.join(dir, 'files', e.rel))).cid
      expect(bySha.body.metadata.filePath, e.rel).toBe(`/files/${e.rel}`)
      expect(new Set(byIpfs.body.cids), e.rel).toEqual(new Set([midhash, e.sha, e.ipfs]))
      // The rank ladder: a dag-pb root (40) above the sha2-256 CID (30), which for one leaf or less it is.
      expect(bySha.body.canonical_cid, e.rel).toBe(e.size > 256 * KiB ? e.ipfs : e.sha)
    }
    const s = await fullHash(n)
    expect(s).toMatchObject({ state: 'idle', algorithms: ['sha2-256', 'ipfs'], filesHashed: files.length, filesPending: 0, filesChanged: 0 })
    expect(s.bytesHashed).toBe(files.reduce((x, [, b]) => x + b.length, 0))
    // The bytes by the IPFS CID: the file the record names.
    const film = expected.find(e => e.rel === 'film.mkv')!
    const bytes = Buffer.from(await (await fetch(`${n.url}/file/${film.ipfs}`)).arrayBuffer())
    expect(bytes.equals(files.find(([rel]) => rel === 'film.mkv')![1])).toBe(true)
  }, 60_000)

  it('a file rewritten while it is read gets the new bytes\' CIDs only, whether its midhash changed or not', async () => {
    const dir = path.join(state.dir(), 'rewrite')
    const size = 2 * MiB
    const a = Buffer.from(patternBytes(size))
    const b = Buffer.from(patternBytes(size + 1))
    // a.bin's new bytes differ only outside the midhash sample: the same record (same midhash) must end with their CIDs;
    // b.bin's are other content: a new record, and the old one goes with its last copy.
    const next = new Map([['a.bin', Buffer.from(a)], ['b.bin', Buffer.from(b).reverse()]])
    next.get('a.bin')![0] ^= 0xff
    write(dir, 'a.bin', a)
    write(dir, 'b.bin', b)
    const n = await startLocal(dir, ['--full-hash-bytes-per-second', String(MiB)])
    const oldMid = new Map([['a.bin', (await midhash256(path.join(dir, 'files', 'a.bin'))).cid],
      ['b.bin', (await midhash256(path.join(dir, 'files', 'b.bin'))).cid]])
    const left = new Set(next.keys())
    while (left.size > 0) {
      let rel = ''
      await waitFor(async () => {
        const s = await fullHash(n)
        rel = s.current?.path ?? ''
        return left.has(rel) && (s.current?.bytesRead ?? 0) >= MiB / 2
      }, { timeoutMs: 20_000, what: `${[...left].join(' or ')} being read` })
      const changed = (await fullHash(n)).filesChanged
      write(dir, rel, next.get(rel)!)
      left.delete(rel)
      await waitFor(async () => (await fullHash(n)).filesChanged > changed, { timeoutMs: 20_000, what: `the read of ${rel} to be thrown away` })
    }
    for (const [rel, bytes] of next) {
      await waitFor(async () => (await record(n, referenceIpfsCid(bytes))).status === 200, { timeoutMs: 20_000, what: `${rel}'s new CIDs` })
      const mid = (await midhash256(path.join(dir, 'files', rel))).cid
      expect(new Set((await record(n, mid)).body.cids), rel).toEqual(new Set([mid, referenceSha256Cid(bytes), referenceIpfsCid(bytes)]))
    }
    expect(oldMid.get('a.bin')).toBe((await midhash256(path.join(dir, 'files', 'a.bin'))).cid)
    expect((await record(n, oldMid.get('b.bin')!)).status).toBe(404)
    // The first bytes' CIDs were never written: not in any record, not in the change log.
    const log = loggedKeys(n)
    for (const old of [a, b]) {
      for (const cid of [referenceSha256Cid(old), referenceIpfsCid(old)]) {
        expect(log).not.toContain(cid)
        expect((await record(n, cid)).status).toBe(404)
      }
    }
  }, 90_000)

  it('a restart in the middle goes on with the files left, and does not read the hashed ones again', async () => {
    const dir = path.join(state.dir(), 'restart')
    const contents = [0, 1, 2].map(i => Buffer.from(patternBytes(2 * MiB + i)))
    contents.forEach((b, i) => { write(dir, `f${i}.bin`, b) })
    let n = await startLocal(dir, ['--full-hash-bytes-per-second', String(MiB)])
    await waitFor(async () => { const s = await fullHash(n); return s.filesHashed >= 1 && (s.current?.bytesRead ?? 0) > 0 },
      { timeoutMs: 30_000, what: 'one file hashed and the next being read' })
    const before = await fullHash(n)
    await stopNode(n)
    n = await startLocal(dir, ['--full-hash-bytes-per-second', String(16 * MiB)])
    for (const b of contents) {
      await waitFor(async () => (await record(n, referenceIpfsCid(b))).status === 200 && (await record(n, referenceSha256Cid(b))).status === 200,
        { timeoutMs: 20_000, what: 'every file\'s CIDs after the restart' })
    }
    await waitFor(async () => (await fullHash(n)).state === 'idle', { timeoutMs: 10_000, what: 'the full hash to be done' })
    // The files hashed before the stop are not read again; the one read half-way and those after it are read now.
    const after = await fullHash(n)
    expect(after.filesKnown).toBeGreaterThanOrEqual(before.filesHashed)
    expect(after.filesHashed).toBeGreaterThanOrEqual(1)
    expect(after.filesKnown + after.filesHashed).toBe(contents.length)
  }, 90_000)

  it('a node holding content a peer has hashed does not read it again', async () => {
    const key = swarmKeyIn(state.dir())
    const content = Buffer.from(patternBytes(3 * MiB + 7))
    const dirA = path.join(state.dir(), 'a')
    const dirB = path.join(state.dir(), 'b')
    write(dirA, 'film.mkv', content)
    const a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true })
    state.nodes.push(a)
    const sha = referenceSha256Cid(content)
    await waitFor(async () => (await record(a, sha)).status === 200, { timeoutMs: 20_000, what: 'A to hash the film' })
    const b = await startMeshNode({ dir: dirB, swarmKey: key, watcher: true, bootstrap: [p2pAddr(a)] })
    state.nodes.push(b)
    await waitFor(async () => (await record(b, sha)).status === 200, { timeoutMs: 20_000, what: 'B to receive the record with its CIDs' })
    write(dirB, 'copy of film.mkv', content)
    await waitFor(async () => (await record(b, sha)).body.metadata[`holders/${b.mesh.peerId}`] === 'true',
      { timeoutMs: 20_000, what: 'B\'s watcher to record its copy' })
    await waitFor(async () => { const s = await fullHash(b); return s.state === 'idle' && s.filesKnown === 1 },
      { timeoutMs: 10_000, what: 'B to find the CIDs in the record' })
    expect(await fullHash(b)).toMatchObject({ filesHashed: 0, bytesHashed: 0, filesKnown: 1, filesPending: 0 })
    expect((await record(b, referenceIpfsCid(content))).body.metadata.filePath).toBe('/files/copy of film.mkv')
  }, 60_000)

  it('a file streamed from a peer is held to the sha2-256 CID the holder\'s watcher computed', async () => {
    const key = swarmKeyIn(state.dir())
    const content = Buffer.from(patternBytes(3 * MiB + 7))
    const dirA = path.join(state.dir(), 'holder')
    write(dirA, 'film.mkv', content)
    // Whole seconds, so the mtime can be set back exactly after the bytes are changed behind the watcher's back.
    const file = path.join(dirA, 'files', 'film.mkv')
    const when = new Date(Math.floor(Date.now() / 1000) * 1000 - 3_600_000)
    fs.utimesSync(file, when, when)
    const a = await startMeshNode({ dir: dirA, swarmKey: key, watcher: true })
    state.nodes.push(a)
    const b = await startMeshNode({ dir: path.join(state.dir(), 'asker'), swarmKey: key, bootstrap: [p2pAddr(a)] })
    state.nodes.push(b)
    const ipfs = referenceIpfsCid(content)
    await waitFor(async () => (await record(b, ipfs)).status === 200, { timeoutMs: 20_000, what: 'B to learn the record with its full-content CIDs' })
    const good = await fetch(`${b.url}/file/${ipfs}`)
    expect(good.headers.get('x-meta-core-served-by')).toBe(a.mesh.peerId)
    expect(Buffer.from(await good.arrayBuffer()).equals(content)).toBe(true)

    // One byte changed outside the midhash sample, size and mtime as recorded: A still serves the file as that content,
    // and only the whole-file digest can tell.
    const fd = fs.openSync(file, 'r+')
    fs.writeSync(fd, Buffer.from([content[0] ^ 0xff]), 0, 1, 0)
    fs.closeSync(fd)
    fs.utimesSync(file, when, when)
    const bad = await fetch(`${b.url}/file/${ipfs}`)
    expect(bad.status).toBe(200)
    await expect(bad.arrayBuffer()).rejects.toThrow()
    const metrics = await (await fetch(`${b.url}/metrics`)).text()
    expect(metrics).toContain(`meta_core_peer_bytes_integrity_failures_total{peer="${a.mesh.peerId}"} 1`)
  }, 60_000)

  it('a node that only registers files hashes them too, those it registered before full hashing was on included', async () => {
    const dir = path.join(state.dir(), 'register')
    const first = Buffer.from(patternBytes(300 * KiB))
    const second = Buffer.from(patternBytes(300 * KiB)).reverse()
    write(dir, 'plugin/first.bin', first)
    write(dir, 'plugin/second.bin', second)
    let n = await startLocal(dir, ['--enable-file-watcher', 'false', '--full-hash', 'none'])
    expect((await getJson(n, '/api/files/register', { method: 'POST', body: JSON.stringify({ path: 'plugin/first.bin' }) })).status).toBe(201)
    await stopNode(n)
    n = await startLocal(dir, ['--enable-file-watcher', 'false'])
    expect((await getJson(n, '/api/files/register', { method: 'POST', body: JSON.stringify({ path: 'plugin/second.bin' }) })).status).toBe(201)
    for (const b of [first, second]) {
      await waitFor(async () => (await record(n, referenceIpfsCid(b))).status === 200, { timeoutMs: 15_000, what: 'each registered file\'s full-content CIDs' })
    }
  }, 60_000)
})

