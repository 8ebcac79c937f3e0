import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { silentLogger, type Logger } from '../common/index.js'
import { Checkpointer } from './checkpointer.js'
import { AsyncWriteError, KvClosedError, SchemaGateError, StorageError } from './errors.js'
import { SCHEMA_VERSION, SCHEMA_VERSION_KEY, prefixEnd } from './keys.js'
import {
  type EventId, type EventIdParts, formatEventId, nextEventId, padEventId, parseEventId
} from './event-id.js'

/** Prepared statement type handed to derived-structure modules (search) so they need not import better-sqlite3. */
export type SqlStatement = Database.Statement

export interface KvOptions {
  /** Path of the SQLite file; parent folders are created. */
  path: string
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

/** What a write function sees: reads see its own writes. */
export interface Tx {
  get: (k: string) => string | undefined
  has: (k: string) => boolean
  /** Writes `v`; returns false (and writes and emits nothing) when the key already holds `v`. */
  put: (k: string, v: string) => boolean
  /**
   * Many puts for a caller that already read each key's current value
   * (`old`, undefined when absent), e.g. with one range read for a whole
   * record: no point reads, unchanged rows skipped, the rest written with
   * multi-row statements (far fewer calls into SQLite than one put per row).
   * Returns how many rows changed.
   */
  putMany: (rows: ReadonlyArray<readonly [k: string, v: string, old: string | undefined]>) => number
  /** Deletes `k`; returns false (and emits nothing) when it did not exist. */
  delete: (k: string) => boolean
  range: (lo: string, hi: string, limit?: number) => Array<[string, string]>
  /** The rows under `prefix` as an object keyed by the rest of each key (one allocation per row, not three). */
  suffixes: (prefix: string) => Record<string, string>
  keys: (lo: string, hi: string, limit?: number) => string[]
  /** Appends an entry to an event stream; the entry is visible to listeners only after commit. */
  appendEvent: (stream: string, fields: Record<string, string>) => EventId
  /** Appends entries in order with multi-row writes (the record layer's change log: one row per changed key). */
  appendEvents: (stream: string, entries: ReadonlyArray<Record<string, string>>) => EventId[]
  /** Deletes every retained entry of a stream; ids keep increasing from the high-water mark. */
  clearStream: (stream: string) => void
  /** Adds `delta` to an integer counter key; applied once per commit, so hot counters cost one row write per batch. */
  addCounter: (k: string, delta: number) => void
  /** Runs after this write commits (never if it rolls back). */
  afterCommit: (fn: () => void) => void
}

export type CommitListener = (entries: readonly StreamEntry[]) => void

interface Frame {
  events: StreamEntry[]
  counters: Map<string, number>
  after: Array<() => void>
}

interface Pending {
  fn: (tx: Tx) => unknown
  resolve: (v: unknown) => void
  reject: (e: unknown) => void
}

interface StreamState {
  last: EventIdParts | undefined
  /** Appends since the last trim; in memory only, so a restart merely delays the next trim. */
  sinceTrim: number
  /** Retained entries, counted once on first use and kept up to date after. */
  length: number | undefined
}

const HWM_PREFIX = 'evhwm:'
/** `evlow:<stream>`: the newest id a trim or clear removed, so a reader can tell a cursor that lost entries from one that is merely old. */
const LOW_PREFIX = 'evlow:'
/** Rows per multi-row statement: amortises the per-statement cost while staying far under SQLite's 32766 bound parameters. */
const MULTI_ROWS = 32
const EV_PREFIX = 'ev:'

/**
 * The one `kv(k, v)` table with group commit.
 *
 * Guarantees:
 * - Writes issued in the same turn of the event loop share one transaction;
 *   each runs under its own SAVEPOINT, so one that throws rolls back alone and
 *   only its caller sees the error. A write's promise settles after COMMIT.
 * - Event streams are rows written in the same transaction as the change
 *   they describe; what a stream's entries mean is its writer's business.
 * - Reads (on this same connection, between transactions) see exactly the
 *   committed state: transactions run synchronously, so nothing can observe
 *   one half done.
 * - WAL with synchronous=NORMAL: a killed process loses nothing it
 *   acknowledged (only an OS crash may lose the last commits).
 */
export class KvStore {
  readonly path: string
  private readonly db: Database.Database
  private readonly log: Logger
  private readonly now: () => number
  private readonly retention: number
  private readonly trimEvery: number
  private readonly maxBatch: number
  private readonly checkUnversioned: KvOptions['checkUnversioned']
  private queue: Pending[] = []
  private scheduled = false
  private closed = false
  private readonly listeners = new Set<CommitListener>()
  private readonly streams = new Map<string, StreamState>()
  /** The frame of the write function currently running, if any. */
  private frame: Frame | undefined
  private readonly st: {
    get: Database.Statement
    put: Database.Statement
    del: Database.Statement
    range: Database.Statement
    rangeLimit: Database.Statement
    keys: Database.Statement
    suffixRange: Database.Statement
    jsonRange: Database.Statement
    keysLimit: Database.Statement
    lastKey: Database.Statement
    firstKey: Database.Statement
    keyAtOffset: Database.Statement
    delRange: Database.Statement
    count: Database.Statement
    begin: Database.Statement
    beginRead: Database.Statement
    commit: Database.Statement
    rollback: Database.Statement
    sp: Database.Statement
    spRelease: Database.Statement
    spRollback: Database.Statement
  }

