/**
 * The group-commit writer. Write functions queued in the same turn of the
 * event loop run in one transaction (at most `maxBatch` of them); one that
 * throws rolls back alone (its rows, stream entries, counter deltas and
 * after-commit hooks) and only its caller sees the error. Promises settle
 * after COMMIT; after-commit hooks run first, then commit listeners hear the
 * batch's stream entries in order (as runs: see EntryRun).
 *
 * How a failure stays alone: the batch first runs with no savepoint (while
 * one is open SQLite keeps the original of every page a write changes,
 * which about doubles the cost of an insert). If a write function throws,
 * the transaction rolls back and the batch runs again, each function under
 * its own SAVEPOINT, so the one that throws rolls back alone. A write
 * function may therefore run twice, and only the second run counts: it
 * must act through the transaction handle, with anything outside the store
 * (memory, I/O) in after-commit hooks or after its promise settles, which
 * is what every write function does. A write alone in its transaction
 * never runs twice: if it throws, the transaction rolls back.
 *
 * Write functions are synchronous: one that returns a promise is rolled
 * back (AsyncWriteError), because an await inside a transaction would let
 * other work interleave with it.
 */
import type { Logger } from '../common/index.js'
import { AsyncWriteError, KvClosedError, StorageError } from './errors.js'
import type { EventId } from './event-id.js'
import { prefixEnd } from './keys.js'
import { readSuffixes, type RowWriter, type Statements } from './statements.js'
import type { Streams } from './streams.js'
import type { BatchListener, CommitListener, EntryRun, Tx } from './types.js'

interface Frame {
  events: EntryRun[]
  counters: Map<string, number>
  after: Array<() => void>
}

const emptyFrame = (): Frame => ({ events: [], counters: new Map(), after: [] })

interface Pending {
  fn: (tx: Tx) => unknown
  resolve: (v: unknown) => void
  reject: (e: unknown) => void
}

type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown }

interface GroupCommitOptions {
  st: Statements
  rows: RowWriter
  streams: Streams
  log: Logger
  /** Most write functions per transaction. */
  maxBatch: number
  /** True once the store is closed: queued work is refused. */
  isClosed: () => boolean
  /**
   * True while writes should hold off (the checkpointer's RESTART or
   * TRUNCATE checkpoint runs: checkpointer.ts, wal-hold.ts). Queued writes
   * wait, the event loop runs on; after
   * MAX_HOLD_MS of one hold they go ahead whatever it says.
   */
  holdWrites?: () => boolean
}

/** Longest a hold keeps queued writes waiting (the checkpointer's own wait is shorter: this covers a worker that died holding). */
const MAX_HOLD_MS = 2000
/** How often a held queue looks again. */
const HOLD_POLL_MS = 2

export class GroupCommit {
  private readonly o: GroupCommitOptions
  private queue: Pending[] = []
  private scheduled = false
  private readonly listeners = new Set<CommitListener>()
  private readonly batchListeners = new Set<BatchListener>()
  /** When the current hold started keeping queued writes back (holdWrites). */
  private heldSince: number | undefined
  /** Times a flush found the hold set and put its queued writes off (each HOLD_POLL_MS). */
  heldPolls = 0
  /** The frame of the write function currently running, if any. */
  private frame: Frame | undefined
  private readonly tx: Tx

  constructor (opts: GroupCommitOptions) {
    this.o = opts
    this.tx = this.makeTx()
  }

