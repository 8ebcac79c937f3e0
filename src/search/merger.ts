/**
 * The merger: the scheduler that brings the index file in line with the kv
 * rows, outside the writers' commits. The work itself is done by the index
 * writer on its own thread and connection (index-writer.ts), one job at a
 * time; this side chooses the jobs and records their outcome in the store.
 *
 * Jobs, most urgent first:
 * 1. clear: a rebuild empties the structures first;
 * 2. batch: up to `batchRoots` staged roots (the longest staged first),
 *    indexed in key order in one transaction of the index file; when it
 *    has committed, one small write of the store removes the batch's
 *    staged rows (those staged again since the batch began stay) with the
 *    batch's number and the change-log mark.
 *    A second batch of other staged roots may wait at the index writer
 *    behind the one it is indexing (`batchesInFlight`), so the writer
 *    starts it as soon as the first commits instead of idling until this
 *    thread, busy with a write, has read the answer and sent the next job.
 *    Until the writer starts it, roots staged meanwhile join it (up to
 *    `batchRoots`): the writer takes those that reached it before it began,
 *    and says how many, so it indexes what is staged then in one batch, as
 *    it would have if it had waited;
 * 3. rebuild step: the next `batchRoots` live roots, while a rebuild runs;
 * 4. renumber step: the `batchRoots` oldest documents' roots, indexed again
 *    under new document ids, once the ids from the oldest live document's
 *    to the newest's are more than `renumberAt` (4) times the documents
 *    (and four buckets more). A value probe seeks every bucket in that
 *    span, and a record never written again keeps its old id while the
 *    others take new ones, so churn would otherwise make every probe
 *    slower without bound.
 *    A round ends when the span is down to twice the documents (or one
 *    bucket more than them), or when it has moved as many roots as there
 *    were documents. Churn spread evenly over the records seldom starts
 *    one: it re-indexes the old documents itself;
 * 5. sweep step: orphaned entries (re-indexed roots' old documents) are
 *    swept in key order once they pass a tenth of the documents.
 *
 * Until a batch's roots are unstaged, queries check them on their kv rows,
 * and they are unstaged only once their entries are committed, so search
 * is fresh at every moment. A crash at any point leaves them staged (the
 * next open indexes them again; a half-written batch is rolled back by
 * SQLite). The index file records the number of the last batch it
 * committed and the store the number of the last batch it unstaged: at
 * open, an index file that is neither level with the store nor at most
 * MAX_BATCHES_IN_FLIGHT batches ahead of it (a crash between a batch's two
 * commits, with the batch behind it committed too) is rebuilt. Batch
 * numbers are given out in the order the writer runs the jobs, and never
 * more than that many past the store's.
 *
 * The index writer's thread starts with the first job and ends after
 * `idleCloseMs` without one: a node at rest runs none.
 *
 * Writers wait (RecordIndexer.whenWritable) only at the bound: with
 * `backlogLimit` roots staged, writes wait until a batch has brought the
 * backlog down to three quarters of it.
 */
import { AbortedError, silentLogger, type Logger } from '../common/index.js'
import { KvClosedError, type KvStore, type SqlStatement, type Tx } from '../kv/index.js'
import { countLiveRoots, type IndexedRecords } from '../records/index.js'
import type { JobResult } from './index-writer.js'
import type { IndexJob, IndexWorker } from './index-worker-client.js'
import type { PendingBatch, PendingRoots } from './pending-roots.js'
import { STATE_GEN, STATE_LOG_MARK } from './search-schema.js'

/** Most batches at the index writer at once: the index file is at most this many batches ahead of the store. */
export const MAX_BATCHES_IN_FLIGHT = 2

