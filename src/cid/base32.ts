/**
 * RFC 4648 base32, lower-case alphabet, no padding: the body of a multibase
 * `b…` string. Bytes are encoded and decoded by multiformats' codec. That
 * codec is deliberately lenient (it decodes upper and mixed case and strips
 * `=` padding, as the multibase spec allows); records de-duplicate CIDs by
 * exact string, so one byte string must have exactly one spelling, and
 * `checkBase32Lower` enforces that spelling on top of it.
 */
import { base32 } from 'multiformats/bases/base32'

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'

/** char code → 5-bit value, or -1. Only a-z and 2-7: upper-case is not base32-lower. */
const VALUE = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i

/**
 * Unused low bits of the last character, by body length mod 8: 8 characters
 * carry 5 bytes exactly; 2, 4, 5 and 7 leftover characters end in 2, 4, 1
 * and 3 spare bits; 1, 3 and 6 carry fewer than 8 bits, which no byte count
 * encodes to (-1).
 */
const SPARE_BITS = [0, -1, 2, -1, 4, 1, -1, 3]

export function encodeBase32Lower (bytes: Uint8Array): string {
  return base32.baseEncode(bytes)
}

/** Why a base32 body was refused. */
type Base32Failure = 'invalid base32 character' | 'uppercase base32 is not accepted' | 'invalid base32 length' | 'non-zero base32 trailing bits'

/**
 * Whether `s[start..]` is the canonical base32-lower spelling of some bytes:
 * alphabet a-z2-7 only, a length some byte count encodes to, zero spare bits
 * (so flipping them cannot give a second spelling of the same bytes).
 * Checked without decoding; undefined when canonical.
 */
export function checkBase32Lower (s: string, start: number): Base32Failure | undefined {
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 128 || VALUE[c] < 0) return c >= 0x41 && c <= 0x5a ? 'uppercase base32 is not accepted' : 'invalid base32 character'
  }
  const spare = SPARE_BITS[(s.length - start) & 7]
  if (spare < 0) return 'invalid base32 length'
  if (spare > 0 && (VALUE[s.charCodeAt(s.length - 1)] & ((1 << spare) - 1)) !== 0) return 'non-zero base32 trailing bits'
  return undefined
}

/** The number of bytes a canonical body of `chars` characters decodes to. */
export function base32ByteLength (chars: number): number {
  return Math.floor(chars * 5 / 8)
}

/** Decodes a body `checkBase32Lower` accepted (multiformats' codec; it throws on anything else). */
export function decodeBase32Lower (body: string): Uint8Array {
  return base32.baseDecode(body)
}