  private readonly tx: Tx
  private checkpointer: Checkpointer | undefined
  /** Multi-row upserts by row count (prepared on first use). */
  private readonly putN = new Map<number, Database.Statement>()

  constructor (opts: KvOptions) {
    this.path = opts.path
    this.log = opts.logger ?? silentLogger
    this.now = opts.now ?? Date.now
    this.retention = opts.streamRetention ?? 100_000
    this.trimEvery = opts.trimEvery ?? 10_000
    this.maxBatch = opts.maxBatch ?? 2_000
    this.checkUnversioned = opts.checkUnversioned
    if (opts.path !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(opts.path)), { recursive: true })
    try {
      this.db = new Database(opts.path)
    } catch (err) {
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
      throw new StorageError(`cannot initialise store file ${opts.path}: ${(err as Error).message}`, { cause: err })
    }
    const p = (sql: string): Database.Statement => this.db.prepare(sql)
    this.st = {
      get: p('SELECT v FROM kv WHERE k = ?').pluck(),
      put: p('INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v'),
      del: p('DELETE FROM kv WHERE k = ?'),
      range: p('SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k').raw(),
      rangeLimit: p('SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?').raw(),
      keys: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k').pluck(),
      suffixRange: p('SELECT substr(k, ?), v FROM kv WHERE k >= ? AND k < ? ORDER BY k').raw(),
      jsonRange: p('SELECT json_group_object(substr(k, ?), v) FROM (SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k)').pluck(),
      keysLimit: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?').pluck(),
      lastKey: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k DESC LIMIT 1').pluck(),
      firstKey: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT 1').pluck(),
      keyAtOffset: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT 1 OFFSET ?').pluck(),
      delRange: p('DELETE FROM kv WHERE k >= ? AND k < ?'),
      count: p('SELECT count(*) FROM kv WHERE k >= ? AND k < ?').pluck(),
      begin: p('BEGIN IMMEDIATE'),
      beginRead: p('BEGIN DEFERRED'),
      commit: p('COMMIT'),
      rollback: p('ROLLBACK'),
      sp: p('SAVEPOINT w'),
      spRelease: p('RELEASE w'),
      spRollback: p('ROLLBACK TO w')
    }
    this.tx = this.makeTx()
    try {
      this.schemaGate()
    } catch (err) {
      this.db.close()
      throw err
    }
    if (opts.path !== ':memory:' && opts.backgroundCheckpoint !== false) {
      this.db.pragma('wal_autocheckpoint = 0')
      this.checkpointer = new Checkpointer({
        path: path.resolve(opts.path),
        logger: this.log,
        onFailure: () => {
          this.checkpointer = undefined
          if (!this.closed) this.db.pragma('wal_autocheckpoint = 1000')
        }
      })
    }
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
    return this.suffixesOf(prefix)
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

