/**
 * Bringing the FTS rows back in line with the kv rows, in batches of one
 * write transaction each, so the node keeps serving (and writing) meanwhile:
 *
 * - RebuildJob: every live root refreshed, then every row and every
 *   `idx:fts/` mapping that should not exist removed; the last batch clears
 *   `search_dirty` and writes the version marker. Until then the marker is
 *   absent or stale, so an interrupted rebuild starts over at next open.
 * - DirtyJob: only the roots `search_dirty` lists (written without search).
 *
 * A job is a sequence of `step(tx)` calls, each a bounded batch, returning
 * true when done; runJobSync drives it with writeSync (small stores, at
 * open), runJob with queued writes (large stores, in the background).
 */
import { AbortedError, type Logger } from '../common/index.js'
import { prefixEnd, type KvStore, type Tx } from '../kv/index.js'
import { countLiveRoots, recordRows } from '../records/index.js'
import type { FtsIndex } from './fts-index.js'
import { FTS_MAP, VERSION_KEY } from './search-schema.js'

/** Roots per transaction: about 10-30 ms of work, short enough not to stall reads and other writes. */
const BATCH = 500
/** At least one progress line this often, in ms. */
const PROGRESS_EVERY_MS = 5000

export interface Job {
  step: (tx: Tx) => boolean
}

class Progress {
  private last = Date.now()
  private readonly start = Date.now()
  constructor (private readonly log: Logger, private readonly what: string, private readonly total: number) {}

  tick (done: number, phase: string): void {
    const now = Date.now()
    if (now - this.last < PROGRESS_EVERY_MS) return
    this.last = now
    this.log.info(`${this.what} in progress`, { phase, done, total: this.total, elapsedMs: now - this.start })
  }

  finish (fields: Record<string, unknown>): void {
    this.log.info(`${this.what} done`, { ...fields, elapsedMs: Date.now() - this.start })
  }
}

export class RebuildJob implements Job {
  private phase: 'start' | 'roots' | 'rows' | 'mappings' | 'finish' = 'start'
  private afterRoot = ''
  private afterRowid = 0
  private afterMapping = ''
  private done = 0
  private removed = 0
  private readonly progress: Progress

  constructor (kv: KvStore, private readonly fts: FtsIndex, private readonly marker: string, log: Logger) {
    this.progress = new Progress(log, 'search rebuild', countLiveRoots(kv))
  }

  step (tx: Tx): boolean {
    switch (this.phase) {
      case 'start':
        // Marker off first: a rebuild cut short by a crash or a stop starts over at next open.
        tx.delete(VERSION_KEY)
        this.phase = 'roots'
        break
      case 'roots': {
        const rids = recordRows.liveRoots(tx, this.afterRoot === '' ? undefined : this.afterRoot, BATCH)
        this.fts.refreshRoots(tx, rids)
        this.done += rids.length
        if (rids.length < BATCH) this.phase = 'rows'
        else this.afterRoot = rids[rids.length - 1]
        break
      }
      case 'rows': {
        // Rows that no mapping names, or of roots that are gone or not canonical.
        const page = this.fts.rowPage(this.afterRowid, BATCH)
        for (const [rowid, rid] of page) {
          this.afterRowid = rowid
          const mapped = tx.get(FTS_MAP + rid) === String(rowid)
          if (mapped && isCanonical(tx, rid)) continue
          this.fts.deleteRowid(rowid)
          if (mapped) tx.delete(FTS_MAP + rid)
          this.removed++
        }
        if (page.length < BATCH) this.phase = 'mappings'
        break
      }
      case 'mappings': {
        const lo = this.afterMapping === '' ? FTS_MAP : this.afterMapping + '\u0000'
        const keys = tx.keys(lo, prefixEnd(FTS_MAP), BATCH)
        for (const k of keys) {
          this.afterMapping = k
          const rid = k.slice(FTS_MAP.length)
          if (isCanonical(tx, rid) && this.fts.hasRow(rid)) continue
          // A mapping to a missing row, or of a root that should have none: drop it, then let the refresh decide.
          tx.delete(k)
          this.fts.refreshRoots(tx, [rid])
        }
        if (keys.length < BATCH) this.phase = 'finish'
        break
      }
      case 'finish':
        this.fts.clearDirty()
        tx.put(VERSION_KEY, this.marker)
        this.progress.finish({ roots: this.done, removed: this.removed, rows: this.fts.rowCount() })
        return true
    }
    this.progress.tick(this.done, this.phase)
    return false
  }
}

export class DirtyJob implements Job {
  private done = 0
  private readonly progress: Progress

  constructor (private readonly fts: FtsIndex, log: Logger, pending: number) {
    this.progress = new Progress(log, 'search refresh of roots written without search', pending)
  }

  step (tx: Tx): boolean {
    const rids = this.fts.dirty(BATCH)
    this.fts.refreshRoots(tx, rids) // removes each from search_dirty, so the next batch makes progress
    this.done += rids.length
    if (rids.length < BATCH) {
      this.progress.finish({ roots: this.done })
      return true
    }
    this.progress.tick(this.done, 'roots')
    return false
  }
}

function isCanonical (tx: Tx, rid: string): boolean {
  return recordRows.isLive(tx, rid) && recordRows.canonOf(tx, rid) === rid
}

export function runJobSync (kv: KvStore, job: Job): void {
  while (!kv.writeSync(tx => job.step(tx))) { /* each step is one bounded transaction */ }
}

/** Runs a job one transaction at a time until done, or until `stopped()` (then throws AbortedError). */
export async function runJob (kv: KvStore, job: Job, stopped: () => boolean): Promise<void> {
  for (;;) {
    if (stopped()) throw new AbortedError('search maintenance stopped')
    if (await kv.write(tx => job.step(tx))) return
  }
}
