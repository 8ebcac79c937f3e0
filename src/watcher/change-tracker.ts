import path from 'node:path'
import { AbortedError, silentLogger, systemClock, type Cancel, type Clock, type Logger } from '../common/index.js'
import { midhashSampleRange, ShortReadError, type FileDigest } from '../cid/index.js'
import type { FileState } from './file-state.js'
import { HashQueue } from './hash-queue.js'
import type { LifecycleWriter, Step } from './lifecycle-writer.js'
import { MoveMatcher, type PendingDelete } from './move-matcher.js'
import { systemFileReads, type FileReads } from './file-reads.js'
import { ScanTags, type ScanCounts } from './scan-tags.js'
import { Candidate, firstPhase, SettlePolicy } from './settle-policy.js'
import type { FileStat } from './tree-walk.js'

export interface ChangeTrackerOptions {
  /** The real path of the library root (symlinks resolved; it may change between scans, hence a getter). */
  root: () => string
  state: FileState
  writer: LifecycleWriter
  settleMs: number
  hashConcurrency: number
  /** Settle windows and their ticks (default: the system's). */
  clock?: Clock
  /** The settle re-stat and the hash (default: the real file system's). */
  reads?: FileReads
  logger?: Logger
  /** A path whose change arrived while it was being hashed or written: look at it again (the watcher re-stats and routes it). */
  recheck: (rel: string) => void
  /** One file hashed: the bytes read and its size (progress). */
  onHashed?: (sampleBytes: number, size: number) => void
}

/** What is left to hash: files waiting to settle, queued or being hashed, and their sample bytes. */
export interface PendingWork {
  files: number
  bytes: number
}

/**
 * The differential state machine between "a path was observed" and the
 * lifecycle writer. Every source of observations (scans, sub-walks, OS
 * hints, re-checks) calls `observe(rel, stat | null)`; the tracker decides,
 * with three parts it owns:
 *
 * - A file whose (size, mtime) equals its state row: nothing.
 * - Otherwise it becomes a candidate that settles (SettlePolicy: a window of
 *   stillness, or none for a file already quiet), then waits its turn in the
 *   HashQueue (`hashConcurrency` slots). After hashing, a file that had to
 *   settle is stat'ed again; if it changed while being read the hash is
 *   thrown away and it settles again. A file that was quiet from the start
 *   skips that re-stat (it would double the initial scan's stats for a case
 *   that needs a write to start within the few ms of hashing): should it
 *   happen, the write's OS event marks the file dirty, and it is re-checked
 *   and re-hashed as a `change` right after it is recorded; without events,
 *   the next rescan finds its mtime differs from the state row. Unreadable
 *   files are logged once per (size, mtime) and skipped, never fatal.
 * - A known file that is gone waits as a pending delete (MoveMatcher) for
 *   the window and while a candidate of its size is unresolved; a new path
 *   with the same content claims it: one `rename`, the record kept.
 *
 * Time and timers come from the clock only, stats and hashes from the
 * reads, so a test with a virtual clock drives every window.
 *
 * Scans tag what they find; `closeTag` resolves when every tagged candidate
 * and pending delete is resolved, with the events they produced. A candidate
 * that changes after its scan saw it loses the tag: a scan does not wait for
 * a file that is still being written.
 */
export class ChangeTracker {
  private readonly root: () => string
  private readonly state: FileState
  private readonly writer: LifecycleWriter
  private readonly clock: Clock
  private readonly reads: FileReads
  private readonly log: Logger
  private readonly recheck: (rel: string) => void
  private readonly onHashed: (sampleBytes: number, size: number) => void
  private readonly settle: SettlePolicy
  private readonly queue: HashQueue<Candidate>
  private readonly moves = new MoveMatcher()
  private readonly candidates = new Map<string, Candidate>()
  /** Unreadable files, by the (size, mtime) that failed: not retried until that changes or a full scan asks. */
  private readonly skipped = new Map<string, string>()
  private readonly inflight = new Set<Promise<void>>()
  private readonly tags = new ScanTags()
  private cancelTick: Cancel | undefined
  private controller = new AbortController()
  private stopped = false

  constructor (opts: ChangeTrackerOptions) {
    this.root = opts.root
    this.state = opts.state
    this.writer = opts.writer
    this.clock = opts.clock ?? systemClock
    this.reads = opts.reads ?? systemFileReads
    this.settle = new SettlePolicy(opts.settleMs)
    this.log = opts.logger ?? silentLogger
    this.recheck = opts.recheck
    this.onHashed = opts.onHashed ?? (() => {})
    this.queue = new HashQueue(opts.hashConcurrency, c => {
      c.on({ type: 'turn' })
      this.track(this.hash(c))
    })
  }

