/**
 * Virtual time: a queue of tasks run in (time, insertion) order. Nothing
 * runs by itself; a driver runs tasks one at a time (`runNext`, or `run`
 * with the wait that keeps real store work in step), so a run replays
 * exactly. The one clock of the virtual mesh (virtual-mesh.ts), the
 * simulator (`sim/`) and the tests' manual clock.
 *
 * Invariants:
 * - Tasks run in (time, insertion order) order: two tasks due at the same
 *   virtual millisecond run in the order they were scheduled.
 * - Task times are whole milliseconds (delays are rounded up), like
 *   `Date.now`: stores derive ids and HLC values from this clock.
 * - Virtual time only moves forward, and only between tasks.
 * - A task runs synchronously. Work it starts that completes on Node's own
 *   event loop (a SQLite group commit settles on `setImmediate`) is awaited
 *   through `settle` before the next task runs, so such work happens at the
 *   virtual time that started it and in the same order every run. A task's
 *   returned promise is never awaited: it may wait on a reply that a later
 *   task delivers, and awaiting it would deadlock the clock.
 */
type Task = () => unknown

/** Cancels a scheduled task; a no-op once it ran or was cancelled. */
export type Cancel = () => void

interface Timer { at: number, seq: number, fn: Task, cancelled: boolean }

interface RunOptions {
  /** Stop before the first task due after this virtual time (ms); the clock is then set to it. */
  until: number
  /**
   * Called after every task; when it returns a promise the scheduler waits
   * for it before the next task (the run's store-quiescence wait).
   */
  settle?: () => Promise<void> | undefined
}

export class Scheduler {
  private t: number
  private seq = 0
  private ran = 0
  private heap: Timer[] = []

  /** `startMs`: virtual time at the start (0 in the simulator; a wall-clock value for a mesh whose stores read it). */
  constructor (startMs = 0) {
    this.t = startMs
  }

  /** Virtual time in ms. */
  get now (): number {
    return this.t
  }

  /** Tasks run so far (a cost figure of a run). */
  get tasksRun (): number {
    return this.ran
  }

  /** Runs `fn` at virtual time `time` (clamped to now: the past is not reachable). */
  at (time: number, fn: Task): Cancel {
    if (!Number.isFinite(time)) throw new RangeError(`task time must be finite, got ${time}`)
    return this.after(time - this.t, fn)
  }

  /** Runs `fn` after `delayMs` of virtual time (rounded up to a whole millisecond; never within this call). */
  after (delayMs: number, fn: Task): Cancel {
    const timer: Timer = { at: this.t + Math.max(0, Math.ceil(delayMs)), seq: this.seq++, fn, cancelled: false }
    this.push(timer)
    return () => { timer.cancelled = true }
  }

  /** When the next live task is due, or undefined when none is left. */
  nextAt (): number | undefined {
    this.dropCancelled()
    return this.heap[0]?.at
  }

  /** Moves time to the next task due at or before `until` and runs it; false when there is none. */
  runNext (until: number): boolean {
    this.dropCancelled()
    const top = this.heap[0]
    if (top === undefined || top.at > until) return false
    this.pop()
    this.t = Math.max(this.t, top.at)
    this.ran++
    top.fn()
    return true
  }

  /** Moves time forward to `ms` (never back) without running anything. */
  advanceTo (ms: number): void {
    if (ms > this.t) this.t = Math.floor(ms)
  }

  /** Live tasks waiting. */
  get pending (): number {
    return this.heap.filter(x => !x.cancelled).length
  }

  /** Runs tasks in order until none is due at or before `until`, settling after each; returns the number run. */
  async run (opts: RunOptions): Promise<number> {
    let n = 0
    while (this.runNext(opts.until)) {
      n++
      const s = opts.settle?.()
      if (s !== undefined) await s
    }
    if (Number.isFinite(opts.until)) this.advanceTo(opts.until)
    return n
  }

  private dropCancelled (): void {
    while (this.heap.length > 0 && this.heap[0].cancelled) this.pop()
  }

  private less (a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq)
  }

  private push (x: Timer): void {
    const h = this.heap
    h.push(x)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!this.less(h[i], h[p])) break
      ;[h[i], h[p]] = [h[p], h[i]]
      i = p
    }
  }

  private pop (): Timer | undefined {
    const h = this.heap
    const top = h[0]
    const last = h.pop()
    if (h.length > 0 && last !== undefined) {
      h[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < h.length && this.less(h[l], h[m])) m = l
        if (r < h.length && this.less(h[r], h[m])) m = r
        if (m === i) break
        ;[h[i], h[m]] = [h[m], h[i]]
        i = m
      }
    }
    return top
  }
}
