/**
 * The merger: the scheduler that brings the index file in line with the kv
 * rows, outside the writers' commits. The work itself is done by the index
 * writer on its own thread and connection (index-writer.ts), one job at a
 * time; this side chooses the jobs (pure functions of its state:
 * merge-plan.ts), holds the thread (index-writer-host.ts) and records each
 * job's outcome in the store (merge-record.ts). Its timers and progress lines run on an
 * injected clock, so tests run them in virtual time.
 *
 * The jobs, and when each is due: merge-plan.ts. Records arriving in bulk
 * and the rebuild that follows them: bulk-follow.ts. Those waiting on the
 * merger (writers at the backlog's bound, `whenIdle`, `whenReady`):
 * merger-waiters.ts.
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
 * `idleCloseMs` without one: a node at rest runs none (index-writer-host.ts).
 *
 * Writers wait (RecordIndexer.whenWritable) only at the bound: with
 * `backlogLimit` roots staged, writes wait until a batch has brought the
 * backlog down to three quarters of it.
 */
import { AbortedError, silentLogger, systemClock, type Clock, type Logger } from '../common/index.js'
import { KvClosedError, type Tx } from '../kv/index.js'
import { countLiveRoots } from '../records/index.js'
import { BulkFollow } from './bulk-follow.js'
import type { JobResult } from './index-writer.js'
import type { IndexJob } from './index-worker-client.js'
import { IndexWriterHost } from './index-writer-host.js'
import { MergeRecord } from './merge-record.js'
import { hasWork, nextJob, nextStep, phaseAfter, phaseAfterDeath, phaseAtStart, type JobKind, type Maintenance, type PlanLimits,
  type PlanState } from './merge-plan.js'
import { resolveMergerOptions, type MergerDeps, type MergerOptions, type ResolvedMergerOptions } from './merger-options.js'
import { MergerWaiters } from './merger-waiters.js'
import type { PendingBatch } from './pending-roots.js'
import { ProgressLines } from './progress-lines.js'

export { MAX_BATCHES_IN_FLIGHT } from './merge-plan.js'
export type { MergerOptions } from './merger-options.js'

/** A job sent to the index writer and not yet answered; a batch with the roots it holds and those that joined it since. */
type InFlight =
  | { kind: 'batch', gen: number, batch: PendingBatch, extra: string[][] }
  | { kind: Exclude<JobKind, 'batch'> }

/** After a failed job, the next try waits this long (ms). */
const RETRY_MS = 1000

export class Merger {
  private readonly o: ResolvedMergerOptions
  private readonly limits: PlanLimits
  private readonly clock: Clock
  private readonly log: Logger
  private readonly record: MergeRecord
  private readonly host: IndexWriterHost
  /** Jobs sent to the index writer and not yet answered, in the order it runs them. */
  private readonly inFlight: InFlight[] = []
  /** The long job under way beside the batches (merge-plan.ts). */
  private maintenance: Maintenance = { phase: 'none' }
  /** The number of the last batch the store unstaged. */
  private gen: number
  /** The number of the last batch sent to the index writer (back to `gen` whenever none is in flight). */
  private sentGen: number
  /** An extension of the queued batch is due at the end of the current task. */
  private extendDue = false
  /** The delay's timer, or a failed job's retry (nothing else starts meanwhile). */
  private timer: { cancel: () => void, retry: boolean } | undefined
  /** Documents, and documents replaced since the last sweep (their entries are orphans), as the index writer last said. */
  private docs: number
  private orphanDocs: number
  /** Document ids from the oldest live document's to the newest's. */
  private span: number
  private stopped = false
  /** Records arriving in bulk (a join), and the rebuild following them (bulk-follow.ts). */
  private readonly bulk: BulkFollow
  private readonly waiters = new MergerWaiters()
  private readonly progress: ProgressLines
  /** Roots indexed from staged rows since start (tests and benchmarks read it). */
  merged = 0

  constructor (private readonly d: MergerDeps, opts: MergerOptions = {}) {
    this.o = resolveMergerOptions(opts)
    this.limits = { ...this.o, bucketDocs: d.bucketDocs }
    this.clock = opts.clock ?? systemClock
    this.log = d.logger ?? silentLogger
    this.progress = new ProgressLines(this.log, this.o.progressEveryMs)
    this.host = new IndexWriterHost(d.startWorker, this.clock, this.o.idleCloseMs, d.worker)
    this.gen = d.gen
    this.sentGen = d.gen
    this.docs = d.docs
    this.orphanDocs = d.orphanDocs
    this.span = d.span
    this.record = new MergeRecord(d.kv, d.records, d.pending)
    d.pending.onStaged = () => { this.schedule() }
    d.pending.gate = () => this.whenWritable()
    this.bulk = new BulkFollow({
      clock: this.clock,
      log: this.log,
      maintenance: () => this.maintenance,
      setMaintenance: (m) => { this.maintenance = m },
      startRebuild: (reason, follow) => { this.startRebuild(reason, follow) },
      rebuildInFlight: () => this.inFlight.some(j => j.kind === 'rebuild'),
      schedule: () => { this.schedule() },
      stopped: () => this.stopped
    })
    d.pending.onBulk = (first, last) => { this.bulk.arrived(first, last) }
    d.pending.onBulkEnded = (ordered) => { this.bulk.ended(ordered) }
  }

