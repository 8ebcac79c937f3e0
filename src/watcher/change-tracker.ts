import path from 'node:path'
import { AbortedError, silentLogger, type Logger } from '../common/index.js'
import { midhash256, midhashSampleRange, ShortReadError, type FileDigest } from '../cid/index.js'
import type { FileState, FileEntry } from './file-state.js'
import type { LifecycleWriter, Step } from './lifecycle-writer.js'
import { ScanTags, type ScanCounts } from './scan-tags.js'
import { Semaphore } from './semaphore.js'
import { statFile, type FileStat } from './tree-walk.js'

export interface ChangeTrackerOptions {
  /** The real path of the library root (symlinks resolved; it may change between scans, hence a getter). */
  root: () => string
  state: FileState
  writer: LifecycleWriter
  settleMs: number
  hashConcurrency: number
  logger?: Logger
  /** A path whose change arrived while it was being hashed or written: look at it again (the watcher re-stats and routes it). */
  recheck: (rel: string) => void
  /** Bytes read by one finished hash (progress). */
  onHashed?: (sampleBytes: number) => void
}

/** What is left to hash: files waiting to settle, queued or being hashed, and their sample bytes. */
export interface PendingWork {
  files: number
  bytes: number
}

type Phase = 'settling' | 'queued' | 'hashing' | 'writing'

/** A file seen with a size/mtime the state does not hold: on its way to being hashed and recorded. */
interface Candidate {
  rel: string
  size: number
  mtimeNs: bigint
  /** `${size}:${mtimeNs}`, kept to spare converting the bigint on every use. */
  key: string
  /** The real path when the file is a symlink to a library file: hashing reads it, never following a link itself. */
  real: string | undefined
  /** Monotonic ms since which (size, mtime) has not been seen to change. */
  stableSince: number
  phase: Phase
  /**
   * Its mtime was already older than the settle window when first seen, and
   * it has not changed since: hashed without the confirming re-stat.
   */
  quiet: boolean
  /** A settle re-stat is in flight. */
  checking: boolean
  /** Changed again while hashing or writing: look again when done. */
  dirty: boolean
  tag: number | undefined
}

/** A known file not found: written as `gone` once the settle window passes without it turning up elsewhere (a move). */
interface PendingDelete {
  rel: string
  cid: string
  sizeKey: string
  due: number
  submitted: boolean
  dirty: boolean
  tag: number | undefined
}

