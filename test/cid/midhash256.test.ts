import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { mkdir, open } from 'node:fs/promises'
import { join } from 'node:path'
import { AbortedError, InvalidInputError } from '../../src/common/index.js'
import {
  cidRank, decodeCid, encodeCidV1, midhash256, midhash256FromSample, midhashCidFromDigest, midhashSampleRange,
  MIDHASH_SAMPLE_BYTES, NotAFileError, parseCid, ShortReadError
} from '../../src/cid/index.js'
import { hex, loadJsonFixture, patternBytes, tempDir, vectorInput } from './fixture-files.js'
import type { TempDir } from './fixture-files.js'

interface MidhashVector { name: string, size: number, digest: string, cid: string }
const { vectors } = loadJsonFixture<{ vectors: MidhashVector[] }>('midhash-vectors.json')

const MiB = 1_048_576
const GiB = 1024 * MiB

let dir: TempDir
beforeAll(async () => { dir = await tempDir() })
afterAll(async () => { await dir.remove() })

describe('midhash256 vectors', () => {
  it('covers every boundary the algorithm names (docs/design/original.md#midhash256)', () => {
    expect(vectors.map(v => v.name)).toEqual(expect.arrayContaining([
      'empty', 'hello world', 'meta-hash-test.txt', 'zeros-1048576', 'zeros-1048577', 'zeros-2097152', 'pattern-3145733'
    ]))
  })

  for (const v of vectors) {
    it(`${v.name}: file on disk`, async () => {
      const bytes = await vectorInput(v.name)
      expect(bytes.length).toBe(v.size)
      const path = await dir.file(v.name.replace(/\W/g, '_'), bytes)
      const r = await midhash256(path)
      expect(r.size).toBe(v.size)
      expect(hex(r.digest)).toBe(v.digest)
      expect(r.cid).toBe(v.cid)
      expect(r.cid.startsWith('bagacbabae')).toBe(true)
      expect(r.cid.length).toBe(62)
      expect(parseCid(r.cid)).toBe(v.cid)
      expect(cidRank(r.cid)).toBe(10)
      // with the size supplied (the watcher's path), no stat, same answer
      expect((await midhash256(path, { size: v.size })).cid).toBe(v.cid)
    })

    it(`${v.name}: pure from sample`, async () => {
      const bytes = await vectorInput(v.name)
      const { offset, length } = midhashSampleRange(v.size)
      const digest = midhash256FromSample(v.size, bytes.subarray(offset, offset + length))
      expect(hex(digest)).toBe(v.digest)
      expect(midhashCidFromDigest(digest)).toBe(v.cid)
    })
  }

  it('raw-codec spelling of the fixture midhash (docs/design/original.md#midhash256)', async () => {
    const v = vectors.find(x => x.name === 'meta-hash-test.txt')!
    const digest = Buffer.from(v.digest, 'hex')
    expect(encodeCidV1(0x55, 0x1000, digest)).toBe('bafkyaibadip36tbkfzxsqrxqbrkcstd4y2prxs7jjoyfussnavzry6ptmy6q')
    expect(decodeCid(v.cid)).toEqual({ version: 1, codec: 0x1000, mhCode: 0x1000, digest: new Uint8Array(digest) })
  })
})

