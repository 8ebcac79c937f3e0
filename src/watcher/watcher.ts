import fs from 'node:fs'
import path from 'node:path'
import { AbortedError, every, InvalidInputError, NotAFileError, silentLogger, stopAll, systemClock, waitFor, type Clock, type Logger } from '../common/index.js'
import { validateFieldPath } from '../records/index.js'
import { ChangeTracker } from './change-tracker.js'
import { FileNotFoundError, FilesPathUnavailableError, InvalidPathError } from './errors.js'
import type { FileEventSource } from './file-event-source.js'
import { FileState } from './file-state.js'
import { FullHasher } from './full-hasher.js'
import { createFsEventSource } from './fs-event-source.js'
import { LifecycleWriter } from './lifecycle-writer.js'
import { PathRechecks } from './path-rechecks.js'
import { systemFileReads } from './file-reads.js'
import { ProgressMeter, round1 } from './progress-meter.js'
import { checkRegisterPath } from './register-path.js'
import { SkipLog } from './skip-log.js'
import { statPath, walkTree } from './tree-walk.js'
import {
  FILE_EVENTS, type RegisterResult, type ScanSummary, type WatcherComponents, type WatcherHandle, type WatcherInit,
  type WatcherProgress, type WatcherStatus
} from './types.js'

const DEFAULT_RESCAN_MS = 300_000
const DEFAULT_SETTLE_MS = 2_000
const DEFAULT_HASH_CONCURRENCY = 4
const DEFAULT_PROGRESS_MS = 5_000

/** Creates the watcher of FILES_PATH (see index.ts for what it guarantees). */
export function createWatcher (components: WatcherComponents, init: WatcherInit): WatcherHandle {
  return new FilesWatcher(components, init)
}

type ScanKind = Exclude<WatcherProgress['phase'], 'idle'>

class FilesWatcher implements WatcherHandle {
  private readonly c: WatcherComponents
  private readonly root: string
  /** `root` with symlinks resolved (FILES_PATH may itself be a link): what links inside the library are judged against. */
  private realRoot: string
  private readonly filesPath: string
  private readonly enabled: boolean
  private readonly rescanMs: number
  private readonly progressMs: number
  private readonly watcherId: string
  private readonly holderId: string
  private readonly log: Logger
  private readonly clock: Clock
  private readonly state = new FileState()
  private readonly writer: LifecycleWriter
  private readonly tracker: ChangeTracker
  private readonly fullHasher: FullHasher
  private readonly progress = new ProgressMeter()
  private readonly source: FileEventSource | undefined
  private hydrated = false
  private started = false
  private stopping: Promise<void> | undefined
  private controller = new AbortController()
  /** Scans run one at a time, in request order. */
  private scanChain: Promise<unknown> = Promise.resolve()
  /** A requested scan that has not started yet: later requests join it. */
  private waitingScan: Promise<ScanSummary> | undefined
  private scanning = false
  /** A scan walks the tree or re-stats what it did not find (then it only waits for its files to settle and be hashed). */
  private walking = false
  private lastScan: string | undefined
  /** Why the last scan failed; cleared by the next that succeeds (the status, and /health). */
  private lastError: WatcherStatus['lastError']
  private cancelRescan: (() => void) | undefined
  private readonly skips: SkipLog
  private readonly rechecks: PathRechecks

