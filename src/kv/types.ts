import type Database from 'better-sqlite3'
import type { Logger } from '../common/index.js'
import type { EventId, EventIdParts } from './event-id.js'

/** Prepared statement type handed to derived-structure modules (search) so they need not import better-sqlite3. */
export type SqlStatement = Database.Statement

export interface KvOptions {
  /** Path of the SQLite file; parent folders are created. */
  path: string
  /** With path ':memory:': start from this database image (`KvStore.serialize()` of another store), copied. */
  image?: Buffer
  /** Entries kept per event stream (default 100 000, as the original's MAXLEN ~ 100000). */
  streamRetention?: number
  /** Trim a stream after this many appends (default 10 000). */
  trimEvery?: number
  /** Most write functions committed in one transaction (default 2 000): bounds the latency a batch adds. */
  maxBatch?: number
  /** SQLite page cache in KiB (default 32 MiB): the node's memory budget matters more than cache hits. */
  cacheKiB?: number
  logger?: Logger
  /** Checkpoint the WAL on a worker thread instead of inside commits (default true). */
  backgroundCheckpoint?: boolean
  /** The background checkpointer's sizes and pace (checkpointer.ts; the defaults suit a node). */
  checkpoint?: CheckpointTuning
  /** Wall clock in ms, injectable for tests of clock steps. */
  now?: () => number
  /**
   * Asked only when the file has no schema version yet, before it is
   * stamped: returns why the rows already there make the file unreadable
   * (an older program's store), or undefined to accept it. The layers above
   * know what their rows look like; kv does not.
   */
  checkUnversioned?: (r: KvReader) => string | undefined
}

export interface CheckpointTuning {
  /** Checkpoint once the WAL file is this large (default 16 MiB). */
  thresholdBytes?: number
  /** Start the WAL over once it holds this much since it last did (default 256 MiB). */
  restartBytes?: number
  /**
   * How long a start-over waits for the writer and the readers before it gives up (default 1,000 ms); the next try then waits twice as
   * long as the last (up to 30 s).
   */
  restartWaitMs?: number
  /** How often the worker looks at the WAL (default 250 ms). */
  intervalMs?: number
  /**
   * Once writes are quiet (less than a sixteenth of this over eight looks), a WAL file larger than this is cut back to nothing (default
   * 64 MiB): a node's usual writes reuse their file, a burst's growth is given back.
   */
  keepBytes?: number
}

/** Reads offered to the schema check before the store is usable. */
export interface KvReader {
  get: (k: string) => string | undefined
  /** True when some key lies in [lo, hi). */
  any: (lo: string, hi: string) => boolean
}

export interface StreamEntry {
  stream: string
  id: EventId
  fields: Record<string, string>
}

/**
 * The entries one append added to one stream, in order. Their ids share
 * `first`'s milliseconds and have consecutive sequence numbers from
 * `first.seq`. A bulk append is one run (two if its sequence numbers ran
 * out within the millisecond); `entriesOf` (streams.ts) lists the entries.
 */
export interface EntryRun {
  stream: string
  first: EventIdParts
  entries: ReadonlyArray<Record<string, string>>
}

/** What a write function sees: reads see its own writes. */
export interface Tx {
  get: (k: string) => string | undefined
  has: (k: string) => boolean
  /** Writes `v`; returns false (and writes nothing) when the key already holds `v`. */
  put: (k: string, v: string) => boolean
  /**
   * Many puts for a caller that already read each key's current value
   * (`old`, undefined when absent), e.g. with one range read for a whole
   * record: no point reads, unchanged rows skipped, the rest written with
   * multi-row statements (far fewer calls into SQLite than one put per row).
   * Returns how many rows changed. Elements after `old` are ignored (a
   * caller may hand over rows it keeps more in).
   */
  putMany: (rows: ReadonlyArray<readonly [k: string, v: string, old: string | undefined, ...rest: unknown[]]>) => number
  /** Deletes `k`; returns false when it did not exist. */
  delete: (k: string) => boolean
  range: (lo: string, hi: string, limit?: number) => Array<[string, string]>
  /** The rows under `prefix` as an object keyed by the rest of each key (one allocation per row, not three). */
  suffixes: (prefix: string) => Record<string, string>
  keys: (lo: string, hi: string, limit?: number) => string[]
  /** Appends an entry to an event stream; the entry is visible to listeners only after commit. */
  appendEvent: (stream: string, fields: Record<string, string>) => EventId
  /** Appends entries in order, one id each, packed in one row (the record layer's change log: the keys one write changed). */
  appendEvents: (stream: string, entries: ReadonlyArray<Record<string, string>>) => EventId[]
  /** Deletes every retained entry of a stream; ids keep increasing from the high-water mark. */
  clearStream: (stream: string) => void
  /** Adds `delta` to an integer counter key; applied once per commit, so hot counters cost one row write per batch. */
  addCounter: (k: string, delta: number) => void
  /** Runs after this write commits (never if it rolls back). */
  afterCommit: (fn: () => void) => void
}

/**
 * Hears each commit that appended stream entries, as runs in append order:
 * a listener that needs every entry lists them with `entriesOf`, one that
 * counts or follows a few streams pays only for what it reads.
 */
export type CommitListener = (runs: readonly EntryRun[]) => void

/** One group-commit transaction: how many write functions it ran, how many of them failed (rolled back), and how long it took. */
export interface BatchStats {
  writes: number
  failed: number
  durationMs: number
}

export type BatchListener = (batch: BatchStats) => void