  async write<T> (fn: (tx: Tx) => T): Promise<T> {
    if (this.o.isClosed()) throw new KvClosedError()
    return await new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => { this.flush() })
      }
    })
  }

  writeSync<T> (fn: (tx: Tx) => T): T {
    if (this.frame !== undefined) throw new StorageError('writeSync called inside a write function')
    const r = this.runBatch([{ fn, resolve: () => {}, reject: () => {} }])[0]
    if (r.ok) return r.value as T
    throw r.error
  }

  onCommit (listener: CommitListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  onBatch (listener: BatchListener): () => void {
    this.batchListeners.add(listener)
    return () => { this.batchListeners.delete(listener) }
  }

  /** Commits everything queued (close does this before closing the file), hold or not: a transaction then waits for the lock. */
  drain (): void {
    while (this.queue.length > 0) this.flush(true)
  }

  private flush (drain = false): void {
    this.scheduled = false
    if (this.queue.length === 0) return
    if (!drain && this.o.holdWrites?.() === true && !this.o.isClosed()) {
      const now = performance.now()
      this.heldSince ??= now
      if (now - this.heldSince < MAX_HOLD_MS) {
        this.heldPolls++
        this.scheduled = true
        setTimeout(() => { this.flush() }, HOLD_POLL_MS)
        return
      }
    } else {
      this.heldSince = undefined
    }
    const max = this.o.maxBatch
    const batch = this.queue.length <= max ? this.queue : this.queue.slice(0, max)
    this.queue = this.queue.length <= max ? [] : this.queue.slice(max)
    if (this.queue.length > 0) {
      this.scheduled = true
      setImmediate(() => { this.flush() })
    }
    if (this.o.isClosed()) {
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

  /** One transaction for `batch`, then its figures to the batch listeners (metrics). */
  private runBatch (batch: Pending[]): Outcome[] {
    const started = performance.now()
    const results = this.runTransaction(batch)
    if (this.batchListeners.size > 0) {
      let failed = 0
      for (const r of results) if (!r.ok) failed++
      const stats = { writes: batch.length, failed, durationMs: performance.now() - started }
      for (const l of this.batchListeners) {
        try { l(stats) } catch (err) { this.o.log.error('batch listener failed', { err }) } // figures only: a broken listener must not fail writes
      }
    }
    return results
  }

  private runTransaction (batch: Pending[]): Outcome[] {
    const done = this.attempt(batch, false) ?? this.attempt(batch, true)!
    const { results, total } = done
    for (const fn of total.after) {
      try { fn() } catch (err) { this.o.log.error('after-commit hook failed', { err }) } // the write is durable; a hook's failure must not undo its success
    }
    if (total.events.length > 0) {
      for (const l of this.listeners) {
        try { l(total.events) } catch (err) { this.o.log.error('commit listener failed', { err }) } // one broken subscriber must not starve the others
      }
    }
    return results
  }

  /**
   * Runs the batch in one transaction and commits it. `isolate`: each write
   * function under its own savepoint. Without, the first function that
   * throws rolls the transaction back: its error is the outcome when it was
   * alone, else undefined (run the batch again, isolated).
   */
  private attempt (batch: Pending[], isolate: boolean): { results: Outcome[], total: Frame } | undefined {
    const { st, streams } = this.o
    const results: Outcome[] = []
    const total: Frame = emptyFrame()
    const streamsBefore = streams.snapshot()
    const failAll = (e: unknown): { results: Outcome[], total: Frame } => ({ results: batch.map(() => ({ ok: false as const, error: e })),
      total: emptyFrame() })
    try {
      st.begin.run()
      st.lockStore.run()
    } catch (err) {
      try { st.rollback.run() } catch { /* no transaction left open */ }
      return failAll(new StorageError(`cannot begin transaction: ${(err as Error).message}`, { cause: err }))
    }
    try {
      for (const op of batch) {
        const frame: Frame = emptyFrame()
        const streamsAtOp = isolate ? streams.snapshot() : streamsBefore
        if (isolate) st.sp.run()
        this.frame = frame
        try {
          const value = op.fn(this.tx)
          if (value instanceof Promise) {
            value.catch(() => {})
            throw new AsyncWriteError()
          }
          this.frame = undefined
          if (isolate) st.spRelease.run()
          // A loop, not a spread: one write function may append many runs.
          for (const r of frame.events) total.events.push(r)
          for (const [k, d] of frame.counters) total.counters.set(k, (total.counters.get(k) ?? 0) + d)
          for (const fn of frame.after) total.after.push(fn)
          results.push({ ok: true, value })
        } catch (error) {
          this.frame = undefined
          if (!isolate) {
            try { st.rollback.run() } catch { /* already rolled back by SQLite */ }
            streams.restore(streamsBefore)
            return batch.length === 1 ? { results: [{ ok: false, error }], total: emptyFrame() } : undefined
          }
          st.spRollback.run()
          st.spRelease.run()
          streams.restore(streamsAtOp)
          results.push({ ok: false, error })
        }
      }
      this.applyCounters(total.counters)
      streams.persist(total.events)
      st.commit.run()
    } catch (err) {
      this.frame = undefined
      try { st.rollback.run() } catch { /* already rolled back by SQLite */ }
      streams.restore(streamsBefore)
      return failAll(new StorageError(`commit failed: ${(err as Error).message}`, { cause: err }))
    }
    return { results, total }
  }

  private applyCounters (counters: Map<string, number>): void {
    const { st, rows } = this.o
    const puts: Array<[string, string]> = []
    for (const [k, d] of counters) {
      if (d === 0) continue
      const cur = Number(st.get.get(k) ?? '0')
      const next = (Number.isFinite(cur) ? cur : 0) + d
      if (next === 0) st.del.run(k)
      else puts.push([k, String(next)])
    }
    // A commit moves tens of counters (one per field type written): one multi-row write.
    if (puts.length > 0) rows.write(puts)
  }

  private makeTx (): Tx {
    const { st, rows, streams } = this.o
    const frame = (): Frame => {
      if (this.frame === undefined) throw new StorageError('transaction handle used outside its write function')
      return this.frame
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
      putMany (list) {
        frame()
        // Usually every row changes: the list is written as it is, no copy.
        let same = 0
        for (const r of list) if (r[2] === r[1]) same++
        if (same === list.length) return 0
        rows.write(same === 0 ? list : list.filter(r => r[2] !== r[1]))
        return list.length - same
      },
      delete (k) {
        frame()
        return st.del.run(k).changes > 0
      },
      range: (lo, hi, limit) => (limit === undefined ? st.range.all(lo, hi) : st.rangeLimit.all(lo, hi, limit)) as Array<[string, string]>,
      keys: (lo, hi, limit) => (limit === undefined ? st.keys.all(lo, hi) : st.keysLimit.all(lo, hi, limit)) as string[],
      suffixes: (prefix) => readSuffixes(st, prefix, prefixEnd(prefix)),
      appendEvent: (stream, fields): EventId => streams.append(frame().events, stream, fields),
      appendEvents: (stream, entries) => streams.appendMany(frame().events, stream, entries),
      clearStream (stream) {
        frame()
        streams.clear(stream)
      },
      addCounter (k, delta) {
        const f = frame()
        f.counters.set(k, (f.counters.get(k) ?? 0) + delta)
      },
      afterCommit (fn) { frame().after.push(fn) }
    }
  }
}
