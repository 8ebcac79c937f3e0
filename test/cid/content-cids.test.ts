/**
 * contentCids: the full-content CIDs in one read, held against the original's
 * vectors (docs/design/original.md#identifiers-cids) and, for files of more
 * than one 256 KiB leaf, against
 * an encoder written from the UnixFS and dag-pb specs in the test helpers
 * (test/helpers/unixfs-reference.ts), itself held against the same vectors.
 */
import fs from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AbortedError } from '../../src/common/index.js'
import { cidRank, contentCids, midhash256, ShortReadError } from '../../src/cid/index.js'
import { referenceIpfsCid, referenceSha256Cid } from '../helpers/unixfs-reference.js'
import { fixturePath, patternBytes, tempDir, type TempDir } from './fixture-files.js'

const KiB = 1024
const MiB = 1_048_576

let dir: TempDir
beforeAll(async () => { dir = await tempDir() })
afterAll(async () => { await dir.remove() })

/** The original's sha2-256 raw CIDs; a file of one leaf or less has the same IPFS CID. */
const VECTORS: Array<[name: string, bytes: () => Buffer, sha: string]> = [
  ['empty', () => Buffer.alloc(0), 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'],
  ['hello world', () => Buffer.from('hello world'), 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'],
  ['test.txt', () => fs.readFileSync(fixturePath('meta-hash-test.txt')), 'bafkreif6exbiu6xq37kywo6uq6cy2dca7l2mr6z2oioj7zov3n776mkx5q']
]

describe('the reference encoder (test helper)', () => {
  it('gives the original\'s vectors', () => {
    for (const [name, bytes, sha] of VECTORS) {
      expect(referenceSha256Cid(bytes()), name).toBe(sha)
      expect(referenceIpfsCid(bytes()), name).toBe(sha)
    }
  })
})

describe('contentCids', () => {
  it('gives the original\'s vectors, and the midhash of the same bytes', async () => {
    for (const [name, bytes, sha] of VECTORS) {
      const b = bytes()
      const f = await dir.file(name, b)
      const r = await contentCids(f, { size: b.length, algorithms: ['sha2-256', 'ipfs'] })
      expect(r.sha256, name).toBe(sha)
      expect(r.ipfs, name).toBe(sha)
      expect(r.midhash, name).toBe((await midhash256(f)).cid)
      expect(r.size).toBe(b.length)
      expect(r.before).toEqual(r.after)
    }
  })

  it('matches the reference encoder across the leaf boundary and the 174-link fan-out', async () => {
    const sizes = [256 * KiB, 256 * KiB + 1, 3 * MiB + 7, 174 * 256 * KiB, 174 * 256 * KiB + 1]
    for (const n of sizes) {
      const b = Buffer.from(patternBytes(n))
      const f = await dir.file(`p-${n}`, b)
      const r = await contentCids(f, { size: n, algorithms: ['sha2-256', 'ipfs'] })
      expect(r.sha256, `${n} B`).toBe(referenceSha256Cid(b))
      expect(r.ipfs, `${n} B`).toBe(referenceIpfsCid(b))
      expect(cidRank(r.ipfs!), `${n} B`).toBe(n > 256 * KiB ? 40 : 30)
      expect(r.midhash, `${n} B`).toBe((await midhash256(f)).cid)
    }
  })

  it('computes only what it is asked for', async () => {
    const b = Buffer.from(patternBytes(300 * KiB))
    const f = await dir.file('only', b)
    const sha = await contentCids(f, { size: b.length, algorithms: ['sha2-256'] })
    expect(sha.sha256).toBe(referenceSha256Cid(b))
    expect(sha.ipfs).toBeUndefined()
    const ipfs = await contentCids(f, { size: b.length, algorithms: ['ipfs'] })
    expect(ipfs.ipfs).toBe(referenceIpfsCid(b))
    expect(ipfs.sha256).toBeUndefined()
  })

  it('reads each byte once, through the gate', async () => {
    const n = 2 * MiB + 5
    const f = await dir.file('gated', patternBytes(n))
    const asked: number[] = []
    let read = 0
    await contentCids(f, {
      size: n,
      algorithms: ['sha2-256', 'ipfs'],
      gate: async (bytes) => { asked.push(bytes) },
      onRead: (bytes) => { read += bytes }
    })
    expect(asked.reduce((s, x) => s + x, 0)).toBe(n)
    expect(read).toBe(n)
  })

  it('refuses a file shorter than its size, and stops when aborted', async () => {
    const f = await dir.file('short', patternBytes(1000))
    await expect(contentCids(f, { size: 2000, algorithms: ['sha2-256', 'ipfs'] })).rejects.toBeInstanceOf(ShortReadError)
    const ac = new AbortController()
    const big = await dir.file('abort', patternBytes(3 * MiB))
    const p = contentCids(big, { size: 3 * MiB, algorithms: ['sha2-256', 'ipfs'], signal: ac.signal, gate: async () => { ac.abort() } })
    await expect(p).rejects.toBeInstanceOf(AbortedError)
  })

  it('says when the file changed on its handle while it was read', async () => {
    const n = 2 * MiB
    const f = await dir.file('changing', patternBytes(n))
    let first = true
    const r = await contentCids(f, {
      size: n,
      algorithms: ['sha2-256'],
      gate: async () => {
        if (!first) return
        first = false
        fs.appendFileSync(f, 'more')
      }
    })
    expect(r.after.size).toBe(n + 4)
    expect(r.before.size).toBe(n)
  })
})
