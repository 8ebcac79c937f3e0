/**
 * A `Clock` (src/common/clock.ts) in virtual time for tests: the engine's
 * scheduler (src/mesh/testing) behind the `Clock` shape. Its timers fire
 * only when the test moves it on, in due order, so a delay of an hour or of
 * 30 s costs nothing and "not before" is checked exactly.
 */
import type { Clock } from '../../src/common/index.js'
import { Scheduler } from '../../src/mesh/testing/index.js'

export class ManualClock implements Clock {
  private readonly s: Scheduler

  constructor (startMs = Date.now()) {
    this.s = new Scheduler(startMs)
  }

  now = (): number => this.s.now

  schedule = (delayMs: number, fn: () => void): (() => void) => this.s.after(delayMs, fn)

  /** When the next live timer is due, or undefined. */
  nextAt (): number | undefined {
    return this.s.nextAt()
  }

  /** Moves to the next timer due at or before `until` and runs it; false when there is none. */
  runNext (until: number): boolean {
    return this.s.runNext(until)
  }

  /** Moves time forward to `ms` without running anything (never back). */
  advanceTo (ms: number): void {
    this.s.advanceTo(ms)
  }
}
