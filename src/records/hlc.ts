/**
 * Hybrid logical clock (Kulkarni et al. 2014): 48-bit wall milliseconds and a
 * 16-bit counter, written as 16 lower-case hex digits so that string order is
 * clock order. Local events take max(wall, last) and bump the counter on a
 * tie; receiving takes max(wall, last, remote). The caller persists `last`
 * so a restart never issues a smaller value.
 */
export type HlcString = string

const MAX_COUNTER = 0xffff

interface HlcParts { ms: number, counter: number }

export function formatHlc (p: HlcParts): HlcString {
  return p.ms.toString(16).padStart(12, '0') + p.counter.toString(16).padStart(4, '0')
}

export function parseHlc (s: string): HlcParts | undefined {
  if (!/^[0-9a-f]{16}$/.test(s)) return undefined
  return { ms: parseInt(s.slice(0, 12), 16), counter: parseInt(s.slice(12), 16) }
}

export class Hlc {
  private ms: number
  private counter: number
  private readonly wall: () => number

  constructor (wall: () => number = Date.now, last?: HlcString) {
    this.wall = wall
    const p = last === undefined ? undefined : parseHlc(last)
    this.ms = p?.ms ?? 0
    this.counter = p?.counter ?? 0
  }

  /** A timestamp for a local event, greater than every one issued or observed before. */
  now (): HlcString {
    const w = this.wall()
    if (w > this.ms) {
      this.ms = w
      this.counter = 0
    } else if (this.counter < MAX_COUNTER) {
      this.counter++
    } else {
      this.ms++
      this.counter = 0
    }
    return formatHlc({ ms: this.ms, counter: this.counter })
  }

  /**
   * Merges a remote timestamp (already checked for drift by the caller).
   * `trustWall: false` leaves the wall clock out: a node that knows its
   * clock is off (clock-gate.ts) must not persist that clock through a
   * remote entry, or its versions would carry the error after the clock is
   * corrected.
   */
  observe (remote: HlcString, trustWall = true): void {
    const r = parseHlc(remote)
    if (r === undefined) return
    const w = trustWall ? this.wall() : 0
    const ms = Math.max(w, this.ms, r.ms)
    let c: number
    if (ms === this.ms && ms === r.ms) c = Math.max(this.counter, r.counter) + 1
    else if (ms === this.ms) c = this.counter + 1
    else if (ms === r.ms) c = r.counter + 1
    else c = 0
    if (c > MAX_COUNTER) {
      this.ms = ms + 1
      this.counter = 0
    } else {
      this.ms = ms
      this.counter = c
    }
  }

  /** The last value issued or observed. */
  last (): HlcString {
    return formatHlc({ ms: this.ms, counter: this.counter })
  }

  /** Wall-clock ms a remote timestamp is ahead of this node's wall clock (negative when behind). */
  aheadOfWall (remote: HlcString): number {
    const r = parseHlc(remote)
    return r === undefined ? Infinity : r.ms - this.wall()
  }
}
