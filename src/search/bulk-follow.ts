/**
 * Records arriving in bulk (a join's full resync, through the store's bulk
 * path): their roots are not staged, so the index is not trusted until the
 * rebuild following them has ended. The rebuild is built behind the records
 * as they arrive, in key order on the index writer's thread (merge-plan.ts
 * `follow`); once it has caught up with them it steps again
 * `FOLLOW_WAIT_MS` after more arrive. When the bulk ends the rebuild stops
 * following and finishes; records that arrived out of key order, or a bulk
 * ending with no rebuild under way, start a rebuild over.
 *
 * While it follows, a step goes no further than the last root the bulk has
 * committed (`upTo`). Other writes land between the bulk's transactions (a
 * busy peer's gossip): their roots are staged and indexed by batches, and
 * may lie anywhere, far ahead of the bulk's (new records) or just past a
 * transaction's last root (before the root a page holds back); a step that
 * took them would move the rebuild's position past roots the bulk has not
 * brought yet, and those would never be indexed. Records arriving behind
 * the position (a join resumed after a restart, whose rebuild at open went
 * on ahead; pages out of key order) take it back (merge-plan.ts
 * `phaseOnBulk`), also when a step in flight answers with a position past
 * them.
 */
import type { Clock, Logger } from '../common/index.js'
import { phaseOnBulk, type Maintenance } from './merge-plan.js'

/** A rebuild following records arriving in bulk that has caught up with them steps again this long after more arrive (ms): steps of a few pages, not of one. */
const FOLLOW_WAIT_MS = 500

/** What the merger lends: its clock and log, its long job (merge-plan.ts) to read and replace, and its controls. */
interface BulkFollowHost {
  clock: Clock
  log: Logger
  maintenance: () => Maintenance
  setMaintenance: (m: Maintenance) => void
  startRebuild: (reason: string, follow: boolean) => void
  /** A rebuild step is at the index writer, not yet answered. */
  rebuildInFlight: () => boolean
  schedule: () => void
  stopped: () => boolean
}

export class BulkFollow {
  /** Records are arriving in bulk (a join): the index is not trusted until the rebuild following them ends. */
  active = false
  /** The bulk ended while a rebuild step was in flight: the rebuild stops following once that step has answered. */
  private endPending = false
  /** The last root the bulk has committed (the greatest): a step following it goes no further. */
  private frontier: string | undefined
  /** The first root of transactions committed while a rebuild step was in flight (the smallest): applied to the step's answer. */
  private backTo: string | undefined
  /** The rebuild went back while a step was in flight: that step's "none left" does not hold for the roots it went back to. */
  private wentBack = false
  private timer: (() => void) | undefined

  constructor (private readonly h: BulkFollowHost) {}

  /** How far a step of the rebuild may go now: the bulk's last root while it follows the bulk, else undefined (to the end). */
  get upTo (): string | undefined {
    const m = this.h.maintenance()
    return m.phase === 'rebuild' && m.follow === true ? this.frontier : undefined
  }

  /** Records arrived in bulk (PendingRoots.onBulk), the transaction's roots from `first` to `last`. */
  arrived (first: string, last: string): void {
    const h = this.h
    if (h.stopped()) return
    if (this.active) {
      if (last > (this.frontier ?? '')) this.frontier = last
      if (this.back(first)) h.schedule()
      else this.wake()
      return
    }
    this.active = true
    this.frontier = last
    const m = h.maintenance()
    // The index is built as the records arrive, following them in key order on the writer's thread.
    if (m.phase === 'rebuild') {
      h.setMaintenance({ ...m, follow: true })
      this.back(first)
    } else {
      h.startRebuild('records arriving in bulk', true)
    }
    h.log.info('search: records arriving in bulk; the index is built behind them, and searches read every record until it is complete')
  }

  /** The rebuild steps back before `first` if its position is past it (now, and again when the step in flight answers); true if it did now. */
  private back (first: string): boolean {
    const h = this.h
    const inFlight = h.rebuildInFlight()
    if (inFlight && (this.backTo === undefined || first < this.backTo)) this.backTo = first
    const m = h.maintenance()
    const n = phaseOnBulk(m, first)
    if (n === m) return false
    h.setMaintenance(n)
    if (inFlight) this.wentBack = true
    return true
  }

  /** The bulk ended (PendingRoots.onBulkEnded); `ordered`: every record arrived in key order. */
  ended (ordered: boolean): void {
    const h = this.h
    if (!this.active || h.stopped()) return
    this.active = false
    this.frontier = undefined
    const m = h.maintenance()
    // Records that arrived behind the rebuild's position (not in key order) are not behind it: start over.
    if (!ordered || m.phase !== 'rebuild') { h.startRebuild('records arrived in bulk', false); return }
    if (h.rebuildInFlight()) {
      // That step may have read the rows before the last page: its "none left" must not end the rebuild.
      this.endPending = true
      return
    }
    h.setMaintenance({ ...m, follow: false, caughtUp: false })
    h.schedule()
  }

  /** A rebuild starts over: an end of the bulk pending for the one before no longer applies, nor a step back. */
  rebuildStarted (): void {
    this.endPending = false
    this.backTo = undefined
    this.wentBack = false
  }

  /** The phase after a rebuild step answered, with what came meanwhile taken in: records behind its position, the end of the bulk. */
  afterRebuildStep (after: Maintenance): Maintenance {
    let m = after
    if (this.backTo !== undefined) {
      const n = phaseOnBulk(m, this.backTo)
      m = this.wentBack && n.phase === 'rebuild' ? { ...n, caughtUp: false } : n
      this.backTo = undefined
      this.wentBack = false
    }
    if (!this.endPending) return m
    this.endPending = false
    return m.phase === 'rebuild' ? { ...m, follow: false, caughtUp: false } : m
  }

  stop (): void {
    this.timer?.()
    this.timer = undefined
  }

  /** A rebuild following the bulk that had caught up: it goes on once a little more has arrived. */
  private wake (): void {
    const h = this.h
    const m = h.maintenance()
    if (m.phase !== 'rebuild' || m.caughtUp !== true || this.timer !== undefined) return
    this.timer = h.clock.schedule(FOLLOW_WAIT_MS, () => {
      this.timer = undefined
      const n = h.maintenance()
      if (n.phase !== 'rebuild' || n.caughtUp !== true || h.stopped()) return
      h.setMaintenance({ ...n, caughtUp: false })
      h.schedule()
    }, { keepAlive: true }) // the rebuild's next step: index work on its way
  }
}