  constructor (components: WatcherComponents, init: WatcherInit) {
    if (typeof init.filesPath !== 'string' || init.filesPath.length === 0) throw new InvalidInputError('filesPath is required')
    this.c = components
    this.filesPath = init.filesPath
    this.root = path.resolve(init.filesPath)
    this.realRoot = this.root
    this.enabled = init.enabled ?? true
    this.rescanMs = positive(init.rescanIntervalMs ?? DEFAULT_RESCAN_MS, 'rescanIntervalMs')
    this.progressMs = positive(init.progressIntervalMs ?? DEFAULT_PROGRESS_MS, 'progressIntervalMs')
    const settleMs = init.settleMs ?? DEFAULT_SETTLE_MS
    if (!Number.isFinite(settleMs) || settleMs < 0) throw new InvalidInputError('settleMs must be a number of ms ≥ 0')
    const hashConcurrency = init.hashConcurrency ?? DEFAULT_HASH_CONCURRENCY
    if (!Number.isSafeInteger(hashConcurrency) || hashConcurrency < 1) throw new InvalidInputError('hashConcurrency must be an integer ≥ 1')
    this.watcherId = init.watcherId ?? 'files'
    this.holderId = init.holderId ?? components.records.nodeId
    if (this.holderId.includes('/')) throw new InvalidInputError('holderId cannot contain "/"')
    validateFieldPath(`holders/${this.holderId}`)
    this.log = (components.logger ?? silentLogger).child('watcher')
    this.clock = components.clock ?? systemClock
    const io = { clock: this.clock, reads: components.reads ?? systemFileReads } // what the tracker and the full hash act through
    this.skips = new SkipLog(this.log)
    let tracker: ChangeTracker | undefined
    let fullHasher: FullHasher | undefined
    this.writer = new LifecycleWriter({
      records: components.records,
      state: this.state,
      holderId: this.holderId,
      clock: this.clock,
      logger: this.log,
      claimPendingDelete: cid => tracker?.claimPendingDelete(cid),
      recheck: rel => { this.rechecks.hint(rel) },
      onRecorded: e => { fullHasher?.recorded(e) }
    })
    tracker = new ChangeTracker({
      root: () => this.realRoot,
      state: this.state,
      writer: this.writer,
      settleMs,
      hashConcurrency,
      ...io,
      logger: this.log,
      recheck: rel => { this.rechecks.hint(rel) },
      onHashed: (bytes, size) => { this.progress.hashed(bytes, size) }
    })
    this.tracker = tracker
    this.rechecks = new PathRechecks({
      root: () => this.realRoot,
      state: this.state,
      tracker,
      skips: this.skips,
      clock: this.clock,
      logger: this.log,
      active: () => this.started,
      signal: () => this.controller.signal,
      rescan: () => { this.requestScan('scan').catch(err => { this.scanFailed(err) }) }
    })
    this.fullHasher = fullHasher = new FullHasher({
      records: components.records,
      state: this.state,
      root: () => this.realRoot,
      algorithms: init.fullHash ?? [],
      bytesPerSecond: init.fullHashBytesPerSecond,
      ...io,
      logger: this.log,
      // Behind the watcher's own reads: a walk, files queued for their midhash or being hashed (not files settling).
      busy: () => this.walking || tracker.hashing,
      progressMs: this.progressMs
    })
    this.source = components.eventSource ?? (this.enabled ? createFsEventSource({ root: this.root, logger: this.log }) : undefined)
  }

  // ------------------------------------------------------------ lifecycle

  async start (): Promise<void> {
    if (this.started) return
    if (this.stopping !== undefined) await this.stopping
    this.started = true
    this.stopping = undefined
    this.controller = new AbortController()
    this.tracker.restart()
    await fs.promises.mkdir(this.root, { recursive: true })
    this.realRoot = await fs.promises.realpath(this.root)
    // Disabled: nothing to compare until a scan or a registration asks (each hydrates first).
    // What the records lack of the files known here is found again after every start (none known yet when disabled).
    if (this.enabled) this.hydrate()
    this.fullHasher.start()
    if (!this.enabled) return
    // Live events first: whatever changes while the initial scan runs is hinted rather than missed.
    await this.source?.start(rel => { this.rechecks.hint(rel) })
    this.requestScan('initial-scan').catch(err => { this.scanFailed(err) })
  }

