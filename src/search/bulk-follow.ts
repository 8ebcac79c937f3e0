/**
 * Records arriving in bulk (a join's full resync, through the store's bulk
 * path): their roots are not staged, so the index is not trusted until the
 * rebuild following them has ended. The rebuild is built behind the records
 * as they arrive, in key order on the index writer's thread (merge-plan.ts
 * `follow`); once it has caught up with them it steps again
 * `FOLLOW_WAIT_MS` after more arrive. When the bulk ends the rebuild stops
 * following and finishes; records that arrived out of key order, or a bulk
 * ending with no rebuild under way, start a rebuild over.
 */
import type { Clock, Logger } from '../common/index.js'
import type { Maintenance } from './merge-plan.js'

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
  private timer: (() => void) | undefined

  constructor (private readonly h: BulkFollowHost) {}

  /** Records arrived in bulk (PendingRoots.onBulk). */
  arrived (): void {
    const h = this.h
    if (h.stopped()) return
    if (this.active) {
      this.wake()
      return
    }
    this.active = true
    const m = h.maintenance()
    // The index is built as the records arrive, following them in key order on the writer's thread.
    if (m.phase === 'rebuild') h.setMaintenance({ ...m, follow: true })
    else h.startRebuild('records arriving in bulk', true)
    h.log.info('search: records arriving in bulk; the index is built behind them, and searches read every record until it is complete')
  }

  /** The bulk ended (PendingRoots.onBulkEnded); `ordered`: every record arrived in key order. */
  ended (ordered: boolean): void {
    const h = this.h
    if (!this.active || h.stopped()) return
    this.active = false
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

  /** A rebuild starts over: an end of the bulk pending for the one before no longer applies. */
  rebuildStarted (): void {
    this.endPending = false
  }

  /** The phase after a rebuild step answered, with the end of the bulk taken in if it came meanwhile. */
  afterRebuildStep (after: Maintenance): Maintenance {
    if (!this.endPending) return after
    this.endPending = false
    return after.phase === 'rebuild' ? { ...after, follow: false, caughtUp: false } : after
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
    })
  }
}
