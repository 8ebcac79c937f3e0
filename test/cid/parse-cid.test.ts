import { describe, it, expect } from 'vitest'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { InvalidInputError, MetaCoreError } from '../../src/common/index.js'
import {
  decodeCid, encodeBase32Lower, encodeCidV1, InvalidCidError, isCid, MAX_CID_STRING_LENGTH, parseCid
} from '../../src/cid/index.js'
import { hex, loadJsonFixture } from './fixture-files.js'

interface RankVector { name: string, cid: string, rank: number }
const { vectors } = loadJsonFixture<{ vectors: RankVector[] }>('cid-rank-vectors.json')

const SHA256_EMPTY = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const SHA256_HELLO = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
const SHA256_FIXTURE = 'bafkreif6exbiu6xq37kywo6uq6cy2dca7l2mr6z2oioj7zov3n776mkx5q'
const MIDHASH_EMPTY = 'bagacbabaecxvk4hvugaqw6xxrsxuxrykmyhq35i6ik5pshkn4wzdfdpa5a67y'

/** The error parseCid throws for `s`, asserting its class and code. */
function refusal (s: unknown): InvalidCidError {
  let caught: unknown
  try {
    parseCid(s)
  } catch (err) {
    caught = err
  }
  expect(caught).toBeInstanceOf(InvalidCidError)
  const e = caught as InvalidCidError
  expect(e).toBeInstanceOf(InvalidInputError)
  expect(e).toBeInstanceOf(MetaCoreError)
  expect(e.code).toBe('invalid_cid')
  expect(e.name).toBe('InvalidCidError')
  expect(e.message).toBe(e.message.toLowerCase())
  expect(isCid(s)).toBe(false)
  expect(decodeCid(s)).toBeUndefined()
  return e
}

function bytesToCidString (bytes: number[]): string {
  return 'b' + encodeBase32Lower(Uint8Array.from(bytes))
}

describe('parseCid accepts', () => {
  for (const s of [SHA256_EMPTY, SHA256_HELLO, SHA256_FIXTURE, MIDHASH_EMPTY]) {
    it(s, () => {
      expect(parseCid(s)).toBe(s)
      expect(isCid(s)).toBe(true)
    })
  }

  it('every rank vector above 0', () => {
    const ranked = vectors.filter(v => v.rank > 0)
    expect(ranked.length).toBeGreaterThanOrEqual(18)
    for (const v of ranked) expect(isCid(v.cid), v.name).toBe(true)
  })

  it('structurally valid rank-0 vectors (weak digests are still CIDs)', () => {
    for (const name of ['sha1', 'md5', 'crc32', 'bt-pieces-root']) {
      const v = vectors.find(x => x.name === name)!
      expect(parseCid(v.cid), name).toBe(v.cid)
    }
  })

  it('a 64-byte digest, the cap', () => {
    const s = encodeCidV1(0x1006, 0x00, new Uint8Array(64).fill(0x61))
    expect(isCid(s)).toBe(true)
    expect(decodeCid(s)?.digest.length).toBe(64)
  })
})