  async stop (): Promise<void> {
    if (!this.started) {
      await this.stopping
      return
    }
    this.started = false
    this.stopping = (async () => {
      this.controller.abort()
      await stopAll([
        async () => { await this.fullHasher.stop() },
        async () => { await this.source?.stop() },
        () => {
          this.cancelRescan?.()
          this.rechecks.cancel()
        },
        async () => { await this.tracker.stop() },
        async () => { await this.scanChain },
        async () => { await this.rechecks.settled() },
        async () => { await this.writer.idle() }
      ])
    })()
    await this.stopping
  }

  private hydrate (): void {
    if (this.hydrated) return
    // One read snapshot for the whole walk: a statement per record, not a read lock per statement.
    const r = this.c.records.read(() => this.state.hydrate(this.c.records, this.holderId))
    this.hydrated = true
    this.fullHasher.knownFiles()
    this.log.info('file state loaded', { files: this.state.size, fromRows: r.fromRows, unconfirmed: r.fromRecords })
  }

  status (): WatcherStatus {
    const s: WatcherStatus = {
      id: this.watcherId,
      filesPath: this.filesPath,
      enabled: this.enabled,
      active: this.started && this.enabled,
      isScanning: this.scanning,
      fileCount: this.state.size,
      progress: this.progress.snapshot(this.tracker.pendingWork()),
      skipped: { ...this.skips.counts },
      fullHash: this.fullHasher.status()
    }
    if (this.lastScan !== undefined) s.lastScan = this.lastScan
    if (this.lastError !== undefined) s.lastError = this.lastError
    if (this.source !== undefined && this.started) s.events = this.source.status()
    return s
  }

  async whenIdle (opts: { timeoutMs: number }): Promise<void> {
    await waitFor(
      () => !this.scanning && this.waitingScan === undefined && this.rechecks.idle && this.tracker.idle,
      { timeoutMs: opts.timeoutMs, what: 'the watcher to finish its work', intervalMs: 20, clock: this.clock })
  }

  // ------------------------------------------------------------ scans

  async scan (): Promise<ScanSummary> {
    this.hydrate()
    return await this.requestScan('scan')
  }

  async reset (): Promise<ScanSummary> {
    this.hydrate()
    return await this.enqueueScan('reset')
  }

  private async requestScan (kind: ScanKind): Promise<ScanSummary> {
    if (this.waitingScan !== undefined) return await this.waitingScan
    const p = this.enqueueScan(kind, () => { if (this.waitingScan === p) this.waitingScan = undefined })
    this.waitingScan = p
    return await p
  }

  private async enqueueScan (kind: ScanKind, onStart?: () => void): Promise<ScanSummary> {
    const run = this.scanChain.then(async () => {
      onStart?.()
      return await this.runScan(kind)
    })
    this.scanChain = run.catch(() => {})
    return await run
  }

  private async runScan (kind: ScanKind): Promise<ScanSummary> {
    const signal = this.controller.signal
    if (signal.aborted) throw new AbortedError('watcher stopped')
    this.cancelRescan?.()
    this.scanning = this.walking = true
    const tag = this.tracker.openTag()
    this.progress.begin(kind)
    const t0 = this.clock.monotonic()
    const stopTicker = every(this.clock, this.progressMs, () => { this.logProgress() })
    this.log.info('scan started', { phase: kind, known: this.state.size })
    try {
      if (kind === 'reset') await this.resetState()
      const seen = new Set<string>()
      this.skips.beginScan()
      let walked
      try {
        this.realRoot = await fs.promises.realpath(this.root)
        walked = await walkTree({
          root: this.realRoot,
          signal,
          onFile: (rel, st) => { seen.add(rel); this.progress.seen(); this.tracker.observe(rel, st, tag) },
          onError: (rel, err) => { this.log.warn('unreadable entry skipped', { path: rel, code: err.code }) },
          onSkip: (e) => { this.skips.skip(e) }
        })
      } catch (err) {
        if (err instanceof AbortedError) throw err
        throw new FilesPathUnavailableError(this.filesPath, { cause: err })
      }
      this.skips.endScan(walked.skipped)
      const unseen: string[] = []
      for (const rel of this.state.paths()) if (!seen.has(rel)) unseen.push(rel)
      await this.rechecks.restat(unseen, tag, signal)
      this.walking = false
      const counts = await this.tracker.closeTag(tag)
      const summary: ScanSummary = { fileCount: this.state.size, ...counts }
      this.lastScan = new Date(this.clock.now()).toISOString()
      this.lastError = undefined
      const p = this.progress.snapshot(this.tracker.pendingWork())
      this.log.info('scan finished', {
        phase: kind, ...summary, seconds: round1((this.clock.monotonic() - t0) / 1000), filesSeen: p.filesSeen, filesHashed: p.filesHashed,
        mbPerSecond: p.mbPerSecond
      })
      return summary
    } catch (err) {
      this.tracker.abandonTag(tag)
      if (!(err instanceof AbortedError)) {
        this.lastError = { message: err instanceof Error ? err.message : String(err), at: new Date(this.clock.now()).toISOString() }
      }
      throw err
    } finally {
      stopTicker()
      this.progress.end()
      this.scanning = this.walking = false
      this.armRescan()
    }
  }