/**
 * The differential state machine between "a path was observed" and the
 * lifecycle writer. Every source of observations (scans, sub-walks, OS
 * hints, re-checks) calls `observe(rel, stat | null)`; the tracker decides.
 *
 * - A file whose (size, mtime) equals its state row: nothing.
 * - Otherwise it becomes a candidate, hashed only once (size, mtime) has held
 *   still for `settleMs` (re-stat'ed at the end of the window; any change
 *   restarts it), so a file still being copied is not recorded half written.
 *   A file whose mtime is already older than the window cannot have been
 *   written during it and is queued at once (the initial scan's files, a
 *   moved file). After hashing, a file that had to settle is stat'ed again;
 *   if it changed while being read the hash is thrown away and it settles
 *   again. A file that was quiet from the start skips that re-stat (it
 *   would double the initial scan's stats for a case that needs a write to
 *   start within the few ms of hashing): should it happen, the write's OS
 *   event marks the file dirty, and it is re-checked and re-hashed as a
 *   `change` right after it is recorded; without events, the next rescan
 *   finds its mtime differs from the state row.
 * - Hashing runs on `hashConcurrency` slots; unreadable files are logged once
 *   per (size, mtime) and skipped, never fatal.
 * - A known file that is gone waits `settleMs` as a pending delete. A new
 *   file with the same content hashed meanwhile claims it: one `rename`. A
 *   pending delete also waits while any candidate has its exact size and
 *   mtime (a move keeps both), so a slow hash queue cannot split a move.
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
  private readonly settleMs: number
  private readonly tickMs: number
  private readonly log: Logger
  private readonly recheck: (rel: string) => void
  private readonly onHashed: (n: number) => void
  private readonly sem: Semaphore
  private readonly candidates = new Map<string, Candidate>()
  private readonly settling = new Set<Candidate>()
  private hashQueue: Candidate[] = []
  private hashHead = 0
  /** Candidates per `${size}:${mtimeNs}`: what a pending delete waits on. */
  private readonly sizeIndex = new Map<string, number>()
  private readonly pending = new Map<string, PendingDelete>()
  private readonly pendingByCid = new Map<string, Set<string>>()
  /** Unreadable files, by the (size, mtime) that failed: not retried until that changes or a full scan asks. */
  private readonly skipped = new Map<string, string>()
  private readonly inflight = new Set<Promise<void>>()
  private readonly tags = new ScanTags()
  private timer: NodeJS.Timeout | undefined
  private controller = new AbortController()
  private stopped = false

  constructor (opts: ChangeTrackerOptions) {
    this.root = opts.root
    this.state = opts.state
    this.writer = opts.writer
    this.settleMs = opts.settleMs
    // Check a few times per window: a settled file waits at most a quarter window more.
    this.tickMs = Math.min(500, Math.max(20, Math.floor(opts.settleMs / 4)))
    this.log = opts.logger ?? silentLogger
    this.recheck = opts.recheck
    this.onHashed = opts.onHashed ?? (() => {})
    this.sem = new Semaphore(opts.hashConcurrency, () => { this.pump() })
  }

  /** Nothing settling, hashing, pending or being written. */
  get idle (): boolean {
    return this.candidates.size === 0 && this.pending.size === 0 && this.inflight.size === 0 && !this.writer.busy
  }

  pendingWork (): PendingWork {
    let files = 0
    let bytes = 0
    for (const c of this.candidates.values()) {
      if (c.phase === 'writing') continue
      files++
      bytes += midhashSampleRange(c.size).length
    }
    return { files, bytes }
  }

  // ------------------------------------------------------------ observations

  observe (rel: string, st: FileStat | null, tag?: number): void {
    if (this.stopped) return
    const pd = this.pending.get(rel)
    const c = this.candidates.get(rel)
    if (st === null) {
      this.skipped.delete(rel)
      if (c !== undefined) {
        if (busy(c)) c.dirty = true
        else this.dropCandidate(c)
      }
      const e = this.state.get(rel)
      if (e === undefined) return
      if (pd !== undefined) {
        if (tag !== undefined && !pd.submitted) this.setTag(pd, tag)
        return
      }
      this.addPending(rel, e, tag)
      return
    }
    if (pd !== undefined) {
      if (pd.submitted) { pd.dirty = true; return }
      this.removePending(pd) // it is back: whatever it holds now is judged below
    }
    if (c !== undefined && busy(c)) {
      if (c.size !== st.size || c.mtimeNs !== st.mtimeNs) c.dirty = true
      if (tag !== undefined && !this.tags.waitedFor(c)) this.setTag(c, tag)
      return
    }
    const e = this.state.get(rel)
    if (e !== undefined && !e.fresh && e.size === st.size && e.mtimeNs === String(st.mtimeNs)) {
      if (c !== undefined) this.dropCandidate(c)
      return
    }
    if (tag === undefined && this.skipped.get(rel) === `${st.size}:${st.mtimeNs}`) return
    if (c !== undefined) {
      if (c.size !== st.size || c.mtimeNs !== st.mtimeNs) this.changed(c, st)
      else if (tag !== undefined && !this.tags.waitedFor(c)) this.setTag(c, tag)
      return
    }
    const now = performance.now()
    const quiet = Date.now() - Number(st.mtimeNs / 1_000_000n) >= this.settleMs
    const fresh: Candidate = {
      rel, size: st.size, mtimeNs: st.mtimeNs, key: `${st.size}:${st.mtimeNs}`, real: st.real, stableSince: now, phase: 'settling', quiet, checking: false, dirty: false, tag: undefined
    }
    this.candidates.set(rel, fresh)
    this.indexAdd(fresh)
    if (tag !== undefined) this.setTag(fresh, tag)
    if (quiet) this.enqueue(fresh)
    else {
      this.settling.add(fresh)
      this.schedule()
    }
  }

  /** Takes an unsubmitted pending delete of this content, for a move. */
  claimPendingDelete (cid: string): string | undefined {
    const rels = this.pendingByCid.get(cid)
    if (rels === undefined) return undefined
    for (const rel of rels) {
      const pd = this.pending.get(rel)
      if (pd === undefined || pd.submitted) continue
      this.removePending(pd)
      return rel
    }
    return undefined
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

  private setTag (x: Candidate | PendingDelete, tag: number): void {
    this.tags.set(x, tag)
  }

  private clearTag (x: Candidate | PendingDelete): void {
    this.tags.clear(x)
  }

  // ------------------------------------------------------------ settling

  private changed (c: Candidate, st: FileStat): void {
    this.indexRemove(c)
    c.size = st.size
    c.mtimeNs = st.mtimeNs
    c.key = `${st.size}:${st.mtimeNs}`
    c.real = st.real
    this.indexAdd(c)
    c.stableSince = performance.now()
    c.dirty = false
    c.quiet = false
    c.phase = 'settling' // if it was queued, the hash pump skips it
    this.settling.add(c)
    this.clearTag(c)
    this.schedule()
  }

  private schedule (): void {
    if (this.timer !== undefined || this.stopped) return
    let due = this.settling.size > 0
    if (!due) for (const pd of this.pending.values()) if (!pd.submitted) { due = true; break }
    if (!due) return
    this.timer = setTimeout(() => { this.timer = undefined; this.tick() }, this.tickMs)
    this.timer.unref()
  }

  private tick (): void {
    if (this.stopped) return
    const now = performance.now()
    for (const c of this.settling) {
      if (c.checking || now - c.stableSince < this.settleMs) continue
      c.checking = true
      this.track(this.settleCheck(c))
    }
    for (const pd of this.pending.values()) {
      if (pd.submitted || now < pd.due) continue
      // A candidate with this exact size and mtime may be the same file moved: let its hash decide first.
      if ((this.sizeIndex.get(pd.sizeKey) ?? 0) > 0) continue
      this.track(this.submitGone(pd))
    }
    this.schedule()
  }

  private async settleCheck (c: Candidate): Promise<void> {
    let st: FileStat | null
    try {
      st = await statFile(this.root(), c.rel)
    } catch (err) {
      c.checking = false
      this.unreadable(c, err)
      return
    }
    c.checking = false
    if (this.candidates.get(c.rel) !== c || c.phase !== 'settling') return
    if (st === null) {
      this.dropCandidate(c)
      this.observe(c.rel, null)
    } else if (st.size !== c.size || st.mtimeNs !== c.mtimeNs) {
      this.changed(c, st)
    } else {
      this.enqueue(c)
    }
  }

  // ------------------------------------------------------------ hashing

  private enqueue (c: Candidate): void {
    this.settling.delete(c)
    c.phase = 'queued'
    this.hashQueue.push(c)
    this.pump()
  }

  private pump (): void {
    while (this.hashHead < this.hashQueue.length && !this.stopped) {
      const c = this.hashQueue[this.hashHead]
      if (c.phase !== 'queued' || this.candidates.get(c.rel) !== c) { this.hashHead++; continue }
      if (!this.sem.tryAcquire()) break
      this.hashHead++
      c.phase = 'hashing'
      this.track(this.hash(c))
    }
    // Drop the consumed head now and then, so the queue array does not grow for ever.
    if (this.hashHead > 1024 && this.hashHead * 2 > this.hashQueue.length) {
      this.hashQueue = this.hashQueue.slice(this.hashHead)
      this.hashHead = 0
    }
  }

  private async hash (c: Candidate): Promise<void> {
    // noFollow: a regular file is read as itself, a link's target by its real path; a link swapped in meanwhile is refused, never followed.
    const abs = c.real ?? path.join(this.root(), c.rel)
    let digest: FileDigest
    let after: FileStat | null = c
    try {
      digest = await midhash256(abs, { size: c.size, signal: this.controller.signal, noFollow: true })
      if (!c.quiet) after = await statFile(this.root(), c.rel)
    } catch (err) {
      this.sem.release()
      this.hashFailed(c, err)
      return
    }
    this.sem.release()
    if (this.stopped) return
    if (after === null) {
      this.dropCandidate(c)
      this.observe(c.rel, null)
      return
    }
    if (after.size !== c.size || after.mtimeNs !== c.mtimeNs) {
      this.changed(c, after) // written while being read: that hash names bytes that never existed together
      return
    }
    this.onHashed(midhashSampleRange(c.size).length)
    c.phase = 'writing'
    const step: Step = { kind: 'seen', rel: c.rel, size: c.size, mtimeNs: c.key.slice(c.key.indexOf(':') + 1), cid: digest.cid, tag: c.tag }
    const out = await this.writer.submit(step)
    this.tags.count(c, out)
    // On failure nothing changed: the state row still differs from the file, so the next scan tries again.
    this.dropCandidate(c)
    if (c.dirty) this.recheck(c.rel)
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
      c.phase = 'settling'
      c.quiet = false
      c.stableSince = performance.now()
      this.settling.add(c)
      this.clearTag(c)
      this.schedule()
      return
    }
    this.unreadable(c, err)
  }

  /** Logged once per (path, size, mtime) and skipped: an unreadable file must never stop the watcher. */
  private unreadable (c: Candidate, err: unknown): void {
    if (this.skipped.get(c.rel) !== c.key) this.log.warn('unreadable file skipped', { path: c.rel, err })
    this.skipped.set(c.rel, c.key)
    this.dropCandidate(c)
  }

  /** Hashes a file outside the candidate queue (registerFile), within the same concurrency bound; `real` is its resolved path. */
  async hashNow (real: string, size: number): Promise<FileDigest> {
    await this.sem.acquire()
    try {
      return await midhash256(real, { size, signal: this.controller.signal, noFollow: true })
    } finally {
      this.sem.release()
    }
  }

  // ------------------------------------------------------------ deletes

  private addPending (rel: string, e: FileEntry, tag: number | undefined): void {
    const pd: PendingDelete = {
      rel, cid: e.cid, sizeKey: `${e.size}:${e.mtimeNs}`, due: performance.now() + this.settleMs, submitted: false, dirty: false, tag: undefined
    }
    this.pending.set(rel, pd)
    let set = this.pendingByCid.get(e.cid)
    if (set === undefined) { set = new Set(); this.pendingByCid.set(e.cid, set) }
    set.add(rel)
    if (tag !== undefined) this.setTag(pd, tag)
    this.schedule()
  }

  private unindexPending (pd: PendingDelete): void {
    const set = this.pendingByCid.get(pd.cid)
    if (set === undefined) return
    set.delete(pd.rel)
    if (set.size === 0) this.pendingByCid.delete(pd.cid)
  }

  private removePending (pd: PendingDelete): void {
    this.pending.delete(pd.rel)
    this.unindexPending(pd)
    this.clearTag(pd)
  }

  private async submitGone (pd: PendingDelete): Promise<void> {
    pd.submitted = true
    this.unindexPending(pd) // no longer claimable: it is being written as a delete
    const out = await this.writer.submit({ kind: 'gone', rel: pd.rel, tag: pd.tag })
    this.tags.count(pd, out)
    this.pending.delete(pd.rel)
    this.clearTag(pd)
    if (pd.dirty) this.recheck(pd.rel)
  }

  // ------------------------------------------------------------ bookkeeping

  private dropCandidate (c: Candidate): void {
    if (this.candidates.get(c.rel) !== c) return
    this.candidates.delete(c.rel)
    this.settling.delete(c)
    this.indexRemove(c)
    this.clearTag(c)
  }

  private indexAdd (c: Candidate): void {
    this.sizeIndex.set(c.key, (this.sizeIndex.get(c.key) ?? 0) + 1)
  }

  private indexRemove (c: Candidate): void {
    const n = (this.sizeIndex.get(c.key) ?? 0) - 1
    if (n <= 0) this.sizeIndex.delete(c.key)
    else this.sizeIndex.set(c.key, n)
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
      clearTimeout(this.timer)
      this.timer = undefined
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
    this.settling.clear()
    this.hashQueue = []
    this.hashHead = 0
    this.sizeIndex.clear()
    this.pending.clear()
    this.pendingByCid.clear()
  }
}

function busy (c: Candidate): boolean {
  return c.phase === 'hashing' || c.phase === 'writing'
}
