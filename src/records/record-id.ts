import { randomBytes } from 'node:crypto'
import type { Brand } from '../common/index.js'

/**
 * Root ids: UUIDv7 (RFC 9562) written as 26 Crockford base32 characters in the
 * ULID layout (128 bits read as 130 with two leading zero bits). Time-ordered,
 * so `file:` writes append near the end of the B-tree, and monotonic within a
 * millisecond: the 74 bits after the timestamp are incremented, not redrawn,
 * when the clock has not moved (or stepped back).
 *
 * Our own minter rather than the `uuid` or `ulid` package's: neither writes
 * a UUIDv7 in the ULID layout with that increment (uuid's v7 keeps a 12-bit
 * counter; ulid's monotonic factory increments all 80 bits, version and
 * variant included), nor takes an injected clock and seeded randomness,
 * which the simulator needs to mint the same ids by seed. The tests check
 * this encoder against both packages (test/records/record-id.test.ts).
 */
export type RecordId = Brand<string, 'RecordId'>

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
const RID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/
const MASK_74 = (1n << 74n) - 1n

/** A source of uniform numbers in [0, 1), like Math.random or a seeded generator. */
export type RandomSource = () => number

/**
 * Mints root ids for one clock and one source of randomness. A store given a
 * virtual clock and a seeded source mints the same ids on every run; the
 * default draws from the OS (crypto) like every node in production.
 */
export class RecordIdMinter {
  private lastMs = -1
  private lastRand = 0n
  // OS random bytes are drawn in blocks: one crypto call per 100 ids instead of one per id.
  private pool = Buffer.alloc(0)
  private poolAt = 0

  constructor (private readonly random?: RandomSource) {}

  /** A fresh root id, greater than every id this minter issued before. */
  next (now: number): RecordId {
    let ms = now
    let rand: bigint
    if (ms <= this.lastMs) {
      ms = this.lastMs
      rand = (this.lastRand + 1n) & MASK_74
      if (rand === 0n) ms++ // 2^74 ids in one millisecond: borrow the next one
    } else {
      // Leave headroom so increments within this millisecond rarely overflow.
      rand = (this.random80() & MASK_74) >> 1n
    }
    this.lastMs = ms
    this.lastRand = rand
    return encodeUuidV7(ms, rand)
  }

  private random80 (): bigint {
    let r = 0n
    if (this.random !== undefined) {
      // Three 32-bit draws cover the 80 bits a fresh millisecond needs.
      for (let i = 0; i < 3; i++) r = (r << 32n) | BigInt(Math.floor(this.random() * 4294967296) >>> 0)
      return r
    }
    if (this.poolAt + 10 > this.pool.length) {
      this.pool = randomBytes(1000)
      this.poolAt = 0
    }
    for (let i = this.poolAt; i < this.poolAt + 10; i++) r = (r << 8n) | BigInt(this.pool[i])
    this.poolAt += 10
    return r
  }
}

const processMinter = new RecordIdMinter()

/** A fresh root id from the process-wide minter (OS randomness), greater than every id it minted before. */
export function newRecordId (now: number = Date.now()): RecordId {
  return processMinter.next(now)
}

/** Packs 48-bit ms + 74 random bits into UUIDv7 (version 7, variant 10) and encodes it. */
export function encodeUuidV7 (ms: number, rand74: bigint): RecordId {
  const randA = (rand74 >> 62n) & 0xfffn
  const randB = rand74 & ((1n << 62n) - 1n)
  const v = (BigInt(ms) << 80n) | (0x7n << 76n) | (randA << 64n) | (0x2n << 62n) | randB
  return encodeCrockford128(v) as RecordId
}

function encodeCrockford128 (v: bigint): string {
  let out = ''
  for (let i = 25; i >= 0; i--) out += ALPHABET[Number((v >> BigInt(i * 5)) & 31n)]
  return out
}

/** Decodes 26 Crockford characters to the 128-bit value (no validation). */
export function decodeRecordId (s: string): bigint {
  let v = 0n
  for (const c of s) v = (v << 5n) | BigInt(ALPHABET.indexOf(c))
  return v
}

/**
 * True for a well-formed root id: 26 upper-case Crockford characters holding a UUIDv7.
 * Character i holds bits 129 - 5i down to 125 - 5i of the 130, so the version
 * (bits 79-76) is the top four bits of character 10 and the variant (bits
 * 63-62) bits 3-2 of character 13: read from those two, without decoding the
 * whole id (every root a peer's entries name is checked, and a decode to a bigint
 * allocated about 2 KiB per call).
 */
export function isRecordId (s: unknown): s is RecordId {
  if (typeof s !== 'string' || !RID_RE.test(s)) return false
  return ((ALPHABET.indexOf(s[10]) >> 1) & 0xf) === 7 && ((ALPHABET.indexOf(s[13]) >> 2) & 0x3) === 2
}

/** The millisecond timestamp in a root id. */
export function recordIdTime (rid: RecordId): number {
  return Number(decodeRecordId(rid) >> 80n)
}
