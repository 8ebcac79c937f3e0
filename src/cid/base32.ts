/**
 * RFC 4648 base32, lower-case alphabet, no padding — the body of a multibase
 * `b…` string. Hand-written because decoding runs on every request and the
 * strict rules (lower-case only, canonical trailing bits) are ours to enforce.
 */

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'

/** char code → 5-bit value, or -1. Only a-z and 2-7: upper-case is not base32-lower. */
const DECODE = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i

export function encodeBase32Lower (bytes: Uint8Array): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (let i = 0; i < bytes.length; i++) {
    buffer = ((buffer << 8) | bytes[i]!) & 0xfff
    bits += 8
    while (bits >= 5) {
      bits -= 5
      out += ALPHABET[(buffer >>> bits) & 31]
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31]
  return out
}

/** Why a base32 body was refused (success returns the byte count instead). */
export type Base32Failure = 'invalid base32 character' | 'uppercase base32 is not accepted' | 'invalid base32 length' | 'non-zero base32 trailing bits'

/**
 * Decodes `s[start..]` into `out` and returns the byte count, or a reason.
 * Refuses non-canonical input (a length no byte count produces, or non-zero
 * leftover bits) so that one byte string has exactly one spelling: records
 * de-duplicate CIDs by exact string.
 * `out` must hold at least floor((s.length - start) * 5 / 8) bytes.
 */
export function decodeBase32LowerInto (s: string, start: number, out: Uint8Array): number | Base32Failure {
  const n = s.length - start
  // 1, 3 and 6 leftover characters carry fewer than 8 bits: no byte count encodes to them.
  const rem = n & 7
  if (rem === 1 || rem === 3 || rem === 6) return 'invalid base32 length'
  let buffer = 0
  let bits = 0
  let o = 0
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const v = c < 128 ? DECODE[c]! : -1
    if (v < 0) return c >= 0x41 && c <= 0x5a ? 'uppercase base32 is not accepted' : 'invalid base32 character'
    buffer = ((buffer << 5) | v) & 0xfff
    bits += 5
    if (bits >= 8) {
      bits -= 8
      out[o++] = (buffer >>> bits) & 0xff
    }
  }
  if ((buffer & ((1 << bits) - 1)) !== 0) return 'non-zero base32 trailing bits'
  return o
}
