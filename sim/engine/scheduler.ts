/**
 * The discrete-event engine: a virtual clock and a queue of timed tasks.
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
export type Task = () => unknown

/** Cancels a scheduled task; a no-op once it ran or was cancelled. */
export type Cancel = () => void

interface Entry {
  t: number
  seq: number
  fn: Task
  cancelled: boolean
}

export interface RunOptions {
  /** Stop before the first task due after this virtual time (ms); the clock is then set to it. */
  until: number
  /**
   * Called after every task; when it returns a promise the engine waits for
   * it before the next task (the run's store-quiescence wait).
   */
  settle?: () => Promise<void> | undefined
  /** Stop early when this returns true (checked between tasks). */
  stop?: () => boolean
}

export class Scheduler {
  private readonly heap: Entry[] = []
  private seq = 0
  private t = 0
  private ran = 0

  /** Virtual time in ms since the start of the run. */
  get now (): number {
    return this.t
  }

  /** Tasks run so far (a cost figure for the report's footer). */
  get tasksRun (): number {
    return this.ran
  }

  /** Tasks still queued (cancelled ones included until they surface). */
  get queued (): number {
    return this.heap.length
  }

  /** Runs `fn` at virtual time `time` (clamped to now: the past is not reachable). */
  at (time: number, fn: Task): Cancel {
    if (!Number.isFinite(time)) throw new RangeError(`task time must be finite, got ${time}`)
    const e: Entry = { t: Math.max(time, this.t), seq: this.seq++, fn, cancelled: false }
    this.push(e)
    return () => { e.cancelled = true }
  }

  /** Runs `fn` after `delayMs` of virtual time. */
  after (delayMs: number, fn: Task): Cancel {
    return this.at(this.t + Math.max(0, delayMs), fn)
  }

  /** Runs tasks in order until none is due at or before `until`; returns the number run. */
  async run (opts: RunOptions): Promise<number> {
    let n = 0
    while (this.heap.length > 0 && this.heap[0].t <= opts.until) {
      if (opts.stop?.() === true) return n
      const e = this.pop()
      if (e.cancelled) continue
      this.t = e.t
      e.fn()
      n++
      this.ran++
      const s = opts.settle?.()
      if (s !== undefined) await s
    }
    if (opts.until > this.t && opts.stop?.() !== true) this.t = opts.until
    return n
  }

  private push (e: Entry): void {
    const h = this.heap
    h.push(e)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!before(e, h[p])) break
      h[i] = h[p]
      i = p
    }
    h[i] = e
  }

  private pop (): Entry {
    const h = this.heap
    const top = h[0]
    const last = h.pop()!
    if (h.length > 0) {
      let i = 0
      const n = h.length
      for (;;) {
        const l = 2 * i + 1
        if (l >= n) break
        const r = l + 1
        const c = r < n && before(h[r], h[l]) ? r : l
        if (!before(h[c], last)) break
        h[i] = h[c]
        i = c
      }
      h[i] = last
    }
    return top
  }
}

function before (a: Entry, b: Entry): boolean {
  return a.t < b.t || (a.t === b.t && a.seq < b.seq)
}