  /** Nothing settling, hashing, pending or being written. */
  get idle (): boolean {
    return this.candidates.size === 0 && this.moves.size === 0 && this.inflight.size === 0 && !this.writer.busy
  }

  /** Files queued for their midhash or being hashed: reads of the watcher's own (the background full hash waits behind them). */
  get hashing (): boolean {
    return this.queue.busy
  }

  pendingWork (): PendingWork {
    let files = 0
    let bytes = 0
    for (const c of this.candidates.values()) {
      if (c.phase.kind === 'writing') continue
      files++
      bytes += midhashSampleRange(c.size).length
    }
    return { files, bytes }
  }

  // ------------------------------------------------------------ observations

  observe (rel: string, st: FileStat | null, tag?: number): void {
    if (this.stopped) return
    const pd = this.moves.get(rel)
    const c = this.candidates.get(rel)
    if (st === null) {
      this.skipped.delete(rel)
      if (c !== undefined) {
        if (c.busy) c.on({ type: 'touched' })
        else this.dropCandidate(c)
      }
      const e = this.state.get(rel)
      if (e === undefined) return
      if (pd !== undefined) {
        if (tag !== undefined && !pd.submitted) this.tags.set(pd, tag)
        return
      }
      const fresh = this.moves.add(rel, e, this.clock.monotonic() + this.settle.settleMs)
      if (tag !== undefined) this.tags.set(fresh, tag)
      this.schedule()
      return
    }
    if (pd !== undefined) {
      if (pd.submitted) { pd.dirty = true; return }
      this.removePending(pd) // it is back: whatever it holds now is judged below
    }
    if (c?.busy === true) {
      if (!c.same(st)) c.on({ type: 'touched' })
      if (tag !== undefined && !this.tags.waitedFor(c)) this.tags.set(c, tag)
      return
    }
    const e = this.state.get(rel)
    if (e !== undefined && !e.fresh && e.size === st.size && e.mtimeNs === String(st.mtimeNs)) {
      if (c !== undefined) this.dropCandidate(c)
      return
    }
    if (tag === undefined && this.skipped.get(rel) === `${st.size}:${st.mtimeNs}`) return
    if (c !== undefined) {
      if (!c.same(st)) this.changed(c, st)
      else if (tag !== undefined && !this.tags.waitedFor(c)) this.tags.set(c, tag)
      return
    }
    const quiet = this.settle.quiet(st.mtimeNs, this.clock.now())
    const fresh = new Candidate(rel, st, firstPhase(quiet, this.clock.monotonic()))
    this.candidates.set(rel, fresh)
    if (tag !== undefined) this.tags.set(fresh, tag)
    if (quiet) {
      this.queue.push(fresh)
    } else {
      this.settle.start(fresh, this.clock.monotonic())
      this.schedule()
    }
    this.moves.track(fresh)
  }

  /** Takes an unsubmitted pending delete of this content, for a move; returns its path. */
  claimPendingDelete (cid: string): string | undefined {
    const pd = this.moves.claim(cid)
    if (pd === undefined) return undefined
    this.tags.clear(pd)
    return pd.rel
  }

  // ------------------------------------------------------------ scans

  openTag (): number {
    return this.tags.open()
  }

  async closeTag (tag: number): Promise<ScanCounts> {
    return await this.tags.close(tag)
  }

  abandonTag (tag: number): void {
    this.tags.abandon(tag)
  }

  // ------------------------------------------------------------ settling

  private changed (c: Candidate, st: FileStat): void {
    this.moves.untrack(c)
    c.size = st.size
    c.mtimeNs = st.mtimeNs
    c.real = st.real
    this.settle.start(c, this.clock.monotonic())
    this.moves.track(c)
    this.tags.clear(c)
    this.schedule()
  }

  private schedule (): void {
    if (this.cancelTick !== undefined || this.stopped) return
    if (this.settle.size === 0 && !this.moves.waiting) return
    this.cancelTick = this.clock.schedule(this.settle.tickMs, () => { this.cancelTick = undefined; this.tick() })
  }

  private tick (): void {
    if (this.stopped) return
    const now = this.clock.monotonic()
    for (const c of this.settle.ripe(now)) {
      c.on({ type: 'check' })
      this.track(this.settleCheck(c))
    }
    for (const pd of this.moves.due(now)) this.track(this.submitGone(pd))
    this.schedule()
  }

  private async settleCheck (c: Candidate): Promise<void> {
    let st: FileStat | null
    try {
      st = await this.reads.stat(this.root(), c.rel)
    } catch (err) {
      c.on({ type: 'checked' })
      this.unreadable(c, err)
      return
    }
    c.on({ type: 'checked' })
    if (c.phase.kind !== 'settling') return // dropped meanwhile
    if (st === null) {
      this.dropCandidate(c)
      this.observe(c.rel, null)
    } else if (!c.same(st)) {
      this.changed(c, st)
    } else {
      this.settle.delete(c)
      c.on({ type: 'settled' })
      this.queue.push(c)
    }
  }

