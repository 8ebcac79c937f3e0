import { describe, expect, it } from 'vitest'
import { decodeRecordId, encodeUuidV7, isRecordId, newRecordId, recordIdTime } from '../../src/records/index.js'

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
    let accepted = 0
    for (let trial = 0; trial < 2000; trial++) {
      const c = [...base]
      // Random characters elsewhere, and every pair of values at the two positions that carry the bits.
      for (let i = 1; i < 26; i++) c[i] = A[Math.floor(Math.random() * 32)]
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
