import { varint } from 'multiformats'
import { CID } from 'multiformats/cid'
import type { Brand } from '../common/index.js'
import { base32ByteLength, checkBase32Lower, decodeBase32Lower } from './base32.js'
import { MAX_CODE, MAX_DIGEST_BYTES } from './codes.js'
import { InvalidCidError } from './errors.js'

/** A strict MetaMesh CID string: CIDv1, multibase base32-lower (`b…`), canonical spelling. */
export type Cid = Brand<string, 'Cid'>

interface DecodedCid {
  version: 1
  codec: number
  mhCode: number
  digest: Uint8Array
}

/**
 * Cheap bound checked before decoding anything. The real ceiling is lower
 * (a 64-byte digest plus header is at most ~130 chars) and is enforced by
 * the digest cap; this only stops us decoding megabytes of junk.
 */
export const MAX_CID_STRING_LENGTH = 256

const B = 0x62 // 'b'

/**
 * Characters decoded to read a header: 16 characters are 10 bytes exactly,
 * enough for version, codec, multihash code and digest length with every
 * code in the multicodec table (longer headers decode the whole string).
 */
const HEADER_CHARS = 16

/** The header of a strict CID. */
interface CidHeader {
  codec: number
  mhCode: number
  digestLength: number
}

/** version ‖ codec ‖ mh code ‖ digest length, read by multiformats' varint from `head`; undefined when it runs off the end or is malformed. */
function readHeader (head: Uint8Array): { codec: number, mhCode: number, digestLength: number, headerLength: number } | undefined {
  try {
    const [codec, a] = varint.decode(head, 1)
    const [mhCode, b] = varint.decode(head, 1 + a)
    const [digestLength, c] = varint.decode(head, 1 + a + b)
    // Codes past 2^49 - 1 would not survive a round trip through a JS number.
    if (codec > MAX_CODE || mhCode > MAX_CODE) return undefined
    return { codec, mhCode, digestLength, headerLength: 1 + a + b + c }
  } catch {
    // multiformats throws RangeError for a varint that runs off the end, is
    // longer than 9 bytes or is not minimally encoded: one refusal for all.
    return undefined
  }
}

/**
 * The single strict check behind parse, decode and rank. multiformats
 * decodes (base32, varints); on top of it MetaMesh requires CIDv1 only,
 * base32-lower only in its one canonical spelling (no CIDv0, no other
 * multibase, no upper case, no padding, zero spare bits), minimal varints,
 * codes that stay exact numbers, and a digest of at most 64 bytes whose
 * length matches its varint. The spelling is checked without decoding and
 * only the header is decoded (the digest length follows from the string's
 * length), so ranking a record's CIDs on every read stays cheap. Returns the
 * header or the reason the input is refused; never throws.
 */
export function inspectCid (s: unknown): CidHeader | string {
  if (typeof s !== 'string') return 'cid must be a string'
  if (s.length === 0) return 'empty cid'
  if (s.length > MAX_CID_STRING_LENGTH) return 'cid too long'
  if (s.charCodeAt(0) !== B) {
    if (s.startsWith('Qm')) return 'cidv0 is not accepted'
    if (s.includes(':')) return 'token form <algo>:<cid> is not accepted'
    return 'multibase must be base32-lower (prefix b)'
  }
  const bad = checkBase32Lower(s, 1)
  if (bad !== undefined) return s.includes(':') ? 'token form <algo>:<cid> is not accepted' : bad
  const total = base32ByteLength(s.length - 1)
  if (total === 0) return 'truncated or malformed cid header'
  const long = s.length - 1 > HEADER_CHARS
  let head = decodeBase32Lower(long ? s.slice(1, 1 + HEADER_CHARS) : s.slice(1))
  // Version 1 has one minimal spelling, the byte 0x01. (A CIDv0 multihash
  // wrapped in base32 starts 0x12 and is refused here too.)
  if (head[0] !== 1) return 'cid version must be 1'
  let h = readHeader(head)
  if (h === undefined && long) {
    head = decodeBase32Lower(s.slice(1))
    h = readHeader(head)
  }
  if (h === undefined) return 'truncated or malformed cid header'
  if (h.digestLength > MAX_DIGEST_BYTES) return 'digest longer than 64 bytes'
  if (total - h.headerLength !== h.digestLength) return 'digest length does not match'
  return { codec: h.codec, mhCode: h.mhCode, digestLength: h.digestLength }
}

/** Returns `s` branded, or throws InvalidCidError saying why it is not a strict CID. */
export function parseCid (s: unknown): Cid {
  const r = inspectCid(s)
  if (typeof r === 'string') throw new InvalidCidError(r)
  return s as Cid
}

export function isCid (s: unknown): s is Cid {
  return typeof inspectCid(s) !== 'string'
}

/** The parts of a strict CID, or undefined when `s` is not one (never throws). */
export function decodeCid (s: unknown): DecodedCid | undefined {
  if (typeof inspectCid(s) === 'string') return undefined
  // Checked above, so multiformats' own decode of the same bytes cannot fail.
  const cid = CID.decode(decodeBase32Lower((s as string).slice(1)))
  return { version: 1, codec: cid.code, mhCode: cid.multihash.code, digest: cid.multihash.digest.slice() }
}