  // ------------------------------------------------------------ hashing

  private async hash (c: Candidate): Promise<void> {
    // A regular file is read as itself, a link's target by its real path; a link swapped in meanwhile is refused, never followed.
    const abs = c.real ?? path.join(this.root(), c.rel)
    let digest: FileDigest
    let after: FileStat | null = c
    const quiet = c.phase.kind === 'hashing' && c.phase.quiet
    try {
      digest = await this.reads.hash(abs, { size: c.size, signal: this.controller.signal })
      if (!quiet) after = await this.reads.stat(this.root(), c.rel)
    } catch (err) {
      this.queue.release()
      this.hashFailed(c, err)
      return
    }
    this.queue.release()
    if (this.stopped) return
    if (after === null) {
      this.dropCandidate(c)
      this.observe(c.rel, null)
      return
    }
    if (!c.same(after)) {
      this.changed(c, after) // written while being read: that hash names bytes that never existed together
      return
    }
    this.onHashed(midhashSampleRange(c.size).length, c.size)
    c.on({ type: 'hashed' })
    const step: Step = { kind: 'seen', rel: c.rel, size: c.size, mtimeNs: String(c.mtimeNs), cid: digest.cid, tag: c.tag }
    const out = await this.writer.submit(step)
    this.tags.count(c, out)
    const dirty = c.dirty
    // On failure nothing changed: the state row still differs from the file, so the next scan tries again.
    this.dropCandidate(c)
    if (dirty) this.recheck(c.rel)
  }

  private hashFailed (c: Candidate, err: unknown): void {
    if (this.stopped || err instanceof AbortedError) return
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      this.dropCandidate(c)
      this.observe(c.rel, null)
      return
    }
    if (err instanceof ShortReadError) {
      // It shrank between stat and read: still being written (or truncated); settle again.
      this.settle.start(c, this.clock.monotonic())
      this.tags.clear(c)
      this.schedule()
      return
    }
    this.unreadable(c, err)
  }

  /** Logged once per (path, size, mtime) and skipped: an unreadable file must never stop the watcher. */
  private unreadable (c: Candidate, err: unknown): void {
    const key = `${c.size}:${c.mtimeNs}`
    if (this.skipped.get(c.rel) !== key) this.log.warn('unreadable file skipped', { path: c.rel, err })
    this.skipped.set(c.rel, key)
    this.dropCandidate(c)
  }

  /** Hashes a file outside the candidate queue (registerFile), within the same concurrency bound; `real` is its resolved path. */
  async hashNow (real: string, size: number): Promise<FileDigest> {
    await this.queue.acquire()
    try {
      return await this.reads.hash(real, { size, signal: this.controller.signal })
    } finally {
      this.queue.release()
    }
  }

  // ------------------------------------------------------------ deletes

  private removePending (pd: PendingDelete): void {
    this.moves.remove(pd)
    this.tags.clear(pd)
  }

  private async submitGone (pd: PendingDelete): Promise<void> {
    this.moves.submit(pd) // no longer claimable: it is being written as a delete
    const out = await this.writer.submit({ kind: 'gone', rel: pd.rel, tag: pd.tag })
    this.tags.count(pd, out)
    this.removePending(pd)
    if (pd.dirty) this.recheck(pd.rel)
  }

  // ------------------------------------------------------------ bookkeeping

  private dropCandidate (c: Candidate): void {
    if (c.dropped || this.candidates.get(c.rel) !== c) return
    c.on({ type: 'drop' })
    this.candidates.delete(c.rel)
    this.settle.delete(c)
    this.moves.untrack(c)
    this.tags.clear(c)
  }

  private track (p: Promise<void>): void {
    const q = p.catch(err => { this.log.error('watcher step failed', { err }) }) // a bug in one file's handling must not stop the others
      .finally(() => { this.inflight.delete(q) })
    this.inflight.add(q)
  }

  /** Aborts hashing, drops what is not yet written, waits for writes in flight. Idempotent. */
  async stop (): Promise<void> {
    if (!this.stopped) {
      this.stopped = true
      this.controller.abort()
      this.queue.stop()
      this.cancelTick?.()
      this.cancelTick = undefined
      this.tags.abortAll()
    }
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight])
    await this.writer.idle()
  }

  /** After stop(): ready to run again, with nothing in flight and the in-memory state kept. */
  restart (): void {
    if (!this.stopped) return
    this.stopped = false
    this.controller = new AbortController()
    this.candidates.clear()
    this.settle.clear()
    this.queue.reset()
    this.moves.clear()
  }
}
