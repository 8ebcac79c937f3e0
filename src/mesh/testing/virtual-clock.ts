/**
 * Virtual time: a queue of timers run in (time, insertion) order. Nothing
 * runs by itself; a driver pops events one at a time, so a run replays
 * exactly for a seed.
 */
interface Timer { at: number, seq: number, fn: () => void, cancelled: boolean }

export class VirtualClock {
  private t: number
  private seq = 0
  private heap: Timer[] = []

  constructor (startMs: number) {
    this.t = startMs
  }

  now (): number {
    return this.t
  }

  schedule (delayMs: number, fn: () => void): () => void {
    // Whole milliseconds, like Date.now: stores derive ids from this clock.
    const timer: Timer = { at: this.t + Math.max(0, Math.ceil(delayMs)), seq: this.seq++, fn, cancelled: false }
    this.push(timer)
    return () => { timer.cancelled = true }
  }

  /** When the next live timer is due, or undefined when none is left. */
  nextAt (): number | undefined {
    this.dropCancelled()
    return this.heap[0]?.at
  }

  /** Moves time to the next timer due at or before `until` and runs it; false when there is none. */
  runNext (until: number): boolean {
    this.dropCancelled()
    const top = this.heap[0]
    if (top === undefined || top.at > until) return false
    this.pop()
    this.t = Math.max(this.t, top.at)
    top.fn()
    return true
  }

  /** Moves time forward to `ms` (never back). */
  advanceTo (ms: number): void {
    if (ms > this.t) this.t = Math.floor(ms)
  }

  get pending (): number {
    return this.heap.filter(x => !x.cancelled).length
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