  /** False while a rebuild runs or records arrive in bulk: the structures are incomplete and queries read every record. */
  get trusted (): boolean {
    return this.maintenance.phase !== 'rebuild' && !this.bulk.active
  }

  /** The index is being built (a rebuild, or records arriving in bulk before one): how far the rebuild is. */
  get building (): { done: number, total: number } | undefined {
    const m = this.maintenance
    if (m.phase === 'rebuild') return { done: m.done, total: Math.max(m.total, m.done) }
    return this.bulk.active ? { done: 0, total: 0 } : undefined
  }

  /** The state merge-plan.ts decides on. */
  private get plan (): PlanState {
    return {
      maintenance: this.maintenance,
      staged: this.d.pending.size,
      free: this.d.pending.freeRoots.size,
      inFlight: this.inFlight.map(j => j.kind),
      gen: this.gen,
      sentGen: this.sentGen,
      docs: this.docs,
      orphanDocs: this.orphanDocs,
      span: this.span,
      hurry: this.waiters.hurry,
      stopped: this.stopped
    }
  }

  private hasWork (): boolean {
    return hasWork(this.plan, this.limits)
  }

  // ------------------------------------------------------------ control

  /** Empties the structures and indexes every live root again, in the background (following records arriving in bulk, if they are). */
  startRebuild (reason: string, follow = false): void {
    const total = countLiveRoots(this.d.kv)
    this.maintenance = { phase: 'rebuild', cleared: false, after: '', done: 0, total, ...(follow || this.bulk.active ? { follow: true } : {}) }
    this.bulk.rebuildStarted()
    this.log.info('search: rebuilding the index from the records', { reason, roots: total })
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
    const p = this.waiters.forIdle()
    this.schedule()
    await p
  }

  /** Settles once no rebuild runs. */
  async whenReady (): Promise<void> {
    if (this.trusted) return
    if (this.stopped) throw new AbortedError('search maintenance stopped')
    await this.waiters.forReady()
  }

  /** A promise while writes must wait (the backlog is at its bound), else undefined. */
  whenWritable (): Promise<void> | undefined {
    if (this.stopped) return undefined
    const held = this.waiters.writers
    if (held !== undefined) return held
    if (this.d.pending.size < this.o.backlogLimit) return undefined
    const p = this.waiters.holdWriters()
    this.schedule()
    return p
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
    this.timer?.cancel()
    this.timer = undefined
    this.bulk.stop()
    this.waiters.abort(new AbortedError('search maintenance stopped'))
    try {
      if (!this.d.kv.isClosed) this.d.kv.writeSync(tx => { this.recordMark(tx) })
    } catch (e) {
      this.log.warn('search: could not record the change-log mark at stop; the next open replays more of the log', { err: e })
    }
    await this.host.close()
  }

  /** True while the index writer's thread runs (it ends when idle, and starts again with the next work). */
  get writerRunning (): boolean {
    return this.host.current !== undefined
  }

  /** Every change logged up to now is indexed or staged (all of this process's writes go through the hook). */
  recordMark (tx: Tx): void {
    this.record.mark(tx)
  }

  /**
   * Runs the next job now, after the delay, or not at all (merge-plan.ts
   * nextStep). With a batch in flight, a second one is sent when due, and
   * otherwise the roots just staged join the one waiting (if any).
   */
  schedule (): void {
    if (this.stopped || this.timer?.retry === true || this.host.starting) return
    switch (nextStep(this.plan, this.limits)) {
      case 'idle':
        return
      case 'extend':
        this.extendSoon()
        return
      case 'now':
        this.timer?.cancel()
        this.timer = undefined
        this.run()
        return
      case 'later':
        // Writes on their way to the index: the timers of a merge keep the process alive (its retry's too).
        this.timer ??= { retry: false, cancel: this.clock.schedule(this.o.delayMs, () => { this.timer = undefined; this.run() }, { keepAlive: true }) }
    }
  }

  // ------------------------------------------------------------ jobs