export interface MergerOptions {
  /** Most roots per batch (default 1,000). */
  batchRoots?: number
  /**
   * Batches at the index writer at once, 1 or 2 (default 2): with 2, a
   * second batch (once a quarter of a batch is staged outside the first, or
   * sooner when writers or callers wait) is queued behind the one being
   * indexed. Other jobs always run alone.
   */
  batchesInFlight?: number
  /** Writers wait while this many roots are staged (default 4,000), until a batch brings it under three quarters of it. */
  backlogLimit?: number
  /**
   * A backlog smaller than a quarter of a batch waits this long for more
   * before it is merged (default 100 ms): a trickle of writes is merged in
   * a few batches, not one per write.
   */
  delayMs?: number
  /**
   * A renumbering round starts once the live document ids span more than
   * this many times the documents, and four buckets more (default 4, at
   * least 2; Infinity: never).
   */
  renumberAt?: number
  /** Orphaned documents (re-indexed roots' old ones) that start a sweep, once they are also a tenth of all (default 1,000). */
  sweepMinOrphans?: number
  /** Progress lines while a backlog, a rebuild or a renumbering round lasts, this often (default 5,000 ms). */
  progressEveryMs?: number
  /** The index writer's thread ends after this long without work (default 30,000 ms), and starts again with the next. */
  idleCloseMs?: number
}

type InFlight =
  | { kind: 'batch', gen: number, batch: PendingBatch, extra: string[][] }
  | { kind: 'clear' | 'rebuild' | 'renumber' | 'sweep' }

interface Deps {
  kv: KvStore
  records: IndexedRecords
  pending: PendingRoots
  /** The index writer's thread if start-up already runs one (a rebuild, a schema to create). */
  worker?: IndexWorker
  /** Starts an index writer's thread (when there is work and none runs). */
  startWorker: () => Promise<IndexWorker>
  /** What the index file holds now (documents, orphaned documents, the span of live document ids). */
  docs: number
  orphanDocs: number
  span: number
  /** Documents per field-index bucket. */
  bucketDocs: number
  /** The number of the last batch the store unstaged (search_state). */
  gen: number
  /** The store's id for its index file (search_state). */
  indexId: string
  logger?: Logger
}

/** After a failed job, the next try waits this long (ms). */
const RETRY_MS = 1000
/** Spare buckets a value probe may seek before a renumbering round starts, however few the documents. */
const RENUMBER_MIN_BUCKETS = 4

export class Merger {
  private readonly o: Required<MergerOptions>
  private readonly log: Logger
  private readonly st: Record<'stateGet' | 'statePut', SqlStatement>
  /** Jobs sent to the index writer and not yet answered, in the order it runs them. */
  private readonly inFlight: InFlight[] = []
  private worker: IndexWorker | undefined
  /** An index writer's thread is starting. */
  private spawning = false
  private idleTimer: ReturnType<typeof setTimeout> | undefined
  /** The number of the last batch the store unstaged. */
  private gen: number
  /** The number of the last batch sent to the index writer (back to `gen` whenever none is in flight). */
  private sentGen: number
  /** An extension of the queued batch is due at the end of the current task. */
  private extendDue = false
  private clearDue = false
  /** Set while a rebuild runs: the last live root it indexed ('' before the first). */
  private rebuildAfter: string | undefined
  private rebuildDone = 0
  private rebuildTotal = 0
  private sweeping = false
  /** Set while a renumbering round runs: the roots it has moved, and the most it moves (the documents when it began). */
  private renumbering: { moved: number, most: number } | undefined
  /** A failed job's retry is due (nothing else starts meanwhile). */
  private retrying = false
  /** Documents, and documents replaced since the last sweep (their entries are orphans), as the index writer last said. */
  private docs: number
  private orphanDocs: number
  /** Document ids from the oldest live document's to the newest's. */
  private span: number
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private writable: { promise: Promise<void>, resolve: () => void } | undefined
  private idleWaiters: Array<{ resolve: () => void, reject: (e: unknown) => void }> = []
  private readyWaiters: Array<{ resolve: () => void, reject: (e: unknown) => void }> = []
  private progress: { since: number, last: number, merged: number, what: string } | undefined
  /** Roots indexed from staged rows since start (tests and benchmarks read it). */
  merged = 0

