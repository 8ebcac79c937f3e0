import { encodeBase32Lower } from './base32.js'
import { MAX_DIGEST_BYTES } from './codes.js'
import { InvalidCidError } from './errors.js'
import type { Cid } from './parse-cid.js'
import { uvarintLength, writeUvarint } from './varint.js'

const MAX_CODE = 2 ** 49 - 1 // what the decoder's 7-byte varint cap can read back

/**
 * `"b" + base32lower(uvarint(1) ‖ uvarint(codec) ‖ uvarint(mhCode) ‖ uvarint(len) ‖ digest)`.
 * Refuses anything `parseCid` would refuse, so every output parses.
 */
export function encodeCidV1 (codec: number, mhCode: number, digest: Uint8Array): Cid {
  if (!isCode(codec) || !isCode(mhCode)) throw new InvalidCidError('codec and multihash code must be non-negative integers')
  if (digest.length > MAX_DIGEST_BYTES) throw new InvalidCidError('digest longer than 64 bytes')
  const bytes = new Uint8Array(1 + uvarintLength(codec) + uvarintLength(mhCode) + 1 + digest.length)
  let pos = writeUvarint(1, bytes, 0)
  pos = writeUvarint(codec, bytes, pos)
  pos = writeUvarint(mhCode, bytes, pos)
  pos = writeUvarint(digest.length, bytes, pos)
  bytes.set(digest, pos)
  return ('b' + encodeBase32Lower(bytes)) as Cid
}

function isCode (n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0 && n <= MAX_CODE
}
