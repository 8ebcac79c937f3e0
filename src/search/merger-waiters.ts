/**
 * Those waiting on the merger: writers held at the backlog's bound (one
 * promise for them all, resolved once a batch has brought the backlog down
 * to three quarters of it), and callers of `whenIdle` and `whenReady`. The
 * merger settles them after each job and, at stop, lets the writers go
 * and fails the others.
 */
type Waiter = { resolve: () => void, reject: (e: unknown) => void }

export class MergerWaiters {
  private writable: { promise: Promise<void>, resolve: () => void } | undefined
  private idle: Waiter[] = []
  private ready: Waiter[] = []

  /** Writers or an idle caller wait: batches go without waiting to fill. */
  get hurry (): boolean {
    return this.writable !== undefined || this.idle.length > 0
  }

  /** The promise writers wait on, or undefined while they need not wait. */
  get writers (): Promise<void> | undefined {
    return this.writable?.promise
  }

  /** Writes wait from now on (the backlog reached its bound). */
  holdWriters (): Promise<void> {
    if (this.writable === undefined) {
      let resolve!: () => void
      const promise = new Promise<void>(r => { resolve = r })
      this.writable = { promise, resolve }
    }
    return this.writable.promise
  }

  async forIdle (): Promise<void> {
    await new Promise<void>((resolve, reject) => { this.idle.push({ resolve, reject }) })
  }

  async forReady (): Promise<void> {
    await new Promise<void>((resolve, reject) => { this.ready.push({ resolve, reject }) })
  }

  /**
   * After a job: lets writers go when `backlogDown`, settles the ready
   * waiters when `trusted`, then the idle ones when `idle()` (asked after
   * the others are settled: it reads `hurry`). Returns what `idle()` said.
   */
  settle (backlogDown: boolean, trusted: boolean, idle: () => boolean): boolean {
    if (this.writable !== undefined && backlogDown) {
      this.writable.resolve()
      this.writable = undefined
    }
    if (trusted) for (const w of this.ready.splice(0)) w.resolve()
    if (!idle()) return false
    for (const w of this.idle.splice(0)) w.resolve()
    return true
  }

  /** At stop: writers go on, the idle and ready waiters fail with `err`. */
  abort (err: Error): void {
    this.writable?.resolve()
    this.writable = undefined
    for (const w of this.idle.splice(0)) w.reject(err)
    for (const w of this.ready.splice(0)) w.reject(err)
  }
}
