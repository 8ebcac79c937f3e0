/**
 * Counts free slots for bounded work (hashing). `tryAcquire` serves the
 * watcher's own queue, which re-checks each file just before it starts;
 * `acquire` queues callers that cannot wait in that queue (registerFile).
 */
export class Semaphore {
  private free: number
  private readonly waiters: Array<() => void> = []

  constructor (private readonly slots: number, private readonly onRelease: () => void = () => {}) {
    this.free = slots
  }

  /** A slot is taken, or a caller waits for one. */
  get inUse (): boolean {
    return this.free < this.slots || this.waiters.length > 0
  }

  tryAcquire (): boolean {
    if (this.free === 0 || this.waiters.length > 0) return false
    this.free--
    return true
  }

  async acquire (): Promise<void> {
    if (this.tryAcquire()) return
    await new Promise<void>(resolve => { this.waiters.push(resolve) })
  }

  release (): void {
    const next = this.waiters.shift()
    if (next !== undefined) { next(); return }
    this.free++
    this.onRelease()
  }
}
