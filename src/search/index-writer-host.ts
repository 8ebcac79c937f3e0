/**
 * The merger's hold on the index writer's thread (index-worker-client.ts):
 * at most one thread, started when there is work and none runs, ended
 * after `idleCloseMs` without work, so a node at rest runs none; forgotten
 * when it died, so the next job starts a new one. Timers go through the
 * injected clock.
 */
import type { Clock } from '../common/index.js'
import type { IndexWorker } from './index-worker-client.js'

export class IndexWriterHost {
  private worker: IndexWorker | undefined
  private spawning = false
  private closed = false
  private cancelIdle: (() => void) | undefined

  constructor (
    private readonly startWorker: () => Promise<IndexWorker>,
    private readonly clock: Clock,
    private readonly idleCloseMs: number,
    /** A thread start-up already runs (a rebuild, a schema to create). */
    worker?: IndexWorker
  ) {
    this.worker = worker
  }

  /** The running thread, if any. */
  get current (): IndexWorker | undefined {
    return this.worker
  }

  /** A thread is starting: no job can be sent until it has. */
  get starting (): boolean {
    return this.spawning
  }

  /** The running thread has ended under the merger (crashed or terminated). */
  get dead (): boolean {
    return this.worker?.dead === true
  }

  /** Starts a thread; `started` runs once it is up (not if the host closed meanwhile: the thread is closed then), `failed` if it could not start. */
  start (started: (w: IndexWorker) => void, failed: (err: unknown) => void): void {
    this.spawning = true
    this.startWorker().then(w => {
      this.spawning = false
      if (this.closed) { void w.close(); return }
      this.worker = w
      started(w)
    }, err => {
      this.spawning = false
      if (!this.closed) failed(err)
    })
  }

  /** There is work: no idle close. */
  busy (): void {
    this.cancelIdle?.()
    this.cancelIdle = undefined
  }

  /** No work now: the thread ends after `idleCloseMs` unless `stillIdle()` says otherwise by then. */
  idle (stillIdle: () => boolean): void {
    if (this.closed || this.worker === undefined || this.cancelIdle !== undefined) return
    this.cancelIdle = this.clock.schedule(this.idleCloseMs, () => {
      this.cancelIdle = undefined
      if (this.closed || !stillIdle() || this.worker === undefined) return
      const w = this.worker
      this.worker = undefined
      void w.close()
    })
  }

  /** The thread died: the next job starts a new one. */
  forget (): void {
    this.worker = undefined
  }

  /** Closes the thread once the job it runs has finished; no thread starts after this. */
  async close (): Promise<void> {
    this.closed = true
    this.busy()
    const w = this.worker
    this.worker = undefined
    await w?.close()
  }
}
