import type { Brand } from '../common/index.js'
import { decodeBase32LowerInto } from './base32.js'
import { MAX_DIGEST_BYTES } from './codes.js'
import { InvalidCidError } from './errors.js'
import { readUvarint } from './varint.js'

/** A strict MetaMesh CID string: CIDv1, multibase base32-lower (`b…`), canonical spelling. */
export type Cid = Brand<string, 'Cid'>

export interface DecodedCid {
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

/** Decode buffer reused across calls: decoding is synchronous, so never shared mid-use. */
const scratch = new Uint8Array(Math.floor((MAX_CID_STRING_LENGTH - 1) * 5 / 8))
const cursor = { value: 0, pos: 0 }

/** Header of the CID most recently decoded into `scratch`. */
export interface CidHeader {
  codec: number
  mhCode: number
  digestStart: number
  digestLength: number
}

/**
 * The single strict decoder behind parse, decode and rank. Returns the header
 * (digest bytes left in `scratch`) or the reason the input is refused.
 * Never throws, so ranking arbitrary strings costs no exceptions.
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
  const n = decodeBase32LowerInto(s, 1, scratch)
  if (typeof n === 'string') return s.includes(':') ? 'token form <algo>:<cid> is not accepted' : n
  if (!readUvarint(scratch, 0, n, cursor)) return 'truncated or malformed cid header'
  if (cursor.value !== 1) return 'cid version must be 1'
  if (!readUvarint(scratch, cursor.pos, n, cursor)) return 'truncated or malformed cid header'
  const codec = cursor.value
  if (!readUvarint(scratch, cursor.pos, n, cursor)) return 'truncated or malformed cid header'
  const mhCode = cursor.value
  if (!readUvarint(scratch, cursor.pos, n, cursor)) return 'truncated or malformed cid header'
  const digestLength = cursor.value
  if (digestLength > MAX_DIGEST_BYTES) return 'digest longer than 64 bytes'
  if (n - cursor.pos !== digestLength) return 'digest length does not match'
  return { codec, mhCode, digestStart: cursor.pos, digestLength }
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
  const r = inspectCid(s)
  if (typeof r === 'string') return undefined
  return {
    version: 1,
    codec: r.codec,
    mhCode: r.mhCode,
    digest: scratch.slice(r.digestStart, r.digestStart + r.digestLength)
  }
}
