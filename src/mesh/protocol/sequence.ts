/**
 * Frame sequences per origin. An origin numbers its push frames `(epoch,
 * seq)`: `epoch` changes at every start of the origin (its boot time, never
 * smaller than the last one it used), `seq` counts from 1 within an epoch.
 * A receiver remembers, per origin, the epoch, the highest seq and the seqs
 * seen within a window below it, and classifies each frame:
 *
 * - `next`: the next frame, or a late one filling a hole;
 * - `gap`: frames were skipped (or the origin restarted): pull now;
 * - `replay`: already seen, from an older epoch, or below the window.
 *
 * The first frame of an origin we never heard from is `next` when it is
 * the first of its epoch, else `gap`: we cannot know what we missed, so a
 * pull settles it (once per origin after our start).
 *
 * At most `maxOrigins` origins are remembered, least recently recorded
 * evicted first: a forgotten origin's next frame is a `gap` (a pull), never
 * a refusal.
 */
import { evictBeyond, touch } from './lru.js'

type SequenceVerdict = 'next' | 'gap' | 'replay'

interface OriginSequence {
  epoch: number
  high: number
  seen: Set<number>
}

export class SequenceTracker {
  private readonly origins = new Map<string, OriginSequence>()

  constructor (private readonly window: number, private readonly maxOrigins = Infinity) {}

  classify (origin: string, epoch: number, seq: number): SequenceVerdict {
    const o = this.origins.get(origin)
    if (o === undefined) return seq > 1 ? 'gap' : 'next'
    if (epoch < o.epoch) return 'replay'
    if (epoch > o.epoch) return 'gap'
    if (o.seen.has(seq) || seq <= o.high - this.window) return 'replay'
    return seq > o.high + 1 ? 'gap' : 'next'
  }

  /** Records an accepted frame. */
  record (origin: string, epoch: number, seq: number): void {
    let o = this.origins.get(origin)
    if (o === undefined || epoch > o.epoch) o = { epoch, high: seq, seen: new Set() }
    touch(this.origins, origin, o)
    if (this.origins.size > this.maxOrigins) evictBeyond(this.origins, this.maxOrigins, () => false)
    o.seen.add(seq)
    if (seq > o.high) o.high = seq
    if (o.seen.size > 2 * this.window) {
      const floor = o.high - this.window
      for (const s of o.seen) if (s <= floor) o.seen.delete(s)
    }
  }
}
