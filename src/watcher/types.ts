/**
 * The watcher's contract, shared with the API (which imports these types
 * only) and the node composition root (which creates the watcher).
 */
import type { Clock, Logger, Startable } from '../common/index.js'
import type { FullHashAlgorithm } from '../cid/index.js'
import type { FileRecords, LocalStore, RecordReads } from '../records/index.js'
import type { EventSourceStatus, FileEventSource } from './file-event-source.js'
import type { FileReads } from './file-reads.js'

/** The stream the watcher appends file events to (served by GET /api/events/files); named by the record layer, which serves it. */
export { FILE_EVENTS } from '../records/index.js'

/** What the watcher asks of the record layer: file operations, reads, and its node-local state rows and stream. */
export type WatcherRecords = FileRecords & RecordReads & { readonly local: LocalStore }

export interface WatcherComponents {
  records: WatcherRecords
  logger?: Logger
  /** Where live change hints come from; default: the OS (`createFsEventSource`) when enabled. */
  eventSource?: FileEventSource
  /** Time: settle windows, timers, timestamps (default `systemClock`); a test's virtual clock drives the windows. */
  clock?: Clock
  /** The settle re-stat and the hash (default `systemFileReads`); a test may hold a hash back. */
  reads?: FileReads
}

export interface WatcherInit {
  /** FILES_PATH: the library root (created if missing). */
  filesPath: string
  /** Watch for changes (ENABLE_FILE_WATCHER); when false, registerFile still works. */
  enabled?: boolean
  /** Periodic safety-net rescan (META_CORE_RESCAN_INTERVAL_MS, default 300 000). */
  rescanIntervalMs?: number
  /** A file is hashed once size and mtime held still this long (META_CORE_SETTLE_MS, default 2 000). */
  settleMs?: number
  /** Files hashed at once (META_CORE_HASH_CONCURRENCY, default 4). */
  hashConcurrency?: number
  /** This node's holder id for `holders/<id>` (its peer id in a mesh; else records.nodeId). */
  holderId?: string
  /** Named in `reset` events and the status (default `files`). */
  watcherId?: string
  /** How often a running scan logs its progress (default 5 000 ms). */
  progressIntervalMs?: number
  /**
   * Full-content CIDs computed in the background for every file recorded
   * (META_CORE_FULL_HASH: the node's default is both; unset here: none).
   */
  fullHash?: readonly FullHashAlgorithm[]
  /** The background full hash reads at most this many bytes per second (META_CORE_FULL_HASH_BYTES_PER_SECOND, default 64 MiB). */
  fullHashBytesPerSecond?: number
}

/**
 * The background full hash (full-hasher.ts), since the watcher started.
 * `state`: `off` (no algorithms), `idle` (every file's record carries its
 * CIDs), `checking` (records being checked for CIDs they carry already),
 * `hashing`, or `paused` (waiting while the watcher scans or midhashes).
 */
export interface FullHashStatus {
  algorithms: string[]
  state: 'off' | 'idle' | 'checking' | 'hashing' | 'paused'
  /** Files read whole and their CIDs recorded, and their bytes. */
  filesHashed: number
  bytesHashed: number
  /** Files not read: their record already carried the CIDs (a peer holding the same bytes computed them, or a client added them). */
  filesKnown: number
  /** Reads thrown away because the file changed meanwhile (it is read again once the watcher has recorded it). */
  filesChanged: number
  /** Files that could not be read (logged; tried again when they change). */
  filesFailed: number
  /** Files waiting (some may turn out to carry their CIDs already), the one being read included, and the bytes left of those known to need reading. */
  filesPending: number
  bytesPending: number
  /** Read rate while reading (pauses left out), MB/s. */
  mbPerSecond: number
  bytesPerSecondLimit: number
  /** At the rate so far (at the bound before the first read). */
  etaSeconds?: number
  /** The file being read. */
  current?: { path: string, size: number, bytesRead: number }
}

/** The current scan's figures, or the last one's while idle. */
export interface WatcherProgress {
  phase: 'idle' | 'initial-scan' | 'scan' | 'reset'
  /** Files the scan's walk found. */
  filesSeen: number
  /** Files the scan hashed (new or changed), their sizes, and the bytes midhash256 read of them (at most 1 MiB a file). */
  filesHashed: number
  fileBytesHashed: number
  bytesHashed: number
  /** Files hashed since the scan ended (live changes), and their sizes. */
  sinceScan: { filesHashed: number, fileBytesHashed: number }
  /** Midhash bytes read per second during the scan. */
  mbPerSecond: number
  /** Estimated seconds left in the current scan, when known. */
  etaSeconds?: number
  startedAt?: string
  /** Files found changed and not yet hashed (settling, queued or being hashed). */
  filesPending?: number
}

export interface WatcherStatus {
  /** The watcher id (`watcherId`). */
  id?: string
  filesPath: string
  enabled: boolean
  active: boolean
  isScanning: boolean
  fileCount: number
  lastScan?: string
  /** The last scan failed (FILES_PATH gone or unreadable): why and when; absent once a scan succeeds again. */
  lastError?: { message: string, at: string }
  progress: WatcherProgress
  /** The live event source; absent when the watcher is disabled. */
  events?: EventSourceStatus
  /**
   * Entries the last full scan found and skipped, each logged once: FIFOs,
   * sockets and devices (`special`), symlinks leading outside the library
   * (`outside`), names that are not valid UTF-8 (`unnamable`).
   */
  skipped: { special: number, outside: number, unnamable: number }
  /** The background full hash: files and bytes done, what waits, rate and time left. */
  fullHash: FullHashStatus
}

export interface ScanSummary {
  fileCount: number
  added: number
  changed: number
  deleted: number
  renamed: number
}

export interface RegisterResult {
  root: string
  cid: string
  created: boolean
  path: string
  size: number
}

export interface Watcher extends Startable {
  status: () => WatcherStatus
  /** A full differential scan now; resolves when it is done. */
  scan: () => Promise<ScanSummary>
  /** Clears file:events, appends a `reset` event, forgets state and rescans (every file re-emitted as `add`). */
  reset: () => Promise<ScanSummary>
  /** POST /api/files/register: hash a file under `plugin/` and record it (works with the watcher disabled). */
  registerFile: (relPath: string) => Promise<RegisterResult>
}

/** What `createWatcher` returns: the contract, plus a wait for tests, benchmarks and the composition root. */
export interface WatcherHandle extends Watcher {
  /** Resolves when no scan runs and no change is settling, hashing, pending or being written. */
  whenIdle: (opts: { timeoutMs: number }) => Promise<void>
}