describe('midhashSampleRange', () => {
  it('whole file up to and including 1 MiB, centred 1 MiB above', () => {
    expect(MIDHASH_SAMPLE_BYTES).toBe(MiB)
    expect(midhashSampleRange(0)).toEqual({ offset: 0, length: 0 })
    expect(midhashSampleRange(MiB)).toEqual({ offset: 0, length: MiB })
    expect(midhashSampleRange(MiB + 1)).toEqual({ offset: 0, length: MiB })
    expect(midhashSampleRange(MiB + 2)).toEqual({ offset: 1, length: MiB })
    expect(midhashSampleRange(2 * MiB)).toEqual({ offset: 524_288, length: MiB })
    expect(midhashSampleRange(3_145_733)).toEqual({ offset: 1_048_578, length: MiB })
    expect(midhashSampleRange(2 ** 45)).toEqual({ offset: (2 ** 45 - MiB) / 2, length: MiB })
  })

  it('refuses negative and fractional sizes', () => {
    expect(() => midhashSampleRange(-1)).toThrow(InvalidInputError)
    expect(() => midhashSampleRange(1.5)).toThrow(InvalidInputError)
    expect(() => midhashSampleRange(Number.NaN)).toThrow(InvalidInputError)
  })

  it('midhash256FromSample refuses a sample of the wrong length', () => {
    expect(() => midhash256FromSample(10, new Uint8Array(9))).toThrow(InvalidInputError)
    expect(() => midhash256FromSample(3 * MiB, new Uint8Array(3 * MiB))).toThrow(InvalidInputError)
    expect(() => midhashCidFromDigest(new Uint8Array(31))).toThrow(InvalidInputError)
  })
})

describe('midhash256 on large sparse files', () => {
  /** Sparse file of `size` bytes with a distinct 1 MiB sample in the middle and non-zero bytes just around it. */
  async function sparseFile (name: string, size: number): Promise<{ path: string, sample: Uint8Array }> {
    const path = join(dir.path, name)
    const { offset, length } = midhashSampleRange(size)
    const sample = patternBytes(length)
    const fh = await open(path, 'w')
    try {
      await fh.truncate(size)
      await fh.write(sample, 0, length, offset)
      // bytes outside the window: hashing them would change the digest
      await fh.write(Buffer.from([0xff]), 0, 1, offset - 1)
      await fh.write(Buffer.from([0xff]), 0, 1, offset + length)
      await fh.write(Buffer.from([0xee]), 0, 1, 0)
      await fh.write(Buffer.from([0xee]), 0, 1, size - 1)
    } finally {
      await fh.close()
    }
    return { path, sample }
  }

  it('2 GiB: hashes exactly the middle 1 MiB, quickly', async () => {
    const size = 2 * GiB
    const { path, sample } = await sparseFile('sparse-2g.bin', size)
    const t0 = performance.now()
    const r = await midhash256(path)
    const ms = performance.now() - t0
    expect(r.size).toBe(size)
    expect(hex(r.digest)).toBe(hex(midhash256FromSample(size, sample)))
    expect(r.cid).toBe(midhashCidFromDigest(midhash256FromSample(size, sample)))
    expect(ms).toBeLessThan(1000)
  })

  it('64 GiB: finishes far faster than reading the file could', async () => {
    // Streaming 64 GiB, even of holes, takes tens of seconds; a 1 MiB
    // positioned read takes milliseconds.
    const size = 64 * GiB
    const { path, sample } = await sparseFile('sparse-64g.bin', size)
    const t0 = performance.now()
    const r = await midhash256(path)
    expect(performance.now() - t0).toBeLessThan(2000)
    expect(hex(r.digest)).toBe(hex(midhash256FromSample(size, sample)))
  })
})

describe('midhash256 failures', () => {
  it('a size past the end of the file is a short read, not a zero-filled hash', async () => {
    const path = await dir.file('short.bin', patternBytes(1000))
    await expect(midhash256(path, { size: 1001 })).rejects.toBeInstanceOf(ShortReadError)
    await expect(midhash256(path, { size: 3 * MiB })).rejects.toMatchObject({ code: 'short_read' })
  })

  it('a directory is not a file', async () => {
    const sub = join(dir.path, 'a-directory')
    await mkdir(sub)
    await expect(midhash256(sub)).rejects.toBeInstanceOf(NotAFileError)
  })

  it('a missing file surfaces the fs error', async () => {
    await expect(midhash256(join(dir.path, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('an aborted signal stops before reading', async () => {
    const path = await dir.file('abort.bin', patternBytes(10))
    const ac = new AbortController()
    ac.abort()
    await expect(midhash256(path, { signal: ac.signal })).rejects.toBeInstanceOf(AbortedError)
  })
})