  /** Reset: the stream restarts with a `reset` entry, the state rows go, and every file is hashed and announced again. */
  private async resetState (): Promise<void> {
    await this.c.records.local.write(tx => {
      tx.clearStream(FILE_EVENTS)
      tx.appendEvent(FILE_EVENTS, { type: 'reset', path: '', watcherId: this.watcherId, timestamp: String(this.clock.now()) })
      FileState.clearRows(tx)
    })
    // Entries stay in memory (fresh) only so that files gone since can still be cleaned up and announced.
    this.state.markAllFresh()
  }

  private armRescan (): void {
    this.cancelRescan?.()
    if (!this.started || !this.enabled) return
    this.cancelRescan = this.clock.schedule(this.rescanMs, () => {
      this.requestScan('scan').catch(err => { this.scanFailed(err) })
    })
  }

  private scanFailed (err: unknown): void {
    if (err instanceof AbortedError) return
    // A failed scan leaves the state as it was; the next periodic scan tries again.
    this.log.error('scan failed', { err })
  }

  private logProgress (): void {
    const p = this.progress.snapshot(this.tracker.pendingWork())
    this.log.info('scan progress', {
      phase: p.phase, filesSeen: p.filesSeen, filesHashed: p.filesHashed, filesPending: p.filesPending, mbPerSecond: p.mbPerSecond, etaSeconds: p.etaSeconds
    })
  }

  // ------------------------------------------------------------ registerFile

  async registerFile (relPath: string): Promise<RegisterResult> {
    const rel = checkRegisterPath(relPath)
    this.hydrate()
    // The walk's rules: a FIFO is never opened, a link leading outside is never read.
    const k = await statPath(this.realRoot, rel)
    if (k.kind === 'dir') throw new InvalidPathError(relPath, 'names a directory')
    if (k.kind === 'none') {
      if (k.skipped?.reason === 'outside') throw new InvalidPathError(relPath, 'is a symlink that leads outside the library folder')
      if (k.skipped?.reason === 'special') throw new NotAFileError(`${JSON.stringify(rel)} is a ${k.skipped.detail}, not a regular file`)
      throw new FileNotFoundError(rel)
    }
    const { size, mtimeNs } = k.st
    const digest = await this.tracker.hashNow(k.st.real ?? path.join(this.realRoot, rel), size)
    const out = await this.writer.submit({ kind: 'seen', rel, size, mtimeNs: String(mtimeNs), cid: digest.cid, register: true })
    if (!out.ok) throw out.error
    const root = this.c.records.resolveRoot(digest.cid)
    if (root === undefined) throw new FileNotFoundError(rel) // deleted again between the write and this read
    return { root, cid: digest.cid, created: out.created === true, path: rel, size }
  }
}

function positive (n: number, name: string): number {
  if (!Number.isFinite(n) || n <= 0) throw new InvalidInputError(`${name} must be a positive number of ms`)
  return n
}