  /** The job merge-plan.ts chose, with what it carries. */
  private jobOf (kind: JobKind): IndexJob | undefined {
    switch (kind) {
      case 'clear': return { type: 'clear', id: this.d.indexId, gen: this.gen }
      case 'batch': {
        const rids = this.d.pending.oldestFree(this.o.batchRoots)
        return rids.length === 0 ? undefined : { type: 'batch', rids: rids.sort(), gen: this.sentGen + 1 }
      }
      case 'rebuild': {
        if (this.maintenance.phase !== 'rebuild') return undefined
        const upTo = this.bulk.upTo
        return { type: 'rebuild', after: this.maintenance.after, n: this.o.batchRoots, ...(upTo === undefined ? {} : { upTo }) }
      }
      case 'renumber': return { type: 'renumber', n: this.o.batchRoots }
      case 'sweep': return { type: 'sweep' }
    }
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

  /**
   * Free staged roots join the batch queued behind the one the index writer runs, up to `batchRoots` (the writer takes those that reach
   * it before it starts that batch).
   */
  private extendQueued (): void {
    const worker = this.host.current
    const job = this.inFlight.length < 2 ? undefined : this.inFlight[this.inFlight.length - 1]
    if (worker === undefined || job?.kind !== 'batch') return
    const rids = this.d.pending.oldestFree(this.o.batchRoots - job.batch.rids.size)
    if (rids.length === 0) return
    this.d.pending.extendBatch(job.batch, rids)
    job.extra.push(rids)
    worker.extend(job.gen, rids)
  }

  private run (): void {
    if (this.stopped || this.host.starting) return
    const beside = this.inFlight.length > 0
    const kind = nextJob(this.plan, this.limits)
    const msg = kind === undefined ? undefined : this.jobOf(kind)
    if (msg === undefined) {
      if (!beside) this.settle()
      return
    }
    this.host.busy()
    const worker = this.host.current
    if (worker === undefined) {
      this.host.start(w => {
        this.docs = w.info.docs
        this.orphanDocs = w.info.orphans
        this.span = w.info.span
        this.run()
      }, err => {
        this.log.error('search: cannot start the index writer; staged records stay staged and are checked on their rows', { err })
        this.retry()
      })
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
    this.began(job)
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

  /** A long job's first step: its phase begins. */
  private began (job: InFlight): void {
    const before = this.maintenance
    this.maintenance = phaseAtStart(before, job.kind, this.docs)
    if (this.maintenance.phase === before.phase) return
    if (this.maintenance.phase === 'renumber') this.log.info('search: renumbering the oldest documents', { docs: this.docs, span: this.span })
    if (this.maintenance.phase === 'sweep') this.log.info('search: sweeping entries of re-indexed records', { orphanDocs: this.orphanDocs })
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
    if (job.kind === 'batch') {
      // Roots that joined after the writer had started the batch were not indexed by it.
      for (const rids of job.extra.slice(r.extra ?? 0)) this.d.pending.releaseFromBatch(job.batch, rids)
      const n = job.batch.rids.size
      this.record.batchCommitted(job.batch, job.gen, () => { this.merged += n })
      this.gen = job.gen
      return
    }
    const before = this.maintenance
    let after = phaseAfter(before, job.kind, r, this.d.bucketDocs)
    if (job.kind === 'rebuild') after = this.bulk.afterRebuildStep(after)
    if (before.phase === 'rebuild' && after.phase !== 'rebuild') this.record.rebuildDone(this.bulk.active)
    this.maintenance = after
    if (before.phase === after.phase) return
    if (before.phase === 'rebuild') this.log.info('search: rebuild done', { roots: before.done })
    if (before.phase === 'renumber') this.log.info('search: renumbering done', { moved: before.moved + (r.roots ?? 0), docs: this.docs, span: this.span })
    if (before.phase === 'sweep') this.log.info('search: sweep done')
  }

  private failed (job: InFlight, err: unknown): void {
    if (job.kind === 'batch') this.d.pending.endBatch(job.batch)
    if (err instanceof KvClosedError) { void this.stop(); return }
    const dead = this.host.dead
    this.log.error(dead
      ? 'search: the index writer stopped; staged records stay staged and are checked on their rows until it is restarted'
      : 'search: merging failed; staged records stay staged and are checked on their rows', { err })
    if (dead) {
      // The next job starts a new thread (and a sweep or a renumbering round starts over there; a rebuild goes on).
      this.host.forget()
      this.maintenance = phaseAfterDeath(this.maintenance)
    }
    this.retry()
  }

  private retry (): void {
    // Both jobs in flight may fail (a dead thread): one retry.
    this.timer?.cancel()
    this.timer = {
      retry: true,
      cancel: this.clock.schedule(RETRY_MS, () => {
        this.timer = undefined
        this.run()
      }, { keepAlive: true })
    }
  }

  /** After a job: wakes writers and waiters, writes progress lines. */
  private settle (): void {
    const idle = this.waiters.settle(this.d.pending.size < this.o.backlogLimit * 0.75, this.trusted, () => !this.hasWork())
    if (idle && !this.stopped) this.host.idle(() => !this.stopped && !this.hasWork())
    this.reportProgress()
  }

  // ------------------------------------------------------------ progress

  private reportProgress (): void {
    const m = this.maintenance
    const staged = this.d.pending.size
    this.progress.report(this.clock.now(), this.merged, m.phase === 'rebuild'
      ? { what: 'rebuild', done: m.done, total: m.total, pending: staged }
      : staged > 0
        ? { what: 'backlog', pending: staged }
        : m.phase === 'renumber' ? { what: 'renumbering', moved: m.moved, most: m.most, span: this.span, docs: this.docs } : undefined)
  }
}
