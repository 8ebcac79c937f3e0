import path from 'node:path'
import { AbortedError, delay, InvalidInputError, silentLogger, type Clock, type Logger } from '../common/index.js'
import {
  CODEC_DAG_PB, CODEC_RAW, contentCids, decodeCid, IPFS_CHUNK_BYTES, MH_SHA2_256, ShortReadError,
  type ContentCidOptions, type ContentCids, type FullHashAlgorithm
} from '../cid/index.js'
import type { FileEntry, FileState } from './file-state.js'
import { FullHashMeter } from './full-hash-meter.js'
import type { FileReads } from './file-reads.js'
import type { FullHashStatus, WatcherRecords } from './types.js'

/** How often a paused full hash looks whether the midhash work is over. */
const PAUSE_POLL_MS = 100
/** Records checked for CIDs they already carry per turn of the event loop (a boot checks every file). */
const CHECK_BATCH = 256
/** The read bound by default: a share of a disk's bandwidth that leaves playback and the watcher room. */
const DEFAULT_BYTES_PER_SECOND = 64 * 1_048_576

export interface FullHasherOptions {
  records: WatcherRecords
  state: FileState
  /** The real path of the library root (it may change between scans, hence a getter). */
  root: () => string
  algorithms: readonly FullHashAlgorithm[]
  /** Bytes read per second at most (default 64 MiB). */
  bytesPerSecond?: number
  /** The rate bound, pauses and progress lines. */
  clock: Clock
  /** The stat that checks a file is still what the watcher recorded. */
  reads: FileReads
  logger?: Logger
  /** The watcher's own work is under way (a scan walking, files queued for or being midhashed): reads wait. */
  busy: () => boolean
  /** How a file's CIDs are computed (default: contentCids). */
  hash?: (abs: string, opts: ContentCidOptions) => Promise<ContentCids>
  /** How often hashing logs its progress (ms). */
  progressMs: number
}

/**
 * The background full hash: after the watcher recorded a file (its midhash),
 * its full-content CIDs (`sha2-256` raw spelling, `ipfs` dag-pb) are
 * computed in one read and added to the record's `cids/` key-set through the
 * record layer's ordinary write (`mergeFlat`), so the record resolves by them
 * on every node.
 *
 * - Never in the watcher's way: one file at a time, at most `bytesPerSecond`,
 *   and every read waits while the watcher walks or midhashes (`busy`).
 * - Durable without rows of its own: what needs hashing is derived from the
 *   records (a file this node holds whose record lacks the CIDs), so a
 *   restart checks every known file again and goes on with those still
 *   lacking them; a file read half-way when the node stopped is read again.
 * - Content a record already carries CIDs for (computed by a peer holding
 *   the same bytes, or added by a client) is not read.
 * - Never a stale CID: the file's size and mtime on the open handle, before
 *   the first read and after the last, must be those the watcher recorded,
 *   the midhash of the bytes read must be the record's, and the watcher must
 *   still hold the file as that content when the write is queued. Otherwise
 *   nothing is written; the watcher records the change, and the new content
 *   (or the same content at a new mtime) comes back here.
 * - A file that cannot be read is logged once and skipped until it is
 *   recorded again.
 */
export class FullHasher {
  private readonly o: FullHasherOptions
  private readonly log: Logger
  private readonly hash: (abs: string, opts: ContentCidOptions) => Promise<ContentCids>
  /** Contents recorded here, not yet checked against their record (midhash → size). */
  private readonly unchecked = new Map<string, number>()
  /** Contents whose record lacks CIDs: to be read (midhash → size). */
  private readonly needed = new Map<string, number>()
  private neededBytes = 0
  private readonly meter: FullHashMeter
  private work: Promise<void> | undefined
  private controller = new AbortController()
  private running = false
  /** Monotonic ms before which the next read may not start (the rate bound). */
  private nextReadAt = 0

  private readonly rate: number

  constructor (opts: FullHasherOptions) {
    this.o = { ...opts, algorithms: [...new Set(opts.algorithms)] }
    this.rate = opts.bytesPerSecond ?? DEFAULT_BYTES_PER_SECOND
    if (!Number.isFinite(this.rate) || this.rate <= 0) throw new InvalidInputError('fullHashBytesPerSecond must be a positive number')
    this.log = opts.logger ?? silentLogger
    this.hash = opts.hash ?? contentCids
    this.meter = new FullHashMeter(this.o.algorithms, this.rate, () => opts.clock.monotonic())
  }

