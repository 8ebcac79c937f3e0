/**
 * The watcher's contract, shared with the API (which imports these types
 * only) and the node composition root (which creates the watcher).
 */
import type { Logger, Startable } from '../common/index.js'
import type { KvStore } from '../kv/index.js'
import type { RecordStore } from '../records/index.js'

/** The stream the watcher appends file events to (served by GET /api/events/files). */
export const FILE_EVENTS = 'file:events'

export interface WatcherComponents {
  kv: KvStore
  records: RecordStore
  logger?: Logger
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
}

export interface WatcherProgress {
  phase: 'idle' | 'initial-scan' | 'scan' | 'reset'
  filesSeen: number
  filesHashed: number
  bytesHashed: number
  mbPerSecond: number
  /** Estimated seconds left in the current scan, when known. */
  etaSeconds?: number
  startedAt?: string
}

export interface WatcherStatus {
  filesPath: string
  enabled: boolean
  active: boolean
  isScanning: boolean
  fileCount: number
  lastScan?: string
  progress: WatcherProgress
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
