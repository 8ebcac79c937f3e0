/**
 * Frames a hostile member can build: a small deflated frame that inflates
 * to hundreds of thousands of valid entries, and frames of junk.
 */
import { constants, deflateRawSync } from 'node:zlib'
import { WIRE_VERSION } from '../../src/mesh/index.js'
import { formatHlc } from '../../src/records/index.js'

export const BOMB_RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'

/**
 * A push frame of `entries` entries of one record (the same field, again
 * and again: each one valid), deflated. 900,000 entries inflate to about
 * 7 MiB and deflate to about 10 KiB.
 */
export function deflateBomb (origin: string, seq: number, entries: number, nowMs = Date.now()): Uint8Array {
  return bombMaker(entries)(origin, seq, nowMs)
}

/**
 * Makes deflate bombs of `entries` entries fast, for floods: the bulk is
 * deflated once, and each frame's head (origin, sequence, clock) is deflated
 * on its own and put in front, which a raw deflate stream allows (the head
 * ends on a sync flush, the bulk's back-references stay within the bulk).
 */
export function bombMaker (entries: number): (origin: string, seq: number, nowMs?: number) => Uint8Array {
  const repeat = ',"a","x"'
  const tail = Buffer.alloc(repeat.length * entries + 6)
  tail.fill(repeat, 0, repeat.length * entries)
  tail.write(']]]]}}', repeat.length * entries)
  const zTail = deflateRawSync(tail, { level: 9 })
  return (origin, seq, nowMs = Date.now()) => {
    const hlc = formatHlc({ ms: nowMs, counter: 0 })
    const head = `{"t":"push","o":${JSON.stringify(origin)},"e":1,"s":${seq},"b":{"o":[${JSON.stringify(origin)}],"v":[["${hlc}",0]],"r":[["${BOMB_RID}",-1,[[0`
    const zHead = deflateRawSync(Buffer.from(head), { finishFlush: constants.Z_SYNC_FLUSH })
    const out = new Uint8Array(2 + zHead.length + zTail.length)
    out[0] = WIRE_VERSION
    out[1] = 1
    out.set(zHead, 2)
    out.set(zTail, 2 + zHead.length)
    return out
  }
}

/** Bytes that are no message at all. */
export function junkFrame (i: number): Uint8Array {
  return new Uint8Array([WIRE_VERSION, 0, ...Buffer.from(`{"junk":${i}}`)])
}