  get enabled (): boolean {
    return this.o.algorithms.length > 0
  }

  /** Starts (or starts again after stop): every file the watcher holds is checked, its record's CIDs first. */
  start (): void {
    if (!this.enabled || this.running) return
    this.running = true
    this.controller = new AbortController()
    this.knownFiles()
  }

  /** Every file the watcher holds now is checked (at start, and when its state is loaded later: a watcher that only registers files). */
  knownFiles (): void {
    for (const rel of this.o.state.paths()) {
      const e = this.o.state.get(rel)
      if (e !== undefined) this.recorded(e)
    }
  }

  /** The watcher recorded a file as holding `e.cid`: its record is checked for the CIDs when its turn comes. */
  recorded (e: FileEntry): void {
    if (!this.running || e.fresh || e.size < 0) return
    // Content being read now is queued again: if this read turns out stale, the next one is of what the watcher recorded.
    if (this.needed.has(e.cid) || this.unchecked.has(e.cid)) return
    this.unchecked.set(e.cid, e.size)
    this.kick()
  }

  status (): FullHashStatus {
    return this.meter.snapshot(this.enabled ? this.stateName() : 'off', this.unchecked.size + this.needed.size, this.neededBytes)
  }

  /** Aborts the read under way and waits for the loop to end. Idempotent. */
  async stop (): Promise<void> {
    this.running = false
    this.controller.abort()
    await this.work
    this.unchecked.clear()
    this.needed.clear()
    this.neededBytes = 0
  }

  private stateName (): FullHashStatus['state'] {
    if (this.meter.current !== undefined) return this.meter.paused ? 'paused' : 'hashing'
    if (this.unchecked.size === 0 && this.needed.size === 0) return 'idle'
    if (this.o.busy()) return 'paused'
    return this.unchecked.size > 0 ? 'checking' : 'hashing'
  }

  private kick (): void {
    if (this.work !== undefined || !this.running) return
    this.work = this.loop()
      // A bug here must not take the watcher down.
      .catch(err => { if (!(err instanceof AbortedError)) this.log.error('full hash stopped on an error', { err }) })
      .finally(() => {
        this.work = undefined
        if (this.running && (this.unchecked.size > 0 || this.needed.size > 0)) this.kick()
      })
  }

  private async loop (): Promise<void> {
    const signal = this.controller.signal
    let lastLog = this.o.clock.monotonic()
    while (this.running && (this.unchecked.size > 0 || this.needed.size > 0)) {
      if (this.o.busy()) {
        await delay(this.o.clock, PAUSE_POLL_MS, { signal })
        continue
      }
      if (this.unchecked.size > 0) {
        this.checkBatch()
        await delay(this.o.clock, 0, { signal }) // a boot's check of every file leaves the event loop free between batches
        continue
      }
      const [cid, size] = this.needed.entries().next().value as [string, number]
      this.needed.delete(cid)
      this.neededBytes -= size
      await this.one(cid, size, signal)
      const now = this.o.clock.monotonic()
      if (now - lastLog >= this.o.progressMs && this.needed.size > 0) {
        lastLog = now
        const s = this.status()
        this.log.info('full hash progress', { filesHashed: s.filesHashed, filesPending: s.filesPending, mbPerSecond: s.mbPerSecond, etaSeconds: s.etaSeconds })
      }
    }
    const s = this.meter.snapshot('idle', 0, 0)
    if (this.running && s.filesHashed > 0) {
      this.log.info('full hashes up to date', { filesHashed: s.filesHashed, filesKnown: s.filesKnown, bytesHashed: s.bytesHashed })
    }
  }

  /** Moves a batch of unchecked contents to `needed`, or drops them when their record carries the CIDs already (or is gone). */
  private checkBatch (): void {
    let n = 0
    for (const [cid, size] of this.unchecked) {
      if (n++ >= CHECK_BATCH) break
      this.unchecked.delete(cid)
      const missing = this.missing(cid, size)
      if (missing === undefined) continue
      if (missing.length === 0) {
        this.meter.known()
      } else if (!this.needed.has(cid)) {
        this.needed.set(cid, size)
        this.neededBytes += size
      }
    }
  }

