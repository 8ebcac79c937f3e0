import type { FullHashAlgorithm } from '../cid/index.js'
import type { FullHashStatus } from './types.js'

/**
 * The background full hash's figures since the watcher started: files and
 * bytes hashed, files whose record already carried the CIDs, the file being
 * read, the read rate (bytes over the time spent reading, pauses left out)
 * and the time left for what waits at that rate (at the bound before the
 * first read).
 */
export class FullHashMeter {
  private filesHashed = 0
  private bytesHashed = 0
  private filesKnown = 0
  private filesChanged = 0
  private filesFailed = 0
  /** Bytes read, recorded or not (the rate's numerator). */
  private bytesRead = 0
  /** Monotonic ms spent reading, pauses left out, finished reads only; `since` holds the running stretch. */
  private readMs = 0
  private since: number | undefined
  private file: { rel: string, size: number, read: number } | undefined
  private isPaused = false

  constructor (private readonly algorithms: readonly FullHashAlgorithm[], private readonly limit: number, private readonly now: () => number) {}

  get current (): string | undefined {
    return this.file?.rel
  }

  get paused (): boolean {
    return this.isPaused
  }

  begin (rel: string, size: number): void {
    this.file = { rel, size, read: 0 }
    this.since = this.now()
  }

  read (bytes: number): void {
    this.bytesRead += bytes
    if (this.file !== undefined) this.file.read += bytes
  }

  pause (on: boolean): void {
    if (on === this.isPaused) return
    this.isPaused = on
    if (on) this.stretchEnds()
    else this.since = this.now()
  }

  end (): void {
    this.stretchEnds()
    this.isPaused = false
    this.file = undefined
  }

  recorded (size: number): void {
    this.filesHashed++
    this.bytesHashed += size
  }

  known (): void { this.filesKnown++ }
  changed (): void { this.filesChanged++ }
  failed (): void { this.filesFailed++ }

  snapshot (state: FullHashStatus['state'], filesPending: number, bytesPending: number): FullHashStatus {
    const ms = this.readMs + (this.since === undefined ? 0 : this.now() - this.since)
    const rate = ms > 0 && this.bytesRead > 0 ? this.bytesRead / (ms / 1000) : undefined
    const left = bytesPending + (this.file === undefined ? 0 : this.file.size - this.file.read)
    const s: FullHashStatus = {
      algorithms: [...this.algorithms],
      state,
      filesHashed: this.filesHashed,
      bytesHashed: this.bytesHashed,
      filesKnown: this.filesKnown,
      filesChanged: this.filesChanged,
      filesFailed: this.filesFailed,
      filesPending: filesPending + (this.file === undefined ? 0 : 1),
      bytesPending: left,
      mbPerSecond: rate === undefined ? 0 : Math.round(rate / 1e4) / 100,
      bytesPerSecondLimit: this.limit
    }
    if (left > 0 && state !== 'off') s.etaSeconds = Math.ceil(left / Math.min(rate ?? this.limit, this.limit))
    if (this.file !== undefined) s.current = { path: this.file.rel, size: this.file.size, bytesRead: this.file.read }
    return s
  }

  private stretchEnds (): void {
    if (this.since === undefined) return
    this.readMs += this.now() - this.since
    this.since = undefined
  }
}