  private suffixesOf (prefix: string): Record<string, string> {
    // SQLite cuts the prefix off, so only the short suffix becomes a JS string.
    const rows = this.st.suffixRange.all(prefix.length + 1, prefix, prefixEnd(prefix)) as Array<[string, string]>
    const out: Record<string, string> = {}
    for (const [k, v] of rows) out[k] = v
    return out
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
   * transaction under its own savepoint. Resolves with its return value after
   * COMMIT, or rejects with what it threw (only it is rolled back).
   */
  async write<T> (fn: (tx: Tx) => T): Promise<T> {
    if (this.closed) throw new KvClosedError()
    return await new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => { this.flush() })
      }
    })
  }

  /**
   * Runs a write function in its own transaction now, synchronously (boot-time
   * work, tests). Fails if a group transaction is running.
   */
  writeSync<T> (fn: (tx: Tx) => T): T {
    this.assertOpen()
    if (this.frame !== undefined) throw new StorageError('writeSync called inside a write function')
    const results = this.runBatch([{ fn, resolve: () => {}, reject: () => {} }])
    const r = results[0]
    if (r.ok) return r.value as T
    throw r.error
  }

  /** Listeners hear every committed batch's stream entries, in order, after COMMIT. */
  onCommit (listener: CommitListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  private flush (): void {
    this.scheduled = false
    if (this.queue.length === 0) return
    const batch = this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch)
    this.queue = this.queue.length <= this.maxBatch ? [] : this.queue.slice(this.maxBatch)
    if (this.queue.length > 0) {
      this.scheduled = true
      setImmediate(() => { this.flush() })
    }
    if (this.closed) {
      for (const op of batch) op.reject(new KvClosedError())
      return
    }
    const results = this.runBatch(batch)
    for (let i = 0; i < batch.length; i++) {
      const r = results[i]
      if (r.ok) batch[i].resolve(r.value)
      else batch[i].reject(r.error)
    }
  }

  private runBatch (batch: Pending[]): Array<{ ok: true, value: unknown } | { ok: false, error: unknown }> {
    const results: Array<{ ok: true, value: unknown } | { ok: false, error: unknown }> = []
    const total: Frame = { events: [], counters: new Map(), after: [] }
    const streamsBefore = this.snapshotStreams()
    try {
      this.st.begin.run()
    } catch (err) {
      const e = new StorageError(`cannot begin transaction: ${(err as Error).message}`, { cause: err })
      return batch.map(() => ({ ok: false as const, error: e }))
    }
    try {
      for (const op of batch) {
        const frame: Frame = { events: [], counters: new Map(), after: [] }
        const streamsAtOp = this.snapshotStreams()
        this.st.sp.run()
        this.frame = frame
        try {
          const value = op.fn(this.tx)
          if (value instanceof Promise) {
            value.catch(() => {})
            throw new AsyncWriteError()
          }
          this.frame = undefined
          this.st.spRelease.run()
          total.events.push(...frame.events)
          for (const [k, d] of frame.counters) total.counters.set(k, (total.counters.get(k) ?? 0) + d)
          total.after.push(...frame.after)
          results.push({ ok: true, value })
        } catch (error) {
          this.frame = undefined
          this.st.spRollback.run()
          this.st.spRelease.run()
          this.restoreStreams(streamsAtOp)
          results.push({ ok: false, error })
        }
      }
      this.applyCounters(total.counters)
      this.persistStreams(total.events)
      this.st.commit.run()
    } catch (err) {
      this.frame = undefined
      try { this.st.rollback.run() } catch { /* already rolled back by SQLite */ }
      this.restoreStreams(streamsBefore)
      const e = new StorageError(`commit failed: ${(err as Error).message}`, { cause: err })
      return batch.map(() => ({ ok: false as const, error: e }))
    }
    for (const fn of total.after) {
      try { fn() } catch (err) { this.log.error('after-commit hook failed', { err }) } // the write is durable; a hook's failure must not undo its success
    }
    if (total.events.length > 0) {
      for (const l of this.listeners) {
        try { l(total.events) } catch (err) { this.log.error('commit listener failed', { err }) } // one broken subscriber must not starve the others
      }
    }
    return results
  }

  private makeTx (): Tx {
    const st = this.st
    const self = this
    const frame = (): Frame => {
      if (self.frame === undefined) throw new StorageError('transaction handle used outside its write function')
      return self.frame
    }
    return {
      get: (k) => st.get.get(k) as string | undefined,
      has: (k) => st.get.get(k) !== undefined,
      put (k, v) {
        frame()
        const old = st.get.get(k) as string | undefined
        if (old === v) return false
        st.put.run(k, v)
        return true
      },
      putMany (rows) {
        frame()
        const changed: Array<[string, string]> = []
        for (const [k, v, old] of rows) if (old !== v) changed.push([k, v])
        if (changed.length === 0) return 0
        self.writeRows(changed)
        return changed.length
      },
      delete (k) {
        frame()
        return st.del.run(k).changes > 0
      },
      range: (lo, hi, limit) => (limit === undefined ? st.range.all(lo, hi) : st.rangeLimit.all(lo, hi, limit)) as Array<[string, string]>,
      keys: (lo, hi, limit) => (limit === undefined ? st.keys.all(lo, hi) : st.keysLimit.all(lo, hi, limit)) as string[],
      suffixes: (prefix) => self.suffixesOf(prefix),
      appendEvent: (stream, fields) => self.appendEventIn(frame(), stream, fields),
      appendEvents: (stream, entries) => self.appendEventsIn(frame(), stream, entries),
      clearStream (stream) {
        frame()
        const lo = `${EV_PREFIX}${stream}/`
        st.delRange.run(lo, prefixEnd(lo))
        const s = self.streamState(stream)
        s.length = 0
        if (s.last !== undefined) st.put.run(LOW_PREFIX + stream, formatEventId(s.last))
      },
      addCounter (k, delta) {
        const f = frame()
        f.counters.set(k, (f.counters.get(k) ?? 0) + delta)
      },
      afterCommit (fn) { frame().after.push(fn) }
    }
  }

  /** Upserts rows with statements of up to MULTI_ROWS rows each. */
  private writeRows (rows: ReadonlyArray<readonly [string, string]>): void {
    let i = 0
    while (i < rows.length) {
      const left = rows.length - i
      const n = left >= MULTI_ROWS ? MULTI_ROWS : left >= 8 ? 8 : 1
      const args: string[] = []
      for (let j = 0; j < n; j++) args.push(rows[i + j][0], rows[i + j][1])
      this.multiPut(n).run(args)
      i += n
    }
  }

  private multiPut (n: number): Database.Statement {
    let st = this.putN.get(n)
    if (st === undefined) {
      st = this.db.prepare(`INSERT INTO kv (k, v) VALUES ${Array.from({ length: n }, () => '(?, ?)').join(', ')} ON CONFLICT (k) DO UPDATE SET v = excluded.v`)
      this.putN.set(n, st)
    }
    return st
  }

  // ---------------------------------------------------------------- streams

  private appendEventIn (frame: Frame, stream: string, fields: Record<string, string>): EventId {
    const s = this.streamState(stream)
    const parts = nextEventId(s.last, this.now())
    s.last = parts
    s.sinceTrim++
    if (s.length !== undefined) s.length++
    const id = formatEventId(parts)
    this.st.put.run(`${EV_PREFIX}${stream}/${padEventId(parts)}`, JSON.stringify(fields))
    frame.events.push({ stream, id, fields })
    return id
  }

  /** Appends entries with one multi-row write: one id each, in order. */
  private appendEventsIn (frame: Frame, stream: string, entries: ReadonlyArray<Record<string, string>>): EventId[] {
    const s = this.streamState(stream)
    const rows: Array<[string, string]> = []
    const ids: EventId[] = []
    const now = this.now()
    const prefix = `${EV_PREFIX}${stream}/`
    for (const fields of entries) {
      const parts = nextEventId(s.last, now)
      s.last = parts
      const id = formatEventId(parts)
      rows.push([prefix + padEventId(parts), JSON.stringify(fields)])
      ids.push(id)
      frame.events.push({ stream, id, fields })
    }
    s.sinceTrim += entries.length
    if (s.length !== undefined) s.length += entries.length
    this.writeRows(rows)
    return ids
  }

  private streamState (stream: string): StreamState {
    let s = this.streams.get(stream)
    if (s === undefined) {
      const hwm = this.st.get.get(HWM_PREFIX + stream) as string | undefined
      let last: EventIdParts | undefined = hwm === undefined ? undefined : parseEventId(hwm)
      if (last === undefined) {
        const lo = `${EV_PREFIX}${stream}/`
        const k = this.st.lastKey.get(lo, prefixEnd(lo)) as string | undefined
        if (k !== undefined) last = parseEventId(k.slice(lo.length))
      }
      s = { last, sinceTrim: 0, length: undefined }
      this.streams.set(stream, s)
    }
    return s
  }

  private snapshotStreams (): Map<string, StreamState> {
    const m = new Map<string, StreamState>()
    for (const [k, v] of this.streams) m.set(k, { ...v })
    return m
  }

  private restoreStreams (snap: Map<string, StreamState>): void {
    this.streams.clear()
    for (const [k, v] of snap) this.streams.set(k, v)
  }

  /** Writes each touched stream's high-water mark once per batch, and trims streams past retention. */
  private persistStreams (events: StreamEntry[]): void {
    if (events.length === 0) return
    const touched = new Set<string>()
    for (const e of events) touched.add(e.stream)
    for (const stream of touched) {
      const s = this.streamState(stream)
      if (s.last !== undefined) this.st.put.run(HWM_PREFIX + stream, formatEventId(s.last))
      if (s.sinceTrim >= this.trimEvery) {
        s.sinceTrim = 0
        const lo = `${EV_PREFIX}${stream}/`
        const hi = prefixEnd(lo)
        s.length ??= this.st.count.get(lo, hi) as number
        const excess = s.length - this.retention
        if (excess > 0) {
          // Walk only the `excess` oldest keys (not the retained ones) to find where to cut.
          const cut = this.st.keyAtOffset.get(lo, hi, excess - 1) as string | undefined
          if (cut !== undefined) {
            this.st.delRange.run(lo, cut + '\u0000')
            this.st.put.run(LOW_PREFIX + stream, formatEventId(parseEventId(cut.slice(lo.length))))
          }
          s.length = this.retention
        }
      }
    }
  }

  private applyCounters (counters: Map<string, number>): void {
    for (const [k, d] of counters) {
      if (d === 0) continue
      const cur = Number(this.st.get.get(k) ?? '0')
      const next = (Number.isFinite(cur) ? cur : 0) + d
      if (next === 0) this.st.del.run(k)
      else this.st.put.run(k, String(next))
    }
  }

  /** The last id issued on a stream (its head), or undefined if it never had an entry. */
  streamHead (stream: string): EventId | undefined {
    this.assertOpen()
    const s = this.streamState(stream)
    return s.last === undefined ? undefined : formatEventId(s.last)
  }

  /** The oldest retained id of a stream, or undefined when nothing is retained. */
  streamFirst (stream: string): EventId | undefined {
    this.assertOpen()
    const lo = `${EV_PREFIX}${stream}/`
    const k = this.st.firstKey.get(lo, prefixEnd(lo)) as string | undefined
    return k === undefined ? undefined : formatEventId(parseEventId(k.slice(lo.length)))
  }

  /**
   * The newest id a trim or a clear removed from the stream, or undefined
   * when it never lost an entry: a reader whose cursor is older missed entries.
   */
  streamTrimmedThrough (stream: string): EventId | undefined {
    this.assertOpen()
    const v = this.st.get.get(LOW_PREFIX + stream) as string | undefined
    return v === undefined ? undefined : formatEventId(parseEventId(v))
  }

  /** Retained entries strictly after `after` (or from the start), in id order. */
  readStream (stream: string, after: EventIdParts | undefined, limit: number): StreamEntry[] {
    this.assertOpen()
    const lo = `${EV_PREFIX}${stream}/`
    const from = after === undefined ? lo : `${lo}${padEventId(after)}\u0000`
    const rows = this.st.rangeLimit.all(from, prefixEnd(lo), limit) as Array<[string, string]>
    return rows.map(([k, v]) => ({ stream, id: formatEventId(parseEventId(k.slice(lo.length))), fields: JSON.parse(v) as Record<string, string> }))
  }

  streamLength (stream: string): number {
    const lo = `${EV_PREFIX}${stream}/`
    return this.count(lo, prefixEnd(lo))
  }

  // ---------------------------------------------------------------- lifecycle

  private schemaGate (): void {
    const v = this.st.get.get(SCHEMA_VERSION_KEY) as string | undefined
    if (v === undefined) {
      const reader: KvReader = {
        get: (k) => this.st.get.get(k) as string | undefined,
        any: (lo, hi) => this.st.firstKey.get(lo, hi) !== undefined
      }
      const why = this.checkUnversioned?.(reader)
      if (why !== undefined) {
        throw new SchemaGateError(
          `store file ${this.path} ${why} but no schema version: it was written by an older meta-core. ` +
          'There is no migration: move the file away (or set META_CORE_DB_PATH to a new file) and re-ingest the library.')
      }
      this.st.put.run(SCHEMA_VERSION_KEY, SCHEMA_VERSION)
      return
    }
    if (v !== SCHEMA_VERSION) {
      throw new SchemaGateError(
        `store file ${this.path} has schema version ${JSON.stringify(v)}, this meta-core reads version ${JSON.stringify(SCHEMA_VERSION)}. ` +
        'There is no migration: move the file away (or set META_CORE_DB_PATH to a new file) and re-ingest the library.')
    }
  }

  get isClosed (): boolean {
    return this.closed
  }

  /** Commits what is queued, then closes the file. Idempotent. */
  close (): void {
    if (this.closed) return
    while (this.queue.length > 0) this.flush()
    this.closed = true
    this.checkpointer?.terminate()
    this.checkpointer = undefined
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)')
    } catch (err) {
      this.log.warn('checkpoint on close failed', { err }) // the WAL is replayed on next open; nothing is lost
    }
    this.db.close()
  }

  private assertOpen (): void {
    if (this.closed) throw new KvClosedError()
  }
}

/** Opens (creating if needed) the store file at `opts.path`, pragmas set and schema gate checked. */
export function openKv (opts: KvOptions): KvStore {
  return new KvStore(opts)
}
