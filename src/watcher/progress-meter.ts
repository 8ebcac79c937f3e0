import type { PendingWork } from './change-tracker.js'
import type { WatcherProgress } from './types.js'

/**
 * Figures for long work: files seen by the walk, files hashed and their
 * sizes, the bytes midhash256 read for them (at most 1 MiB a file),
 * throughput, and an estimate of the time left for the work found so far.
 * The estimate takes the slower of the byte rate and the file rate, so it
 * holds both for libraries of big videos (read-bound) and of many small
 * files (per-file-bound). Files hashed between scans (live changes) are
 * counted apart (`sinceScan`), so a scan's figures stay that scan's.
 */
export class ProgressMeter {
  private phase: WatcherProgress['phase'] = 'idle'
  private startedMs = 0
  private endedMs: number | undefined
  private startedAt: string | undefined
  private filesSeen = 0
  private filesHashed = 0
  private bytesHashed = 0
  private fileBytesHashed = 0
  private since = { filesHashed: 0, fileBytesHashed: 0 }

  begin (phase: Exclude<WatcherProgress['phase'], 'idle'>): void {
    this.phase = phase
    this.startedMs = performance.now()
    this.endedMs = undefined
    this.startedAt = new Date().toISOString()
    this.filesSeen = 0
    this.filesHashed = 0
    this.bytesHashed = 0
    this.fileBytesHashed = 0
    this.since = { filesHashed: 0, fileBytesHashed: 0 }
  }

  end (): void {
    this.phase = 'idle'
    this.endedMs = performance.now()
  }

  get running (): boolean {
    return this.phase !== 'idle'
  }

  seen (): void {
    this.filesSeen++
  }

  /** A file of `size` bytes was hashed, reading `sampleBytes` of it. */
  hashed (sampleBytes: number, size: number): void {
    if (!this.running) {
      this.since.filesHashed++
      this.since.fileBytesHashed += size
      return
    }
    this.filesHashed++
    this.bytesHashed += sampleBytes
    this.fileBytesHashed += size
  }

  snapshot (pending: PendingWork): WatcherProgress {
    const elapsed = Math.max(1e-3, ((this.endedMs ?? performance.now()) - this.startedMs) / 1000)
    const p: WatcherProgress = {
      phase: this.phase,
      filesSeen: this.filesSeen,
      filesHashed: this.filesHashed,
      bytesHashed: this.bytesHashed,
      fileBytesHashed: this.fileBytesHashed,
      sinceScan: { ...this.since },
      mbPerSecond: round2(this.bytesHashed / 1e6 / elapsed),
      filesPending: pending.files
    }
    if (this.startedAt !== undefined) p.startedAt = this.startedAt
    if (this.phase !== 'idle' && this.filesHashed > 0) {
      const byBytes = pending.bytes / (this.bytesHashed / elapsed || Infinity)
      const byFiles = pending.files / (this.filesHashed / elapsed)
      p.etaSeconds = Math.ceil(Math.max(byBytes, byFiles))
    }
    return p
  }
}

function round2 (x: number): number {
  return Math.round(x * 100) / 100
}

export function round1 (x: number): number {
  return Math.round(x * 10) / 10
}