  /** The algorithms whose CID the record of `cid` lacks; undefined when no record holds `cid`. */
  private missing (cid: string, size: number): FullHashAlgorithm[] | undefined {
    const flat = this.o.records.getFlat(cid)
    if (flat === undefined) return undefined
    let sha = false
    let ipfs = false
    for (const k of Object.keys(flat)) {
      if (!k.startsWith('cids/')) continue
      const d = decodeCid(k.slice(5))
      if (d === undefined) continue
      if (d.codec === CODEC_RAW && d.mhCode === MH_SHA2_256) sha = true
      else if (d.codec === CODEC_DAG_PB) ipfs = true
    }
    // A file of one leaf or less: its IPFS CID is its raw sha2-256 CID.
    if (sha && size <= IPFS_CHUNK_BYTES) ipfs = true
    return this.o.algorithms.filter(a => a === 'sha2-256' ? !sha : !ipfs)
  }

  /** The path the watcher holds `cid` at, confirmed (size and mtime known), with its entry. */
  private localCopy (cid: string): [string, FileEntry] | undefined {
    for (const rel of this.o.state.pathsOf(cid)) {
      const e = this.o.state.get(rel)
      if (e !== undefined && !e.fresh && e.size >= 0 && e.cid === cid) return [rel, e]
    }
    return undefined
  }

  private async one (cid: string, size: number, signal: AbortSignal): Promise<void> {
    const missing = this.missing(cid, size)
    if (missing === undefined) return
    if (missing.length === 0) { this.meter.known(); return }
    const copy = this.localCopy(cid)
    if (copy === undefined) return // no copy here now: one recorded later comes back through recorded()
    const [rel, entry] = copy
    const st = await this.o.reads.stat(this.o.root(), rel)
    if (st === null || st.size !== entry.size || String(st.mtimeNs) !== entry.mtimeNs) return // changing: the watcher records it first
    const abs = st.real ?? path.join(this.o.root(), rel)
    this.meter.begin(rel, entry.size)
    let r: ContentCids
    try {
      r = await this.hash(abs, {
        size: entry.size,
        algorithms: missing,
        signal,
        noFollow: true,
        gate: async (bytes) => { await this.gate(bytes, signal) },
        onRead: (bytes) => { this.meter.read(bytes) }
      })
    } catch (err) {
      this.meter.end()
      if (err instanceof AbortedError || signal.aborted) throw new AbortedError('watcher stopped', { cause: err })
      const code = (err as NodeJS.ErrnoException).code
      if (err instanceof ShortReadError || code === 'ENOENT' || code === 'ENOTDIR') {
        this.meter.changed() // shrunk or gone while read: the watcher records what is there now
        return
      }
      this.meter.failed()
      this.log.warn('full hash: file unreadable, skipped until it changes', { path: rel, err })
      return
    }
    this.meter.end()
    const same = (s: { size: number, mtimeNs: bigint }): boolean => s.size === entry.size && String(s.mtimeNs) === entry.mtimeNs
    const now = this.o.state.get(rel)
    if (!same(r.before) || !same(r.after) || r.midhash !== cid || now?.cid !== cid || now.fresh || now.mtimeNs !== entry.mtimeNs || now.size !== entry.size) {
      this.meter.changed()
      this.log.debug('full hash: the file changed while it was read, nothing recorded', { path: rel })
      return
    }
    // Checked and queued in one turn: the record holds this content now (it may go before the write commits:
    // the write then lands on a root that is no record, and nothing resolves by it).
    const rid = this.o.records.resolveRoot(cid)
    const still = this.missing(cid, size)
    if (rid === undefined || still === undefined || still.length === 0) return
    const fields: Record<string, string> = {}
    for (const a of still) {
      const c = a === 'sha2-256' ? r.sha256 : r.ipfs
      if (c !== undefined) fields[`cids/${c}`] = 'true'
    }
    await this.o.records.mergeFlat(rid, fields)
    this.meter.recorded(entry.size)
    this.log.debug('full hash recorded', { path: rel, cids: Object.keys(fields).map(f => f.slice(5)) })
  }

  /** Before each read: wait while the watcher works, then for the rate bound. */
  private async gate (bytes: number, signal: AbortSignal): Promise<void> {
    if (this.o.busy()) {
      this.meter.pause(true)
      while (this.o.busy()) await delay(this.o.clock, PAUSE_POLL_MS, { signal })
      this.meter.pause(false)
    }
    const now = this.o.clock.monotonic()
    const start = Math.max(now, this.nextReadAt)
    this.nextReadAt = start + (bytes / this.rate) * 1000
    if (start > now) await delay(this.o.clock, start - now, { signal })
  }
}
