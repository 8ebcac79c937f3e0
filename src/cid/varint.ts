/**
 * Unsigned LEB128 (multiformats unsigned-varint). Values are capped at 7
 * bytes (49 bits) so they stay exact JS numbers; every real multicodec code
 * fits in 4.
 */

const MAX_VARINT_BYTES = 7

/** Appends `value` to `out` at `pos`; returns the new position. */
export function writeUvarint (value: number, out: Uint8Array, pos: number): number {
  while (value >= 0x80) {
    out[pos++] = (value % 0x80) | 0x80
    value = Math.floor(value / 0x80)
  }
  out[pos++] = value
  return pos
}

export function uvarintLength (value: number): number {
  let n = 1
  while (value >= 0x80) { value = Math.floor(value / 0x80); n++ }
  return n
}

/**
 * Reads one varint from `bytes[pos..end)`. Returns the value and the next
 * position in `into`, or false when it is truncated, too long, or not
 * minimally encoded (a trailing 0x00 continuation byte would give one value
 * two spellings, and the multiformats spec forbids it).
 */
export function readUvarint (bytes: Uint8Array, pos: number, end: number, into: { value: number, pos: number }): boolean {
  let value = 0
  let scale = 1
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    if (pos >= end) return false
    const b = bytes[pos++]!
    value += (b & 0x7f) * scale
    if ((b & 0x80) === 0) {
      if (b === 0 && i > 0) return false
      into.value = value
      into.pos = pos
      return true
    }
    scale *= 0x80
  }
  return false
}
