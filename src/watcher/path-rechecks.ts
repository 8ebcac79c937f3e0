/**
 * Paths to look at again between scans: those the event source names, and
 * those the tracker and the lifecycle writer ask to be rechecked. Each is
 * stat'ed (a folder walked) and what it finds is fed to the change tracker,
 * so a live event costs a stat, not a scan. Also the re-stat of known files a
 * scan's walk did not see, which counts nothing gone that is only unreadable.
 */
import { AbortedError, type Clock, type Logger } from '../common/index.js'
import type { ChangeTracker } from './change-tracker.js'
import { isHiddenPath, isUnder } from './file-event-source.js'
import type { FileState } from './file-state.js'
import type { SkipLog } from './skip-log.js'
import { statPath, walkTree } from './tree-walk.js'

/** Hints are gathered this long before being looked at: one burst of events for one file costs one stat. */
const HINT_DELAY_MS = 50
/** Stats of known files the walk did not see, at once. */
const RESTAT_BATCH = 32

export interface PathRecheckDeps {
  /** The library folder's real path (it may change between scans). */
  root: () => string
  state: FileState
  tracker: ChangeTracker
  skips: SkipLog
  clock: Clock
  logger: Logger
  /** False once the watcher stops: hints are dropped. */
  active: () => boolean
  /** Aborted when the watcher stops: a folder's walk ends. */
  signal: () => AbortSignal
  /** A hint for the library folder itself: a full scan. */
  rescan: () => void
}

export class PathRechecks {
  private readonly d: PathRecheckDeps
  private hints = new Set<string>()
  private cancelHints: (() => void) | undefined
  private work: Promise<void> | undefined

  constructor (deps: PathRecheckDeps) {
    this.d = deps
  }

  /** No hint waiting and none being looked at. */
  get idle (): boolean {
    return this.hints.size === 0 && this.work === undefined
  }

  hint (rel: string): void {
    if (!this.d.active() || isHiddenPath(rel)) return
    this.hints.add(rel)
    if (this.cancelHints === undefined && this.work === undefined) {
      this.cancelHints = this.d.clock.schedule(HINT_DELAY_MS, () => { this.cancelHints = undefined; this.flush() })
    }
  }

  /** Drops the hints not looked at yet (the watcher stops). */
  cancel (): void {
    this.cancelHints?.()
    this.cancelHints = undefined
    this.hints.clear()
  }

  /** Resolves once the look in progress, if any, is over. */
  async settled (): Promise<void> {
    await this.work
  }

  /** Known files a walk did not see: each is stat'ed (it may have been recorded meanwhile, or sit in an unreadable folder) before it counts as gone. */
  async restat (rels: string[], tag: number | undefined, signal: AbortSignal): Promise<void> {
    for (let i = 0; i < rels.length; i += RESTAT_BATCH) {
      if (signal.aborted) throw new AbortedError('watcher stopped')
      await Promise.all(rels.slice(i, i + RESTAT_BATCH).map(async rel => {
        try {
          const k = await statPath(this.d.root(), rel)
          if (k.kind === 'none' && k.skipped !== undefined) this.d.skips.skip(k.skipped)
          this.d.tracker.observe(rel, k.kind === 'file' ? k.st : null, tag)
        } catch (err) {
          // Unreadable is not gone: keep what we know.
          this.d.logger.debug('cannot stat a known file', { path: rel, err })
        }
      }))
    }
  }

  private flush (): void {
    if (this.work !== undefined) return
    this.work = (async () => {
      while (this.hints.size > 0 && this.d.active()) {
        const batch = [...this.hints].sort()
        this.hints.clear()
        let last: string | undefined
        for (const rel of batch) {
          // A folder's walk covers what lies below it.
          if (last !== undefined && isUnder(rel, last)) continue
          if (rel === '') {
            this.d.rescan()
            break
          }
          const dir = await this.lookAt(rel)
          if (dir !== undefined) last = dir
        }
      }
    })().catch(err => { this.d.logger.error('hint handling failed', { err }) }) // one bad path must not stop live events
      .finally(() => {
        this.work = undefined
        // Hints that arrived after the loop's last look would otherwise wait for the next one.
        if (this.hints.size > 0 && this.d.active()) this.flush()
      })
  }

  /** Re-stats what a hint names and feeds the tracker; returns the path when it turned out to be a folder. */
  private async lookAt (rel: string): Promise<string | undefined> {
    const { tracker, state, skips, logger } = this.d
    let k
    try {
      k = await statPath(this.d.root(), rel)
    } catch (err) {
      logger.debug('cannot stat a hinted path', { path: rel, err })
      return undefined
    }
    if (k.kind === 'none' && k.skipped !== undefined) skips.skip(k.skipped)
    if (k.kind === 'file') {
      tracker.observe(rel, k.st)
      return undefined
    }
    if (k.kind === 'none') {
      tracker.observe(rel, null)
      for (const p of state.pathsUnder(rel)) tracker.observe(p, null)
      return undefined
    }
    tracker.observe(rel, null) // a file replaced by a folder
    const seen = new Set<string>()
    const signal = this.d.signal()
    try {
      await walkTree({
        root: this.d.root(),
        under: rel,
        signal,
        onFile: (r, st) => { seen.add(r); tracker.observe(r, st) },
        onError: (r, err) => { logger.warn('unreadable entry skipped', { path: r, code: err.code }) },
        onSkip: (e) => { skips.skip(e) }
      })
    } catch (err) {
      if (err instanceof AbortedError) return rel
      logger.debug('cannot walk a hinted folder', { path: rel, err })
      return rel
    }
    await this.restat(state.pathsUnder(rel).filter(p => !seen.has(p)), undefined, signal)
    return rel
  }
}
