import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { encodeBase32Lower } from './base32.js'
import { MAX_CODE, MAX_DIGEST_BYTES } from './codes.js'
import { InvalidCidError } from './errors.js'
import type { Cid } from './parse-cid.js'

/**
 * `"b" + base32lower(uvarint(1) ‖ uvarint(codec) ‖ uvarint(mhCode) ‖ uvarint(len) ‖ digest)`,
 * built by multiformats. Refuses anything `parseCid` would refuse (codes
 * beyond what it reads back, digests over 64 bytes), so every output parses.
 */
export function encodeCidV1 (codec: number, mhCode: number, digest: Uint8Array): Cid {
  if (!isCode(codec) || !isCode(mhCode)) throw new InvalidCidError('codec and multihash code must be non-negative integers')
  if (digest.length > MAX_DIGEST_BYTES) throw new InvalidCidError('digest longer than 64 bytes')
  const cid = CID.create(1, codec, Digest.create(mhCode, digest))
  return ('b' + encodeBase32Lower(cid.bytes)) as Cid
}

function isCode (n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0 && n <= MAX_CODE
}
