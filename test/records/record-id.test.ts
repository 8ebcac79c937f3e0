/**
 * Root ids (src/records/record-id.ts). The minter is our own rather than
 * `ulid`'s or `uuid`'s: it writes a UUIDv7 in the ULID layout (neither
 * package mints that), increments the 74 bits after the timestamp within a
 * millisecond and when the clock steps back (uuid's v7 keeps a 12-bit
 * counter, ulid's monotonic factory increments 80 bits, version and variant
 * included), and takes an injected clock and source of randomness, so the
 * simulator mints the same ids by seed. Both packages serve here as
 * independent references: uuid makes UUIDv7s, ulid writes them in the
 * ULID layout, and our encoder and decoder must agree with both.
 */
import { ulidToUUID, uuidToULID, decodeTime } from 'ulid'
import { parse as parseUuid, v7 as uuidV7, validate as validUuid, version as uuidVersion } from 'uuid'
import { describe, expect, it } from 'vitest'
import { decodeRecordId, encodeUuidV7, isRecordId, newRecordId, recordIdTime, RecordIdMinter } from '../../src/records/index.js'
import { prng } from '../helpers/prng.js'

/** A UUID's 128 bits. */
const bitsOf = (uuid: string): bigint => BigInt('0x' + Buffer.from(parseUuid(uuid)).toString('hex'))

describe('record ids against uuid and ulid', () => {
  it('encode the UUIDv7s uuid makes exactly as ulid writes them in the ULID layout', () => {
    const rand = prng(46)
    for (let i = 0; i < 200; i++) {
      const msecs = Math.floor(rand() * 2 ** 47)
      const random = Uint8Array.from({ length: 16 }, () => Math.floor(rand() * 256))
      const uuid = uuidV7({ msecs, random })
      const v = bitsOf(uuid)
      // The 74 bits uuid filled beside the version and variant: rand_a (12) and rand_b (62).
      const rand74 = (((v >> 64n) & 0xfffn) << 62n) | (v & ((1n << 62n) - 1n))
      const id = encodeUuidV7(msecs, rand74)
      expect(id, uuid).toBe(uuidToULID(uuid))
      expect(decodeRecordId(id)).toBe(v)
      expect(isRecordId(id)).toBe(true)
      expect(recordIdTime(id)).toBe(msecs)
      expect(decodeTime(id)).toBe(msecs)
    }
  })

  it('mint ids that read back, through ulid, as RFC 9562 version-7 UUIDs with their timestamp', () => {
    const minter = new RecordIdMinter(prng(7))
    const t0 = 1_764_800_000_000
    for (let i = 0; i < 200; i++) {
      const now = t0 + Math.floor(i / 3) - (i % 17 === 0 ? 5 : 0)
      const id = minter.next(now)
      const uuid = ulidToUUID(id).toLowerCase()
      expect(validUuid(uuid)).toBe(true)
      expect(uuidVersion(uuid)).toBe(7)
      expect(bitsOf(uuid)).toBe(decodeRecordId(id))
      expect(decodeTime(id)).toBe(recordIdTime(id))
    }
  })

  it('refuse UUIDs of other versions written in the same layout', () => {
    const rand = prng(8)
    for (let i = 0; i < 50; i++) {
      const random = Uint8Array.from({ length: 16 }, () => Math.floor(rand() * 256))
      // A UUIDv4 from the same bytes (uuid sets its version and variant bits).
      const v4 = [...Buffer.from(random)]
      v4[6] = (v4[6] & 0x0f) | 0x40
      v4[8] = (v4[8] & 0x3f) | 0x80
      const hex = Buffer.from(v4).toString('hex')
      const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
      expect(uuidVersion(uuid)).toBe(4)
      expect(isRecordId(uuidToULID(uuid))).toBe(false)
    }
  })
})

describe('record ids', () => {
  it('are 26 Crockford base32 characters holding a UUIDv7 with version and variant bits', () => {
    const id = newRecordId()
    expect(id).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/)
    const v = decodeRecordId(id)
    expect((v >> 76n) & 0xfn).toBe(7n)
    expect((v >> 62n) & 0x3n).toBe(2n)
    expect(isRecordId(id)).toBe(true)
  })

  it('carry the millisecond timestamp in the leading 48 bits', () => {
    // Ahead of every id minted so far in this process (ids never go back in time).
    const t = Date.now() + 1_000_000_000
    expect(recordIdTime(newRecordId(t))).toBe(t)
    expect(recordIdTime(encodeUuidV7(t, 5n))).toBe(t)
  })

  it('are strictly increasing within one millisecond and when the clock steps back', () => {
    const now = Date.now() + 2_000_000_000
    const ids = [newRecordId(now), newRecordId(now), newRecordId(now), newRecordId(now - 5000), newRecordId(now + 1)]
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true)
    const many = Array.from({ length: 10_000 }, () => newRecordId(now + 2))
    expect(new Set(many).size).toBe(10_000)
    expect([...many].sort()).toEqual(many)
  })

  it('refuses strings that are not UUIDv7 roots', () => {
    const id = newRecordId()
    for (const bad of ['', id.toLowerCase(), id.slice(1), id + 'A', 'I' + id.slice(1), '8' + id.slice(1), 'bafkreiabc', 'ZZZZZZZZZZZZZZZZZZZZZZZZZZ']) {
      expect(isRecordId(bad)).toBe(false)
    }
    // A valid Crockford string whose version nibble is 4 (a UUIDv4) is not a root id.
    const v4 = encodeUuidV7(1, 0n).split('')
    const asV4 = (decodeRecordId(v4.join('')) & ~(0xfn << 76n)) | (4n << 76n)
    let s = ''
    const A = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
    for (let i = 25; i >= 0; i--) s += A[Number((asV4 >> BigInt(i * 5)) & 31n)]
    expect(isRecordId(s)).toBe(false)
  })

  it('read version and variant from their characters as a full decode does, for every value of those characters', () => {
    const A = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
    const base = newRecordId().split('')
    const random = prng(2026)
    let accepted = 0
    for (let trial = 0; trial < 2000; trial++) {
      const c = [...base]
      // Random characters elsewhere, and every pair of values at the two positions that carry the bits.
      for (let i = 1; i < 26; i++) c[i] = A[Math.floor(random() * 32)]
      c[10] = A[trial % 32]
      c[13] = A[Math.floor(trial / 32) % 32]
      const s = c.join('')
      const v = decodeRecordId(s)
      const expected = ((v >> 76n) & 0xfn) === 7n && ((v >> 62n) & 0x3n) === 2n
      expect(isRecordId(s)).toBe(expected)
      if (expected) accepted++
    }
    // 2 of the 32 values of character 10 and 8 of character 13 make a root id: both outcomes are exercised.
    expect(accepted).toBeGreaterThan(0)
    expect(accepted).toBeLessThan(2000)
  })
})