describe('parseCid refuses', () => {
  it('the unparseable rank-0 vectors', () => {
    const names = ['cidv0-rejected', 'token-form-rejected', 'garbage', 'empty']
    for (const name of names) refusal(vectors.find(x => x.name === name)!.cid)
  })

  it('CIDv0', () => {
    expect(refusal('QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG').message).toMatch(/cidv0/)
  })

  it('the <algo>:<cid> token form', () => {
    expect(refusal('midhash256:' + MIDHASH_EMPTY).message).toMatch(/token form/)
    expect(refusal('sha256:' + SHA256_EMPTY).message).toMatch(/token form/)
  })

  it('upper-case base32 (multibase B) and mixed case', () => {
    expect(refusal(SHA256_EMPTY.toUpperCase()).message).toMatch(/base32-lower/)
    expect(refusal('b' + SHA256_EMPTY.slice(1).toUpperCase()).message).toMatch(/uppercase/)
    expect(refusal(SHA256_EMPTY.slice(0, 10) + 'Q' + SHA256_EMPTY.slice(11)).message).toMatch(/uppercase/)
  })

  it('other multibases', () => {
    const cid = CID.parse(SHA256_HELLO)
    expect(refusal(cid.toString(base58btc)).message).toMatch(/base32-lower/) // z…
    refusal('f01551220' + 'ab'.repeat(32)) // base16
    refusal('u' + Buffer.from(cid.bytes).toString('base64url')) // base64url
  })

  it('empty and non-string input', () => {
    expect(refusal('').message).toBe('empty cid')
    for (const v of [undefined, null, 42, {}, [SHA256_EMPTY], new String(SHA256_EMPTY)]) {
      expect(refusal(v).message).toBe('cid must be a string')
    }
  })

  it('truncated CIDs', () => {
    for (let cut = 1; cut < SHA256_HELLO.length; cut++) refusal(SHA256_HELLO.slice(0, SHA256_HELLO.length - cut))
  })

  it('a digest length that does not match the bytes', () => {
    const digest = Array.from({ length: 31 }, (_, i) => i)
    expect(refusal(bytesToCidString([0x01, 0x55, 0x12, 0x20, ...digest])).message).toBe('digest length does not match')
    expect(refusal(bytesToCidString([0x01, 0x55, 0x12, 0x1e, ...digest])).message).toBe('digest length does not match')
  })

  it('a digest over 64 bytes', () => {
    const digest = new Array<number>(65).fill(7)
    expect(refusal(bytesToCidString([0x01, 0x86, 0x20, 0x00, 0x41, ...digest])).message).toMatch(/64 bytes/)
    expect(() => encodeCidV1(0x1006, 0, new Uint8Array(65))).toThrow(InvalidCidError)
  })

  it('a version other than 1, and non-minimal or truncated varints', () => {
    expect(refusal(bytesToCidString([0x00, 0x55, 0x12, 0x01, 0xaa])).message).toMatch(/version/)
    expect(refusal(bytesToCidString([0x02, 0x55, 0x12, 0x01, 0xaa])).message).toMatch(/version/)
    refusal(bytesToCidString([0x81, 0x00, 0x55, 0x12, 0x01, 0xaa])) // version 1 spelled in two bytes
    refusal(bytesToCidString([0x01, 0xd5, 0x80, 0x00, 0x01, 0xaa])) // codec 0xd5 padded to three bytes
    refusal(bytesToCidString([0x01, 0x55, 0x92])) // runs off the end
    refusal('b')
  })

  it('non-canonical base32: bad lengths, non-zero trailing bits, padding', () => {
    // the last char of SHA256_HELLO carries 2 trailing zero bits; flipping them gives the same bytes
    const last = SHA256_HELLO.at(-1)!
    const twin = SHA256_HELLO.slice(0, -1) + String.fromCharCode(last.charCodeAt(0) + 1)
    expect(refusal(twin).message).toMatch(/trailing bits/)
    refusal(SHA256_HELLO + 'a') // 1 extra char: no byte count encodes to this length
    refusal(SHA256_HELLO + '=')
    refusal(SHA256_HELLO + '======')
  })

  it('what multiformats alone accepts: mixed case, padding, CIDv0 bytes, codes past 2^49', () => {
    // multiformats' base32 codec is case-insensitive and strips padding; both would give one CID two spellings
    expect(() => CID.parse(SHA256_HELLO.slice(0, 12) + SHA256_HELLO.slice(12).toUpperCase())).not.toThrow()
    expect(refusal(SHA256_HELLO.slice(0, 12) + SHA256_HELLO.slice(12).toUpperCase()).message).toMatch(/uppercase/)
    expect(refusal(SHA256_HELLO + '====').message).toBe('invalid base32 character')
    // a CIDv0 (bare sha2-256 multihash) spelled in base32 is a v0 CID to multiformats
    const v0 = bytesToCidString([0x12, 0x20, ...new Array<number>(32).fill(1)])
    expect(refusal(v0).message).toBe('cid version must be 1')
    // codec 2^49 (eight varint bytes): past what a JS number keeps exact through encode and decode
    const big = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
    expect(refusal(bytesToCidString([0x01, ...big, 0x12, 0x01, 0xaa])).message).toBe('truncated or malformed cid header')
    expect(() => encodeCidV1(2 ** 49, 0x12, new Uint8Array(1))).toThrow(InvalidCidError)
    expect(isCid(encodeCidV1(2 ** 49 - 1, 0x12, new Uint8Array(1)))).toBe(true)
  })

  it('garbage and over-long input', () => {
    for (const s of ['not-a-cid', 'b!!!!', 'b0189', 'bafy bei', ' ' + SHA256_EMPTY, SHA256_EMPTY + '\n', 'b\u00e9aaaaaa', 'hello']) refusal(s)
    expect(refusal('b' + 'a'.repeat(MAX_CID_STRING_LENGTH)).message).toBe('cid too long')
    expect(refusal('b' + 'a'.repeat(10_000_000)).message).toBe('cid too long')
  })
})

describe('decodeCid / encodeCidV1', () => {
  it('decodes the hello-world sha256 raw CID', () => {
    const d = decodeCid(SHA256_HELLO)!
    expect(d.version).toBe(1)
    expect(d.codec).toBe(0x55)
    expect(d.mhCode).toBe(0x12)
    expect(hex(d.digest)).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9')
  })

  it('returns a copy that a later decode does not overwrite', () => {
    const a = decodeCid(SHA256_HELLO)!
    decodeCid(SHA256_EMPTY)
    expect(hex(a.digest)).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9')
  })

  it('round-trips every parseable rank vector', () => {
    for (const v of vectors) {
      const d = decodeCid(v.cid)
      if (d === undefined) continue
      expect(encodeCidV1(d.codec, d.mhCode, d.digest), v.name).toBe(v.cid)
    }
  })

  it('agrees with multiformats on codec/mh/digest, both directions', () => {
    const codes = [0x00, 0x12, 0x55, 0x70, 0xd5, 0x0132, 0x1000, 0x1003, 0x100a, 0x10b7, 0xb702, 0x300001]
    let n = 0
    for (const codec of codes) {
      for (const mh of codes) {
        for (const len of [0, 1, 4, 20, 31, 32, 48, 64]) {
          const digest = Uint8Array.from({ length: len }, (_, i) => (i * 37 + codec + mh + len) & 0xff)
          const ours = encodeCidV1(codec, mh, digest)
          const theirs = CID.create(1, codec, Digest.create(mh, digest)).toString()
          expect(ours).toBe(theirs)
          const back = decodeCid(theirs)!
          const ref = CID.parse(theirs)
          expect([back.codec, back.mhCode, hex(back.digest)]).toEqual([ref.code, ref.multihash.code, hex(ref.multihash.digest)])
          n++
        }
      }
    }
    expect(n).toBe(codes.length * codes.length * 8)
  })

  it('encodeCidV1 refuses bad codes', () => {
    expect(() => encodeCidV1(-1, 0x12, new Uint8Array(32))).toThrow(InvalidCidError)
    expect(() => encodeCidV1(0x55, 1.5, new Uint8Array(32))).toThrow(InvalidCidError)
    expect(() => encodeCidV1(2 ** 53, 0x12, new Uint8Array(32))).toThrow(InvalidCidError)
  })
})
