import { Semaphore } from './semaphore.js'

/** What the queue needs to know of a queued item. */
export interface Queueable {
  /** Still waiting for its turn (a file that changed again went back to settling and is skipped here). */
  readonly ready: boolean
}

/**
 * Files that settled, in the order they did, hashed on `concurrency` slots.
 * An item is checked again when its turn comes (`ready`), not when it is
 * queued: a file that changed or vanished meanwhile is dropped from the
 * queue without a read. `hashNow` (registerFile) shares the slots but not
 * the queue: it waits for a free slot ahead of the queued files.
 */
export class HashQueue<T extends Queueable> {
  private readonly sem: Semaphore
  private queue: T[] = []
  private head = 0
  private stopped = false

  /** `run` hashes one item; it must call `release()` once its read is over (before writing what it found). */
  constructor (concurrency: number, private readonly run: (item: T) => void) {
    this.sem = new Semaphore(concurrency, () => { this.pump() })
  }

  /** Files wait for their turn or are being hashed (registerFile's included). */
  get busy (): boolean {
    return this.head < this.queue.length || this.sem.inUse
  }

  push (item: T): void {
    this.queue.push(item)
    this.pump()
  }

  release (): void {
    this.sem.release()
  }

  /** Waits for a slot outside the queue; the caller releases it. */
  async acquire (): Promise<void> {
    await this.sem.acquire()
  }

  stop (): void {
    this.stopped = true
  }

  /** Forgets every queued item, and runs again. */
  reset (): void {
    this.stopped = false
    this.queue = []
    this.head = 0
  }

  private pump (): void {
    while (this.head < this.queue.length && !this.stopped) {
      const item = this.queue[this.head]
      if (!item.ready) { this.head++; continue }
      if (!this.sem.tryAcquire()) break
      this.head++
      this.run(item)
    }
    // Drop the consumed head now and then, so the queue array does not grow for ever.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
  }
}
