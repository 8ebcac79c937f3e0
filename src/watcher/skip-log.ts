import type { Logger } from '../common/index.js'
import type { SkipReason, SkippedEntry } from './tree-walk.js'

/**
 * Entries the walk skips (FIFOs and devices, links leading outside, names
 * that are not UTF-8): counted by the last full scan for the status, and
 * each logged once while it stays skipped (a full scan starts the set anew).
 */
export class SkipLog {
  /** What the last full scan skipped, by reason (GET /api/watchers). */
  counts: Record<SkipReason, number> = { special: 0, outside: 0, unnamable: 0 }
  private logged = new Set<string>()
  private scan: Set<string> | undefined

  constructor (private readonly log: Logger) {}

  /** A full scan begins: what it logs (or finds logged) becomes the set. */
  beginScan (): void {
    this.scan = new Set()
  }

  /** The full scan walked the tree: its counts, and only its entries stay logged. */
  endScan (counts: Record<SkipReason, number>): void {
    this.counts = counts
    if (this.scan !== undefined) this.logged = this.scan
    this.scan = undefined
  }

  /** Logs a skipped entry once while it stays skipped. */
  skip (e: SkippedEntry): void {
    const key = `${e.reason}:${e.rel}`
    this.scan?.add(key)
    if (this.logged.has(key)) return
    this.logged.add(key)
    if (e.reason === 'special') this.log.warn('not a regular file: skipped, never opened', { path: e.rel, kind: e.detail })
    else if (e.reason === 'outside') this.log.warn('symlink leads outside the library: skipped, never read', { path: e.rel, target: e.detail })
    else this.log.warn('name is not valid UTF-8: skipped (no API answer could name it)', { path: e.rel, kind: e.detail })
  }
}
