/**
 * The scheduler's side of the index writer's thread: starts it, sends it
 * jobs (the thread runs them one by one, in the order sent) and roots to
 * join a batch it has not started, and settles each job's promise with its
 * answer.
 *
 * The thread runs the TypeScript sources through tsx's loader, as the node
 * itself does (bin/meta-core.js), so a clone runs with no build step.
 */
import type { Worker } from 'node:worker_threads'
import { startModuleWorker, workerModule } from '../common/index.js'
import { StorageError, WalHold } from '../kv/index.js'
import type { JobResult } from './index-writer.js'
import type { IndexInfo } from './search-schema.js'

export type IndexJob =
  | { type: 'batch', rids: string[], gen: number }
  | { type: 'clear', id: string, gen: number }
  | { type: 'rebuild', after: string, n: number, upTo?: string }
  | { type: 'sweep' }
  | { type: 'renumber', n: number }

export interface WorkerInit {
  indexPath: string
  storePath: string
  excludePrefixes: readonly string[]
  marker: string
  /** Documents per field-index bucket, as a power of two (search-schema.ts). */
  bucketShift: number
  cacheKiB: number
  /** The index file's WAL is checkpointed by the writer's commits once past this many pages. */
  autocheckpointPages: number
  /**
   * The store's start-over flags (kv's wal-hold.ts): the writer's
   * transactions mark themselves in, and wait while a start-over holds
   * readers off (SideFileOptions.storeReader). `start` takes a reader slot
   * there for the thread, and gives it back when the thread ends, however
   * it ends.
   */
  storeHold?: SharedArrayBuffer
  /** The reader slot `start` took for the thread (set by `start`, not by its caller). */
  storeReaderSlot?: number
}

/** What the scheduler sends the thread: a job, roots to join a batch not yet started, or close. */
export type WorkerMessage =
  | { seq: number, job: IndexJob }
  | { type: 'extend', gen: number, rids: readonly string[] }
  | { type: 'close' }

export type WorkerReply =
  | { type: 'ready', info: IndexInfo }
  | { type: 'done', seq: number, result: JobResult }
  | { type: 'failed', seq: number, message: string }

/** A job the index writer refused or could not finish; nothing of it was committed. */
class IndexJobError extends StorageError {}

const ENTRY = workerModule('index-worker', import.meta.url)

export class IndexWorker {
  private seq = 0
  private readonly waiting = new Map<number, { resolve: (r: JobResult) => void, reject: (e: unknown) => void }>()
  private exited: Error | undefined
  private readonly exit: Promise<void>

  private constructor (private readonly worker: Worker, readonly info: IndexInfo) {
    this.exit = new Promise(resolve => { worker.once('exit', () => { resolve() }) })
    worker.on('message', (m: WorkerReply) => {
      if (m.type === 'ready') return
      const w = this.waiting.get(m.seq)
      if (w === undefined) return
      this.waiting.delete(m.seq)
      if (this.waiting.size === 0) worker.unref()
      if (m.type === 'done') w.resolve(m.result)
      else w.reject(new IndexJobError(`search index writer: ${m.message}`))
    })
    const fail = (err: Error): void => {
      this.exited ??= err
      for (const w of this.waiting.values()) w.reject(err)
      this.waiting.clear()
    }
    worker.on('error', err => { fail(new IndexJobError(`search index writer failed: ${err.message}`, { cause: err })) })
    worker.on('exit', () => { fail(new IndexJobError('search index writer stopped')) })
  }

  /** Starts the thread; settles once it has opened the index file (with what it holds), or rejects with why it could not. */
  static async start (init: WorkerInit): Promise<IndexWorker> {
    // Like the checkpointer's thread, it does not keep the process alive on its own, except while a caller awaits it
    // (starting, or a job in flight): a process whose only work left is a job must not exit before its answer.
    // A reader slot in the store's start-over flags, given back once the thread has ended, however it ended: a
    // thread terminated inside a transaction never marks itself out, and a slot left marked in would make every
    // later start-over wait for it and give up. (With no slot free, the thread reads outside the protocol: a
    // start-over that meets its transaction gives up and tries again later.)
    const hold = init.storeHold === undefined ? undefined : WalHold.of(init.storeHold)
    const slot = hold?.acquireReaderSlot()
    const reader = slot === undefined ? { storeHold: undefined, storeReaderSlot: undefined } : { storeHold: init.storeHold, storeReaderSlot: slot }
    let worker: Worker
    try {
      worker = startModuleWorker(ENTRY, { ...init, ...reader })
    } catch (err) {
      if (slot !== undefined) hold!.releaseReaderSlot(slot)
      throw err
    }
    if (slot !== undefined) worker.once('exit', () => { hold!.releaseReaderSlot(slot) })
    return await new Promise<IndexWorker>((resolve, reject) => {
      const onError = (err: Error): void => { reject(new IndexJobError(`cannot start the search index writer: ${err.message}`, { cause: err })) }
      const onExit = (): void => { worker.unref(); reject(new IndexJobError('the search index writer stopped while starting')) }
      worker.once('error', onError)
      worker.once('exit', onExit)
      worker.once('message', (m: WorkerReply) => {
        worker.off('error', onError)
        worker.off('exit', onExit)
        worker.unref()
        if (m.type === 'ready') resolve(new IndexWorker(worker, m.info))
        else reject(new IndexJobError('the search index writer answered before it was ready'))
      })
    })
  }

  /** True once the thread has died or been closed: jobs fail. */
  get dead (): boolean {
    return this.exited !== undefined
  }

  /**
   * Roots to join batch `gen` if the thread has not started it yet; the
   * batch's answer says how many such messages it took.
   */
  extend (gen: number, rids: readonly string[]): void {
    if (this.exited === undefined) this.worker.postMessage({ type: 'extend', gen, rids } satisfies WorkerMessage)
  }

  async run (job: IndexJob): Promise<JobResult> {
    if (this.exited !== undefined) throw this.exited
    const seq = ++this.seq
    return await new Promise<JobResult>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject })
      this.worker.ref()
      this.worker.postMessage({ seq, job } satisfies WorkerMessage)
    })
  }

  /**
   * Closes the connection once the job running (if any) has finished (its
   * transaction commits); jobs sent and not started are dropped, and their
   * promises reject when the thread ends. After `deadlineMs`
   * the thread is terminated: an unfinished transaction is rolled back
   * when the index file is next opened.
   */
  async close (deadlineMs = 10_000): Promise<void> {
    if (this.exited === undefined) {
      this.worker.ref()
      this.worker.postMessage({ type: 'close' } satisfies WorkerMessage)
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<'late'>(resolve => { timer = setTimeout(() => { resolve('late') }, deadlineMs) })
    const r = await Promise.race([this.exit, late])
    clearTimeout(timer)
    if (r === 'late') await this.worker.terminate()
  }
}
