/**
 * A `Clock` (src/common/clock.ts) in virtual time for tests: its timers fire
 * only when the test moves it on, in due order, so a delay of an hour or of
 * 30 s costs nothing and "not before" is checked exactly.
 */
import type { Clock } from '../../src/common/index.js'

interface Timer { at: number, seq: number, fn: () => void, live: boolean }

export class ManualClock implements Clock {
  private t: number
  private seq = 0
  private timers: Timer[] = []

  constructor (startMs = Date.now()) {
    this.t = startMs
  }

  now = (): number => this.t

  schedule = (delayMs: number, fn: () => void): (() => void) => {
    const timer: Timer = { at: this.t + Math.max(0, Math.ceil(delayMs)), seq: this.seq++, fn, live: true }
    this.timers.push(timer)
    return () => { timer.live = false }
  }

  /** When the next live timer is due, or undefined. */
  nextAt (): number | undefined {
    return this.next()?.at
  }

  /** Moves to the next timer due at or before `until` and runs it; false when there is none. */
  runNext (until: number): boolean {
    const top = this.next()
    if (top === undefined || top.at > until) return false
    top.live = false
    this.t = Math.max(this.t, top.at)
    top.fn()
    return true
  }

  /** Moves time forward to `ms` without running anything (never back). */
  advanceTo (ms: number): void {
    this.t = Math.max(this.t, ms)
  }

  private next (): Timer | undefined {
    this.timers = this.timers.filter(x => x.live)
    let best: Timer | undefined
    for (const x of this.timers) if (best === undefined || x.at < best.at || (x.at === best.at && x.seq < best.seq)) best = x
    return best
  }
}
