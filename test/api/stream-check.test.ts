/**
 * StreamCheck: the bytes of a whole transfer are held to every sha2-256 CID
 * of the record, in either spelling (raw codec, as the watcher and
 * `POST /file/cid` write it; codec = multihash, as the meta-hash library
 * does), and to its midhash; a range is held only to what covers it.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CODEC_RAW, encodeCidV1, midhash256FromSample, midhashCidFromDigest, midhashSampleRange, MH_SHA2_256 } from '../../src/cid/index.js'
import { StreamCheck } from '../../src/api/file-serving/stream-check.js'

const bytes = Buffer.alloc(3 * 1_048_576 + 7, 0x61)
for (let i = 0; i < bytes.length; i += 4099) bytes[i] = i & 0xff
const digest = new Uint8Array(createHash('sha256').update(bytes).digest())
const raw = encodeCidV1(CODEC_RAW, MH_SHA2_256, digest)
const metaHash = encodeCidV1(MH_SHA2_256, MH_SHA2_256, digest)
const r = midhashSampleRange(bytes.length)
const mid = midhashCidFromDigest(midhash256FromSample(bytes.length, bytes.subarray(r.offset, r.offset + r.length)))

function run (data: Buffer, cids: string[], start = 0, end = data.length - 1): { checked: string[], bad: string[] } {
  const c = new StreamCheck(cids, data.length, start, end)
  for (let at = start; at <= end; at += 65_536) c.update(data.subarray(at, Math.min(end + 1, at + 65_536)), at)
  return { checked: c.checked, bad: c.mismatches() }
}

describe('StreamCheck', () => {
  it('holds a whole transfer to both sha2-256 spellings and the midhash', () => {
    expect(run(bytes, [raw, metaHash, mid])).toEqual({ checked: [raw, metaHash, mid], bad: [] })
  })

  it('finds a byte changed outside the midhash sample by the sha2-256 CIDs alone', () => {
    const bad = Buffer.from(bytes)
    bad[0] ^= 1
    expect(run(bad, [raw, metaHash, mid]).bad).toEqual([raw, metaHash])
    expect(run(bad, [mid]).bad).toEqual([])
  })

  it('does not hold a range to a digest of the whole file', () => {
    expect(run(bytes, [raw, metaHash], 10, 1000).checked).toEqual([])
  })
})
