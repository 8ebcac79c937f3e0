/**
 * The connection: opens the one `kv(k, v)` table (pragmas, DDL, schema
 * gate, background checkpoints), serves reads, and hands writes to the
 * group-commit writer and stream work to the streams.
 *
 * Guarantees:
 * - Writes issued in the same turn of the event loop share one transaction;
 *   one that throws rolls back alone and only its caller sees the error (the
 *   batch runs again, each write under its own SAVEPOINT: a write function
 *   may run twice, group-commit.ts). A write's promise settles after COMMIT.
 * - Event streams are rows written in the same transaction as the change
 *   they describe; what a stream's entries mean is its writer's business.
 * - Reads (on this same connection, between transactions) see exactly the
 *   committed state: transactions run synchronously, so nothing can observe
 *   one half done.
 * - WAL with synchronous=NORMAL: a killed process loses nothing it
 *   acknowledged (only an OS crash may lose the last commits).
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { silentLogger, type Logger } from '../common/index.js'
import { Checkpointer, DEFAULT_KEEP_BYTES } from './checkpointer.js'
import { KvClosedError, StorageError } from './errors.js'
import type { EventId, EventIdParts } from './event-id.js'
import { GroupCommit } from './group-commit.js'
import { prefixEnd } from './keys.js'
import { checkSchema } from './schema-gate.js'
import { refuseForeignFile, StoreLock } from './store-guard.js'
import { prepareStatements, readSuffixes, RowWriter, type Statements } from './statements.js'
import { Streams } from './streams.js'
import type { BatchListener, CommitListener, KvOptions, SqlStatement, StreamEntry, Tx } from './types.js'

export class KvStore {
  readonly path: string
  private readonly db: Database.Database
  private readonly log: Logger
  private closed = false
  private readonly st: Statements
  private readonly streams: Streams
  private readonly writer: GroupCommit
  private checkpointer: Checkpointer | undefined
  /** This process's exclusive hold on the store file (none for ':memory:'). */
  private readonly lock: StoreLock | undefined
  private readonly closing: Array<() => void> = []

  constructor (opts: KvOptions) {
    this.path = opts.path
    this.log = opts.logger ?? silentLogger
    if (opts.path !== ':memory:') {
      fs.mkdirSync(path.dirname(path.resolve(opts.path)), { recursive: true })
      // Before anything writes (store-guard.ts): another application's database is refused untouched, and a
      // store another process holds is refused with its owner named.
      refuseForeignFile(opts.path)
      this.lock = StoreLock.acquire(path.resolve(opts.path))
    }
    try {
      if (opts.image !== undefined && opts.path !== ':memory:') throw new Error('an image opens only as an in-memory store')
      this.db = opts.image !== undefined ? new Database(opts.image) : new Database(opts.path)
    } catch (err) {
      this.lock?.release()
      throw new StorageError(`cannot open store file ${opts.path}: ${(err as Error).message}`, { cause: err })
    }
    try {
      this.db.pragma('journal_mode = WAL')
      this.db.pragma('synchronous = NORMAL')
      this.db.pragma('busy_timeout = 5000')
      this.db.pragma('temp_store = MEMORY')
      this.db.pragma(`cache_size = -${opts.cacheKiB ?? 32_768}`)
      this.db.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID')
    } catch (err) {
      this.db.close()
      this.lock?.release()
      throw new StorageError(`cannot initialise store file ${opts.path}: ${(err as Error).message}`, { cause: err })
    }
    this.st = prepareStatements(this.db)
    const rows = new RowWriter(this.db)
    this.streams = new Streams(this.st, rows, {
      retention: opts.streamRetention ?? 100_000,
      trimEvery: opts.trimEvery ?? 10_000,
      now: opts.now ?? Date.now
    })
    this.writer = new GroupCommit({
      st: this.st,
      rows,
      streams: this.streams,
      log: this.log,
      maxBatch: opts.maxBatch ?? 2_000,
      isClosed: () => this.closed,
      holdWrites: () => this.checkpointer?.holdsWrites() === true
    })
    try {
      checkSchema(this.st, this.path, opts.checkUnversioned)
    } catch (err) {
      this.db.close()
      this.lock?.release()
      throw err
    }
    if (opts.path !== ':memory:' && opts.backgroundCheckpoint !== false) {
      // No journal_size_limit: the checkpointer gives a burst's growth back once writes are quiet, not in a commit (checkpointer.ts).
      this.db.pragma('wal_autocheckpoint = 0')
      this.checkpointer = new Checkpointer({
        ...opts.checkpoint,
        path: path.resolve(opts.path),
        logger: this.log,
        now: opts.now ?? Date.now,
        onFailure: () => {
          this.checkpointer = undefined
          if (this.closed) return
          this.db.pragma('wal_autocheckpoint = 1000')
          this.db.pragma(`journal_size_limit = ${opts.checkpoint?.keepBytes ?? DEFAULT_KEEP_BYTES}`)
        }
      })
    }
  }

  /**
   * The flags a start-over of the WAL shares (checkpointer.ts, wal-hold.ts),
   * for a reader of this store on another thread: its transactions wait
   * while a start-over holds readers off, and count themselves in so that a
   * start-over waits for them before it holds writers
   * (SideFileOptions.storeHold). Undefined without a background checkpointer.
   */
  walHold (): SharedArrayBuffer | undefined {
    return this.checkpointer?.holdBuffer
  }

  // ---------------------------------------------------------------- reads

  get (k: string): string | undefined {
    this.assertOpen()
    return this.st.get.get(k) as string | undefined
  }

  has (k: string): boolean {
    return this.get(k) !== undefined
  }

  /** Rows with lo <= k < hi in key order. */
  range (lo: string, hi: string, limit?: number): Array<[string, string]> {
    this.assertOpen()
    return (limit === undefined ? this.st.range.all(lo, hi) : this.st.rangeLimit.all(lo, hi, limit)) as Array<[string, string]>
  }

  /** Lazily iterates rows with lo <= k < hi in key order (no writes may run while iterating). */
  * iterate (lo: string, hi: string): IterableIterator<[string, string]> {
    this.assertOpen()
    yield * (this.st.range.iterate(lo, hi) as IterableIterator<[string, string]>)
  }

  /** The rows under `prefix` as an object keyed by the rest of each key. */
  suffixes (prefix: string): Record<string, string> {
    this.assertOpen()
    return readSuffixes(this.st, prefix, prefixEnd(prefix))
  }

  /**
   * The rows under `prefix` as a JSON object text keyed by the rest of each
   * key, built by SQLite: for a reply that is JSON anyway this skips making a
   * JS string per key and value (about half the cost of a record read).
   */
  jsonObject (prefix: string): string {
    this.assertOpen()
    return this.st.jsonRange.get(prefix.length + 1, prefix, prefixEnd(prefix)) as string
  }

  keys (lo: string, hi: string, limit?: number): string[] {
    this.assertOpen()
    return (limit === undefined ? this.st.keys.all(lo, hi) : this.st.keysLimit.all(lo, hi, limit)) as string[]
  }

  prefix (p: string, limit?: number): Array<[string, string]> {
    return this.range(p, prefixEnd(p), limit)
  }

  count (lo: string, hi: string): number {
    this.assertOpen()
    return this.st.count.get(lo, hi) as number
  }

  /**
   * Runs synchronous reads inside one read transaction: one snapshot, and
   * one WAL read lock instead of one per statement (outside a transaction
   * each statement takes and drops its own, which costs several times a
   * primary-key lookup). Inside a write function it simply runs `fn`.
   */
  read<T> (fn: () => T): T {
    this.assertOpen()
    if (this.db.inTransaction) return fn()
    this.st.beginRead.run()
    try {
      return fn()
    } finally {
      // A read-only transaction cannot fail to commit; this releases the snapshot.
      this.st.commit.run()
    }
  }

  /** True inside a write or read transaction on this connection. */
  get inTransaction (): boolean {
    return this.db.inTransaction
  }

  /** Throws KvClosedError once the store is closed (for callers holding prepared statements). */
  checkOpen (): void {
    this.assertOpen()
  }

  /** Prepares a statement on the store's connection, for derived structures (search) that need SQL of their own. */
  prepare (sql: string): SqlStatement {
    this.assertOpen()
    return this.db.prepare(sql)
  }

  /** Runs DDL on the store's connection (derived structures create their tables and indexes this way). */
  exec (sql: string): void {
    this.assertOpen()
    this.db.exec(sql)
  }

  /** `PRAGMA integrity_check`: "ok" or the problems SQLite reports. */
  integrityCheck (): string {
    this.assertOpen()
    const rows = this.db.pragma('integrity_check') as Array<{ integrity_check: string }>
    return rows.map(r => r.integrity_check).join('\n')
  }

  // ---------------------------------------------------------------- writes

  /**
   * Queues a synchronous write function; it runs inside the next group
   * transaction. Resolves with its return value after COMMIT, or rejects with
   * what it threw (only it is rolled back). It may run twice when another
   * write of its batch throws, so anything it does outside the transaction
   * belongs in an after-commit hook (group-commit.ts).
   */
  async write<T> (fn: (tx: Tx) => T): Promise<T> {
    return await this.writer.write(fn)
  }

  /**
   * Runs a write function in its own transaction now, synchronously (boot-time
   * work, tests). Fails if a group transaction is running.
   */
  writeSync<T> (fn: (tx: Tx) => T): T {
    this.assertOpen()
    return this.writer.writeSync(fn)
  }

  /** Listeners hear every committed batch's stream entries, in order, after COMMIT (as runs: `entriesOf` lists them). */
  onCommit (listener: CommitListener): () => void {
    return this.writer.onCommit(listener)
  }

  /** Listeners hear the figures of every group-commit transaction (committed or not), after it ends. */
  onBatch (listener: BatchListener): () => void {
    return this.writer.onBatch(listener)
  }

  // ---------------------------------------------------------------- streams

  /** The last id issued on a stream (its head), or undefined if it never had an entry. */
  streamHead (stream: string): EventId | undefined {
    this.assertOpen()
    return this.streams.head(stream)
  }

  /** The oldest retained id of a stream, or undefined when nothing is retained. */
  streamFirst (stream: string): EventId | undefined {
    this.assertOpen()
    return this.streams.first(stream)
  }

  /**
   * The newest id a trim or a clear removed from the stream, or undefined
   * when it never lost an entry: a reader whose cursor is older missed entries.
   */
  streamTrimmedThrough (stream: string): EventId | undefined {
    this.assertOpen()
    return this.streams.trimmedThrough(stream)
  }

  /** Retained entries strictly after `after` (or from the start), in id order. */
  readStream (stream: string, after: EventIdParts | undefined, limit: number): StreamEntry[] {
    this.assertOpen()
    return this.streams.read(stream, after, limit)
  }

  streamLength (stream: string): number {
    this.assertOpen()
    return this.streams.length(stream)
  }

  // ---------------------------------------------------------------- lifecycle

  get isClosed (): boolean {
    return this.closed
  }

  /** Times queued writes were put off while a start-over of the WAL held writers back (checkpointer.ts), since open. */
  get writesHeldPolls (): number {
    return this.writer.heldPolls
  }

  /** The whole database as one image (SQLite's serialization), after committing what is queued: `image` opens a copy. */
  serialize (): Buffer {
    this.writer.drain()
    return this.db.serialize()
  }

  /**
   * Runs `fn` when the store closes, after what is queued has committed and
   * before anything else is refused: a layer's last write of state it keeps
   * in memory (`writeSync`). A failing one is logged; the others still run.
   */
  beforeClose (fn: () => void): void {
    this.closing.push(fn)
  }

  /** Commits what is queued, runs the `beforeClose` hooks, then closes the file. Idempotent. */
  close (): void {
    if (this.closed) return
    this.writer.drain()
    for (const fn of this.closing.splice(0)) {
      try {
        fn()
      } catch (err) {
        this.log.warn('a close hook failed', { err })
      }
    }
    this.writer.drain()
    this.closed = true
    this.checkpointer?.terminate()
    this.checkpointer = undefined
    try {
      // The store file only: a file a layer above attached (search's index) is its writer's to checkpoint.
      this.db.pragma('main.wal_checkpoint(TRUNCATE)')
    } catch (err) {
      this.log.warn('checkpoint on close failed', { err }) // the WAL is replayed on next open; nothing is lost
    }
    this.db.close()
    this.lock?.release()
  }

  /** Records where this store's owner can be reached (its HTTP address), for the message a second process prints. */
  announceOwner (info: { url?: string }): void {
    this.lock?.announce(info)
  }

  private assertOpen (): void {
    if (this.closed) throw new KvClosedError()
  }
}

/** Opens (creating if needed) the store file at `opts.path`, pragmas set and schema gate checked. */
export function openKv (opts: KvOptions): KvStore {
  return new KvStore(opts)
}