  constructor (private readonly d: Deps, opts: MergerOptions = {}) {
    this.o = {
      batchRoots: opts.batchRoots ?? 1000,
      batchesInFlight: Math.min(MAX_BATCHES_IN_FLIGHT, Math.max(1, Math.floor(opts.batchesInFlight ?? MAX_BATCHES_IN_FLIGHT))),
      backlogLimit: opts.backlogLimit ?? 4000,
      delayMs: opts.delayMs ?? 100,
      renumberAt: Math.max(2, opts.renumberAt ?? 4),
      sweepMinOrphans: opts.sweepMinOrphans ?? 1000,
      progressEveryMs: opts.progressEveryMs ?? 5000,
      idleCloseMs: opts.idleCloseMs ?? 30_000
    }
    this.log = d.logger ?? silentLogger
    this.gen = d.gen
    this.sentGen = d.gen
    this.worker = d.worker
    this.docs = d.docs
    this.orphanDocs = d.orphanDocs
    this.span = d.span
    this.st = {
      stateGet: d.kv.prepare('SELECT v FROM main.search_state WHERE k = ?').pluck(),
      statePut: d.kv.prepare('INSERT INTO main.search_state (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v')
    }
    d.pending.onStaged = () => { this.schedule() }
    d.pending.gate = () => this.whenWritable()
  }

  /** False while a rebuild runs: the structures are incomplete and queries read every record. */
  get trusted (): boolean {
    return this.rebuildAfter === undefined
  }

  get rebuilding (): boolean {
    return this.rebuildAfter !== undefined
  }

  // ------------------------------------------------------------ control

  /** Empties the structures and indexes every live root again, in the background. */
  startRebuild (reason: string): void {
    this.clearDue = true
    this.rebuildAfter = ''
    this.rebuildDone = 0
    this.rebuildTotal = countLiveRoots(this.d.kv)
    this.sweeping = false
    this.renumbering = undefined
    this.log.info('search: rebuilding the index from the records', { reason, roots: this.rebuildTotal })
    this.schedule()
  }

  /**
   * Settles once nothing is staged, no rebuild runs, and no renumbering
   * round and no sweep of orphaned entries is due; merges without waiting
   * for a batch to fill meanwhile.
   */
  async whenIdle (): Promise<void> {
    if (!this.hasWork()) return
    if (this.stopped) throw new AbortedError('search maintenance stopped')
    const p = new Promise<void>((resolve, reject) => { this.idleWaiters.push({ resolve, reject }) })
    this.schedule()
    await p
  }

  /** Settles once no rebuild runs. */
  async whenReady (): Promise<void> {
    if (this.trusted) return
    if (this.stopped) throw new AbortedError('search maintenance stopped')
    await new Promise<void>((resolve, reject) => { this.readyWaiters.push({ resolve, reject }) })
  }

  /** A promise while writes must wait (the backlog is at its bound), else undefined. */
  whenWritable (): Promise<void> | undefined {
    if (this.stopped) return undefined
    if (this.writable !== undefined) return this.writable.promise
    if (this.d.pending.size < this.o.backlogLimit) return undefined
    this.writable = waiter()
    this.schedule()
    return this.writable.promise
  }

