/**
 * The discrete-event engine: the mesh's own `VirtualClock` (a queue of
 * timers run in (time, insertion order) order, src/mesh/testing) driven
 * with the wait that keeps store work in step with virtual time.
 *
 * Invariants:
 * - Tasks run in (time, insertion order) order: two tasks due at the same
 *   virtual millisecond run in the order they were scheduled, so a run is a
 *   pure function of the code, the seed and the options.
 * - Virtual time only moves forward, and only between tasks.
 * - A task runs synchronously. Work it starts that completes on Node's own
 *   event loop (a SQLite group commit settles on `setImmediate`) is awaited
 *   through `settle` before the next task runs, so such work happens at the
 *   virtual time that started it and in the same order every run. A task's
 *   returned promise is never awaited: it may wait on a reply that a later
 *   task delivers, and awaiting it would deadlock the clock.
 */
import { VirtualClock } from '../../src/mesh/testing/index.js'

type Task = () => unknown

/** Cancels a scheduled task; a no-op once it ran or was cancelled. */
export type Cancel = () => void

interface RunOptions {
  /** Stop before the first task due after this virtual time (ms); the clock is then set to it. */
  until: number
  /**
   * Called after every task; when it returns a promise the engine waits for
   * it before the next task (the run's store-quiescence wait).
   */
  settle?: () => Promise<void> | undefined
}

export class Scheduler {
  private readonly clock = new VirtualClock(0)
  private ran = 0

  /** Virtual time in ms since the start of the run. */
  get now (): number {
    return this.clock.now()
  }

  /** Tasks run so far (a cost figure of the run). */
  get tasksRun (): number {
    return this.ran
  }

  /** Runs `fn` at virtual time `time` (clamped to now: the past is not reachable). */
  at (time: number, fn: Task): Cancel {
    if (!Number.isFinite(time)) throw new RangeError(`task time must be finite, got ${time}`)
    return this.clock.schedule(time - this.clock.now(), () => { fn() })
  }

  /** Runs `fn` after `delayMs` of virtual time. */
  after (delayMs: number, fn: Task): Cancel {
    return this.clock.schedule(delayMs, () => { fn() })
  }

  /** Runs tasks in order until none is due at or before `until`; returns the number run. */
  async run (opts: RunOptions): Promise<number> {
    let n = 0
    while (this.clock.runNext(opts.until)) {
      n++
      this.ran++
      const s = opts.settle?.()
      if (s !== undefined) await s
    }
    if (Number.isFinite(opts.until)) this.clock.advanceTo(opts.until)
    return n
  }
}
