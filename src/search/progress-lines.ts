/**
 * The merger's progress lines: while a backlog, a rebuild or a renumbering
 * round lasts, one every `everyMs` (`search: backlog in progress
 * pending=… mergedPerSecond=…`), and one when work that lasted long enough
 * to report ends (`search: backlog merged`; a renumbering round logs its
 * own end). Times come from the merger's clock.
 */
import type { Logger } from '../common/index.js'

/** The work under way and what its line says; a backlog's line also gets its merge rate. */
export type Progress =
  | { what: 'rebuild', done: number, total: number, pending: number }
  | { what: 'backlog', pending: number }
  | { what: 'renumbering', moved: number, most: number, span: number, docs: number }

export class ProgressLines {
  private run: { since: number, last: number, merged: number, what: Progress['what'] } | undefined

  constructor (private readonly log: Logger, private readonly everyMs: number) {}

  /** After each job: `merged` is the roots merged from staged rows so far; `p` undefined when no such work is under way. */
  report (now: number, merged: number, p: Progress | undefined): void {
    const what = p?.what
    const run = this.run
    if (run !== undefined && run.what !== what) {
      if (run.last > run.since && run.what !== 'renumbering') this.log.info(`search: ${run.what} merged`, { elapsedMs: now - run.since })
      this.run = undefined
    }
    if (p === undefined) return
    if (this.run === undefined) {
      this.run = { since: now, last: now, merged, what: p.what }
      return
    }
    const r = this.run
    if (now - r.last < this.everyMs) return
    const { what: _what, ...fields } = p
    const rate = p.what === 'backlog' ? { mergedPerSecond: Math.round((merged - r.merged) * 1000 / Math.max(1, now - r.last)) } : {}
    this.log.info(`search: ${p.what} in progress`, { ...fields, ...rate, elapsedMs: now - r.since })
    r.last = now
    r.merged = merged
  }
}