  /**
   * Stops scheduling and closes the index writer once the job it is running
   * has finished (the outcomes of the jobs in flight are dropped: their
   * roots stay staged, and the next open indexes them). Records the
   * change-log mark.
   */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer)
    this.timer = undefined
    this.idleTimer = undefined
    this.writable?.resolve()
    this.writable = undefined
    const err = new AbortedError('search maintenance stopped')
    for (const w of this.idleWaiters.splice(0)) w.reject(err)
    for (const w of this.readyWaiters.splice(0)) w.reject(err)
    try {
      if (!this.d.kv.isClosed) this.d.kv.writeSync(tx => { this.recordMark(tx) })
    } catch (e) {
      this.log.warn('search: could not record the change-log mark at stop; the next open replays more of the log', { err: e })
    }
    const w = this.worker
    this.worker = undefined
    await w?.close()
  }

  /** True while the index writer's thread runs (it ends when idle, and starts again with the next work). */
  get writerRunning (): boolean {
    return this.worker !== undefined
  }

  /** Every change logged up to now is indexed or staged (all of this process's writes go through the hook). */
  recordMark (_tx: Tx): void {
    const head = this.d.records.changeLogHead()
    if (head !== undefined && this.st.stateGet.get(STATE_LOG_MARK) !== head) this.st.statePut.run(STATE_LOG_MARK, head)
  }

  /**
   * Starts the next job at once when there is reason to hurry (a quarter of
   * a batch staged, waiting writers or callers), else after the delay.
   * Under a steady stream of writes the index writer then never idles: what
   * was staged while a batch ran, once a quarter of a batch, is the next one.
   * With a batch in flight, a second one is sent when due, and otherwise the
   * roots just staged join the one waiting (if any).
   */
  schedule (): void {
    if (this.stopped || this.retrying || this.spawning) return
    if (this.inFlight.length > 0) {
      if (this.secondBatchDue()) this.run()
      else this.extendSoon()
      return
    }
    if (!this.hasWork()) return
    const soon = this.clearDue || this.rebuilding || this.sweeping || this.d.pending.size * 4 >= this.o.batchRoots ||
      this.writable !== undefined || this.idleWaiters.length > 0 || this.renumberDue() || this.sweepDue()
    if (soon) {
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.timer = undefined
      this.run()
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => { this.timer = undefined; this.run() }, this.o.delayMs)
    }
  }

  // ------------------------------------------------------------ jobs

  private hasWork (): boolean {
    return this.inFlight.length > 0 || this.d.pending.size > 0 || this.clearDue || this.rebuilding || this.sweeping ||
      this.renumberDue() || this.sweepDue()
  }

  private nextJob (): IndexJob | undefined {
    if (this.clearDue) return { type: 'clear', id: this.d.indexId, gen: this.gen }
    if (this.d.pending.size > 0) return this.nextBatch()
    if (this.rebuildAfter !== undefined) return { type: 'rebuild', after: this.rebuildAfter, n: this.o.batchRoots }
    if (this.renumberDue()) return { type: 'renumber', n: this.o.batchRoots }
    if (this.sweeping || this.sweepDue()) return { type: 'sweep' }
    return undefined
  }

  /** Up to `batchRoots` staged roots in no batch in flight, the longest staged first, in key order, under the next batch number. */
  private nextBatch (): IndexJob | undefined {
    const rids = this.takeFree(this.o.batchRoots)
    return rids.length === 0 ? undefined : { type: 'batch', rids: rids.sort(), gen: this.sentGen + 1 }
  }

  /**
   * Up to `n` free staged roots, the longest staged first (the set keeps
   * staging order). Never the whole set sorted: with a large backlog that
   * would cost more than the batch, and an extension runs at every commit.
   */
  private takeFree (n: number): string[] {
    const out: string[] = []
    if (n <= 0) return out
    for (const r of this.d.pending.freeRoots) {
      out.push(r)
      if (out.length >= n) break
    }
    return out
  }

  /** Once the hooks of the commit that called have all run: one message for every root it staged (each staged root calls). */
  private extendSoon (): void {
    if (this.extendDue) return
    this.extendDue = true
    queueMicrotask(() => {
      this.extendDue = false
      if (!this.stopped) this.extendQueued()
    })
  }

  /** Free staged roots join the batch queued behind the one the index writer runs, up to `batchRoots` (the writer takes those that reach it before it starts that batch). */
  private extendQueued (): void {
    const worker = this.worker
    const job = this.inFlight.length < 2 ? undefined : this.inFlight[this.inFlight.length - 1]
    if (worker === undefined || job?.kind !== 'batch') return
    const rids = this.takeFree(this.o.batchRoots - job.batch.rids.size)
    if (rids.length === 0) return
    this.d.pending.extendBatch(job.batch, rids)
    job.extra.push(rids)
    worker.extend(job.gen, rids)
  }

  /**
   * A second batch may be queued behind the one in flight: only batches
   * pair, never past MAX_BATCHES_IN_FLIGHT numbers ahead of the store (after
   * a failed batch the next waits for the one still in flight), and only
   * when a quarter of a batch is staged outside it or someone waits.
   */
  private secondBatchDue (): boolean {
    if (this.inFlight.length >= this.o.batchesInFlight || this.clearDue || this.inFlight.some(j => j.kind !== 'batch')) return false
    if (this.sentGen - this.gen >= MAX_BATCHES_IN_FLIGHT) return false
    const free = this.d.pending.freeRoots.size
    return free > 0 && (free * 4 >= this.o.batchRoots || this.writable !== undefined || this.idleWaiters.length > 0)
  }

  private run (): void {
    if (this.stopped || this.spawning) return
    const beside = this.inFlight.length > 0
    if (beside && !this.secondBatchDue()) return
    const msg = beside ? this.nextBatch() : this.nextJob()
    if (msg === undefined) {
      if (!beside) this.settle()
      return
    }
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    const worker = this.worker
    if (worker === undefined) {
      this.spawn()
      return
    }
    let job: InFlight
    if (msg.type === 'batch') {
      job = { kind: 'batch', gen: msg.gen, batch: this.d.pending.beginBatch(msg.rids), extra: [] }
      this.sentGen = msg.gen
    } else {
      job = { kind: msg.type }
    }
    this.inFlight.push(job)
    if (job.kind === 'renumber' && this.renumbering === undefined) {
      this.renumbering = { moved: 0, most: this.docs }
      this.log.info('search: renumbering the oldest documents', { docs: this.docs, span: this.span })
    }
    if (job.kind === 'sweep' && !this.sweeping) {
      this.sweeping = true
      this.log.info('search: sweeping entries of re-indexed records', { orphanDocs: this.orphanDocs })
    }
    worker.run(msg).then(result => {
      if (this.stopped) return
      try {
        this.finish(job, result)
      } catch (err) {
        this.ended(job)
        this.failed(job, err)
        return
      }
      this.ended(job)
      this.settle()
      this.schedule()
    }, err => {
      if (this.stopped) return
      this.ended(job)
      this.failed(job, err)
    })
  }

  /** A job's answer has been taken in; with none left in flight, batch numbers go on from the store's. */
  private ended (job: InFlight): void {
    const i = this.inFlight.indexOf(job)
    if (i >= 0) this.inFlight.splice(i, 1)
    if (this.inFlight.length === 0) this.sentGen = this.gen
  }

  /** A job committed in the index file: its outcome in the store and in memory. */
  private finish (job: InFlight, r: JobResult): void {
    this.docs = r.docs
    this.orphanDocs = r.orphans
    this.span = r.span
    switch (job.kind) {
      case 'clear':
        this.clearDue = false
        break
      case 'batch': {
        // Roots that joined after the writer had started the batch were not indexed by it.
        for (const rids of job.extra.slice(r.extra ?? 0)) this.d.pending.releaseFromBatch(job.batch, rids)
        const n = job.batch.rids.size
        this.d.kv.writeSync(tx => {
          this.d.pending.finishBatch(tx, job.batch)
          this.st.statePut.run(STATE_GEN, String(job.gen))
          this.recordMark(tx)
          tx.afterCommit(() => { this.merged += n })
        })
        this.gen = job.gen
        break
      }
      case 'rebuild':
        if (r.done === true) {
          this.d.kv.writeSync(tx => { this.recordMark(tx) })
          this.rebuildAfter = undefined
          this.log.info('search: rebuild done', { roots: this.rebuildDone })
        } else {
          this.rebuildAfter = r.last
          this.rebuildDone += r.roots ?? 0
        }
        break
      case 'renumber': {
        const round = this.renumbering
        if (round === undefined) break // a rebuild began meanwhile: it numbers every document afresh
        round.moved += r.roots ?? 0
        if ((r.roots ?? 0) === 0 || round.moved >= round.most || this.span - this.docs <= Math.max(this.docs, this.d.bucketDocs)) {
          this.renumbering = undefined
          this.log.info('search: renumbering done', { moved: round.moved, docs: this.docs, span: this.span })
        }
        break
      }
      case 'sweep':
        if (r.more !== true) {
          this.sweeping = false
          this.log.info('search: sweep done')
        }
        break
    }
  }

  private failed (job: InFlight, err: unknown): void {
    if (job.kind === 'batch') this.d.pending.endBatch(job.batch)
    if (err instanceof KvClosedError) { void this.stop(); return }
    const dead = this.worker?.dead === true
    this.log.error(dead
      ? 'search: the index writer stopped; staged records stay staged and are checked on their rows until it is restarted'
      : 'search: merging failed; staged records stay staged and are checked on their rows', { err })
    if (dead) {
      // The next job starts a new thread (and a sweep starts over there).
      this.worker = undefined
      this.sweeping = false
      this.renumbering = undefined
    }
    this.retry()
  }

  private retry (): void {
    this.retrying = true
    // Both jobs in flight may fail (a dead thread): one retry.
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.retrying = false
      this.run()
    }, RETRY_MS)
  }

  /** Starts an index writer's thread, then the job that was waiting for it. */
  private spawn (): void {
    this.spawning = true
    this.d.startWorker().then(w => {
      this.spawning = false
      if (this.stopped) { void w.close(); return }
      this.worker = w
      this.docs = w.info.docs
      this.orphanDocs = w.info.orphans
      this.span = w.info.span
      this.run()
    }, err => {
      this.spawning = false
      if (this.stopped) return
      this.log.error('search: cannot start the index writer; staged records stay staged and are checked on their rows', { err })
      this.retry()
    })
  }

  /** Ends the index writer's thread once there has been no work for a while: a node at rest runs none. */
  private armIdleClose (): void {
    if (this.stopped || this.worker === undefined || this.idleTimer !== undefined) return
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined
      if (this.stopped || this.hasWork() || this.worker === undefined) return
      const w = this.worker
      this.worker = undefined
      void w.close()
    }, this.o.idleCloseMs)
    this.idleTimer.unref()
  }

  /** After a job: wakes writers and waiters, writes progress lines. */
  private settle (): void {
    if (this.writable !== undefined && this.d.pending.size < this.o.backlogLimit * 0.75) {
      this.writable.resolve()
      this.writable = undefined
    }
    if (this.trusted) for (const w of this.readyWaiters.splice(0)) w.resolve()
    if (!this.hasWork()) {
      for (const w of this.idleWaiters.splice(0)) w.resolve()
      this.armIdleClose()
    }
    this.reportProgress()
  }

  /** A renumbering round runs, or the span of live document ids has passed `renumberAt` times the documents and four spare buckets. */
  private renumberDue (): boolean {
    if (this.stopped || this.rebuilding || this.clearDue || this.d.pending.size > 0) return false
    return this.renumbering !== undefined || this.span - this.docs > Math.max((this.o.renumberAt - 1) * this.docs, RENUMBER_MIN_BUCKETS * this.d.bucketDocs)
  }

  private sweepDue (): boolean {
    if (this.stopped || this.rebuilding || this.clearDue || this.d.pending.size > 0) return false
    return this.orphanDocs >= this.o.sweepMinOrphans && this.orphanDocs * 10 >= this.docs
  }

  // ------------------------------------------------------------ progress

  private reportProgress (): void {
    const now = Date.now()
    const what = this.rebuilding ? 'rebuild' : this.d.pending.size > 0 ? 'backlog' : this.renumbering !== undefined ? 'renumbering' : undefined
    if (this.progress !== undefined && this.progress.what !== what) {
      // The end of work that lasted long enough to report progress (a renumbering round logs its own).
      if (this.progress.last > this.progress.since && this.progress.what !== 'renumbering') {
        this.log.info(`search: ${this.progress.what} merged`, { elapsedMs: now - this.progress.since })
      }
      this.progress = undefined
    }
    if (what === undefined) return
    if (this.progress === undefined) {
      this.progress = { since: now, last: now, merged: this.merged, what }
      return
    }
    if (now - this.progress.last < this.o.progressEveryMs) return
    const fields = this.rebuilding
      ? { done: this.rebuildDone, total: this.rebuildTotal, pending: this.d.pending.size }
      : what === 'renumbering'
        ? { moved: this.renumbering?.moved ?? 0, most: this.renumbering?.most ?? 0, span: this.span, docs: this.docs }
        : { pending: this.d.pending.size, mergedPerSecond: Math.round((this.merged - this.progress.merged) * 1000 / Math.max(1, now - this.progress.last)) }
    this.log.info(`search: ${what} in progress`, { ...fields, elapsedMs: now - this.progress.since })
    this.progress.last = now
    this.progress.merged = this.merged
  }
}

function waiter (): { promise: Promise<void>, resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>(r => { resolve = r })
  return { promise, resolve }
}
