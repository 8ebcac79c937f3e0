/**
 * Frames a hostile member can build: a small deflated frame that inflates
 * to hundreds of thousands of valid entries, and frames of junk.
 */
import { deflateRawSync } from 'node:zlib'
import { WIRE_VERSION } from '../../src/mesh/index.js'
import { formatHlc } from '../../src/records/index.js'

export const BOMB_RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'

/**
 * A push frame of `entries` entries of one record (the same field, again
 * and again: each one valid), deflated. 900,000 entries inflate to about
 * 8 MiB and deflate to about 8 KiB.
 */
export function deflateBomb (origin: string, seq: number, entries: number, nowMs = Date.now()): Uint8Array {
  const hlc = formatHlc({ ms: nowMs, counter: 0 })
  const head = `{"t":"push","o":${JSON.stringify(origin)},"e":1,"s":${seq},"b":{"o":[${JSON.stringify(origin)}],"v":[["${hlc}",0]],"r":[["${BOMB_RID}",-1,[[0`
  const repeat = ',"a","x"'
  const body = Buffer.alloc(head.length + repeat.length * entries + 6)
  body.write(head)
  body.fill(repeat, head.length, head.length + repeat.length * entries)
  body.write(']]]]}}', head.length + repeat.length * entries)
  const z = deflateRawSync(body, { level: 9 })
  const out = new Uint8Array(z.length + 2)
  out[0] = WIRE_VERSION
  out[1] = 1
  out.set(z, 2)
  return out
}

/** Bytes that are no message at all. */
export function junkFrame (i: number): Uint8Array {
  return new Uint8Array([WIRE_VERSION, 0, ...Buffer.from(`{"junk":${i}}`)])
}
