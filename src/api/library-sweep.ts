/**
 * The figures of `/api/stats` and `/api/kv/info` that no counter keeps (the
 * number of `file:` keys, file-backed records and their total size), taken
 * by a background sweep over the roots in small pages, so a request never
 * scans: it answers with the last sweep's figures and, when they are older
 * than the TTL, starts the next sweep (single flight), as the original's
 * stats endpoint did.
 */
import type { Clock, Logger } from '../common/index.js'
import type { RecordId, RecordReads } from '../records/index.js'

interface SweepFigures {
  /** Keys under `file:` (every field of every root). */
  fileKeys: number
  /** Live roots that carry filePath, sizeByte and mtimeNano. */
  fileCount: number
  /** Sum of their sizeByte, as a decimal string (exact beyond 2^53). */
  totalSize: string
  /** When the sweep finished (ms since epoch). */
  sweptAt: number
  /** How long it took (ms). */
  tookMs: number
}

/** Roots per step: one step is a few ms of synchronous reads, then the event loop runs. */
const PAGE = 500

export class LibrarySweep {
  private last: SweepFigures | undefined
  private running = false
  private stopped = false

  constructor (private readonly records: RecordReads, private readonly ttlMs: number, private readonly log: Logger, private readonly clock: Clock) {}

  get sweeping (): boolean {
    return this.running
  }

  /** The last figures (undefined before the first sweep ends); starts a sweep if they are stale. */
  figures (): SweepFigures | undefined {
    if (this.last === undefined || this.clock.now() - this.last.sweptAt > this.ttlMs) this.refresh()
    return this.last
  }

  /** Starts a sweep unless one is running. */
  refresh (): void {
    if (this.running || this.stopped) return
    this.running = true
    this.run().catch((err: unknown) => {
      // Figures stay as they were: the next request retries. A closed store on shutdown lands here too.
      if (!this.stopped) this.log.warn('stats sweep failed', { err })
    }).finally(() => { this.running = false })
  }

  stop (): void {
    this.stopped = true
  }

  private async run (): Promise<void> {
    const t0 = this.clock.monotonic()
    let fileKeys = 0
    let fileCount = 0
    let totalSize = 0n
    let after: RecordId | undefined
    for (;;) {
      if (this.stopped || !this.records.available()) return
      const page = this.records.libraryPage(after, PAGE)
      fileKeys += page.fieldKeys
      fileCount += page.fileCount
      totalSize += page.totalSize
      if (page.next === undefined) break
      after = page.next
      await new Promise<void>(resolve => setImmediate(resolve))
    }
    this.last = { fileKeys, fileCount, totalSize: totalSize.toString(), sweptAt: this.clock.now(), tookMs: this.clock.monotonic() - t0 }
  }
}
