/**
 * The `Clock` (src/common/clock.ts) in virtual time for tests: the engine's
 * scheduler (src/mesh/testing, the one the virtual mesh and the simulator
 * run on) behind the `Clock` shape. Its timers fire only when the test
 * moves it on, in due order, so a delay of an hour or of 30 s costs nothing
 * and "not before" is checked exactly.
 */
import type { Cancel, Clock } from '../../src/common/index.js'
import { Scheduler } from '../../src/mesh/testing/index.js'

export interface ManualClockOptions {
  /**
   * What `now` reads (default: the virtual time). A component that compares
   * it with what the real world wrote (file mtimes) is given the real wall
   * clock here, with its timers and monotonic time still virtual.
   */
  wall?: () => number
}

export interface AdvanceOptions {
  /** Stop as soon as this holds (checked before the first timer and after each). */
  until?: () => boolean
  /**
   * Awaited before the first timer and after each: the real work a timer
   * started (file I/O, a store's commit) finishes at the virtual time that
   * started it (settle-io.ts).
   */
  settle?: () => Promise<void>
}

export class ManualClock implements Clock {
  private readonly s: Scheduler
  private readonly startMs: number
  private readonly wall: (() => number) | undefined

  constructor (startMs = Date.now(), opts: ManualClockOptions = {}) {
    this.s = new Scheduler(startMs)
    this.startMs = startMs
    this.wall = opts.wall
  }

  now = (): number => this.wall?.() ?? this.s.now

  monotonic = (): number => this.s.now

  schedule = (delayMs: number, fn: () => void): Cancel => this.s.after(delayMs, fn)

  /** Virtual ms since the clock was made. */
  get elapsed (): number {
    return this.s.now - this.startMs
  }

  /** Timers waiting. */
  get pending (): number {
    return this.s.pending
  }

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

  /**
   * Moves time on by `ms`, running each timer due meanwhile at its time
   * (settling after each), and stops early once `until` holds; returns
   * whether it held. Time jumps from one timer to the next: a window of a
   * minute costs what its timers cost.
   */
  async advance (ms: number, opts: AdvanceOptions = {}): Promise<boolean> {
    const end = this.s.now + ms
    await opts.settle?.()
    for (;;) {
      if (opts.until?.() === true) return true
      if (!this.s.runNext(end)) break
      await opts.settle?.()
    }
    this.s.advanceTo(end)
    return opts.until?.() === true
  }
}
