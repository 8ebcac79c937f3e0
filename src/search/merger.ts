/**
 * The merger: brings the derived structures in line with the kv rows,
 * outside the writers' commits, in sorted batches.
 *
 * A batch is up to `batchRoots` roots, taken in key order from the staged
 * roots (or, during a rebuild, from the live roots). It runs as a sequence
 * of short transactions of its own (one per event-loop turn, so group
 * commits of waiting writers go between them):
 *
 * 1. fill: per root, the old document (if any) is dropped with its FTS row,
 *    a live root gets a new document id, and its field entries are computed
 *    in SQL into the temp table `search_batch`, which keeps them in key
 *    order;
 * 2. fields: entries move from `search_batch` into `search_field` in key
 *    order, a slice per transaction: consecutive inserts land on the same
 *    pages, so a page is written once per slice instead of once per entry;
 * 3. fts: the FTS rows of the canonical roots the batch touched;
 * 4. finish: the batch's staged rows are removed (those staged again
 *    meanwhile stay), with the change-log mark and the orphan count.
 *
 * Until step 4 commits, the batch's roots are still staged, so queries check
 * them on the kv rows; a crash at any step leaves them staged, and the
 * batch is redone at the next open (its half-written entries belong to
 * document ids nothing points at any more: orphans).
 *
 * Writers wait (RecordIndexer.whenWritable) for the merger. From half of
 * `backlogLimit` staged roots on, a write waits for the merger's next step
 * (writes and merging take turns, so no write waits longer than a step and
 * the group commit in front of it); at `backlogLimit`, writes wait until the
 * backlog is down to three quarters of it (the hard bound). Orphaned
 * entries are swept in key order once they pass a tenth of the documents.
 */
import { AbortedError, silentLogger, type Logger } from '../common/index.js'
import { KvClosedError, type KvStore, type SqlStatement, type Tx } from '../kv/index.js'
import { countLiveRoots, recordRows, type IndexedRecords } from '../records/index.js'
import type { FtsIndex } from './fts-index.js'
import type { PendingRoots } from './pending-roots.js'
import { fillBatchSql, STATE_FORMAT, STATE_LOG_MARK, STATE_ORPHANS, clearStructures, multiCond } from './search-schema.js'

export interface MergerOptions {
  /** Most roots per batch (default 2,000): larger batches write fewer pages per entry. */
  batchRoots?: number
  /** Roots whose documents and entries one transaction prepares (default 250). */
  fillRoots?: number
  /**
   * Most field entries one transaction moves into the index (default 6,000).
   * Fewer when a slice takes longer than STEP_TARGET_MS (a large index puts
   * a slice's entries on more pages): writers wait behind a step.
   */
  sliceEntries?: number
  /** FTS rows one transaction writes (default 250). */
  sliceRows?: number
  /** Writers wait while this many roots are staged (default 4,000); from half of it on, each write waits for one merger step. */
  backlogLimit?: number
  /** A backlog smaller than a batch waits this long for more before it is merged (default 250 ms): larger batches cost less per root. */
  delayMs?: number
  /** Orphaned documents (re-indexed roots' old ones) that start a sweep, once they are also a tenth of all (default 1,000). */
  sweepMinOrphans?: number
  /** Progress lines while a backlog or a rebuild lasts, this often (default 5,000 ms). */
  progressEveryMs?: number
  /** Times steps (default performance.now; tests pass their own). */
  clock?: () => number
}

interface Batch {
  kind: 'pending' | 'rebuild'
  rids: string[]
  filled: number
  phase: 'fill' | 'fields' | 'fts' | 'finish'
  /** Canonical roots whose FTS rows the batch writes. */
  canon: Set<string>
  ftsList?: string[]
  ftsDone: number
  /** The last entry copied into the index (its key), in key order. */
  cursor: [string, string, number, string]
  /** Documents replaced, and the change in the number of documents, so far. */
  orphans: number
  docs: number
}

interface Deps {
  kv: KvStore
  records: IndexedRecords
  pending: PendingRoots
  fts: Pick<FtsIndex, 'rowOf'>
  /** META_CORE_INDEX_EXCLUDE_PREFIXES, non-empty ones. */
  excludePrefixes: readonly string[]
  marker: string
  logger?: Logger
}

/** Entries looked at per sweep transaction. */
const SWEEP_ENTRIES = 5000
/** After a failed step, the next try waits this long (ms). */
const RETRY_MS = 1000
/** A fields step that takes longer than this (commit included) makes the next one smaller. */
const STEP_TARGET_MS = 15
/** Fields slices never shrink below this many entries: below it, commits would cost more than they save. */
const MIN_SLICE = 500

export class Merger {
  private readonly o: Required<MergerOptions>
  private readonly log: Logger
  private readonly st: Record<
  'docOf' | 'docIns' | 'docDel' | 'docCount' | 'ftsDel' | 'ftsGet' | 'ftsPut' | 'fill' | 'fstatAdd' | 'copy' | 'cursorAt' |
  'batchClear' | 'stateGet' | 'statePut' | 'stateDel' | 'sweepPage' | 'fieldDel' | 'fstatDec' | 'fstatPrune', SqlStatement>
  private batch: Batch | undefined
  /** Set while a rebuild runs: the last live root it indexed ('' before the first). */
  private rebuildAfter: string | undefined
  private rebuildDone = 0
  private rebuildTotal = 0
  private sweepAfter: [string, string, number, string] | undefined
  private orphansAtSweepStart = 0
  /**
   * Documents (counted when a sweep is first considered, kept up to date
   * after), and documents replaced since the last sweep (their entries are
   * orphans; also in search_state).
   */
  private docs: number | undefined
  private orphanDocs: number
  private timer: ReturnType<typeof setTimeout> | undefined
  private immediate: ReturnType<typeof setImmediate> | undefined
  private stopped = false
  private writable: { promise: Promise<void>, resolve: () => void } | undefined
  /** Writes waiting for the next step (the backlog is past half its bound), and how many wait. */
  private paced: { promise: Promise<void>, resolve: () => void } | undefined
  private pacedWaiting = 0
  /** Entries the next fields step moves (adaptSlice). */
  private slice: number
  /** Writes the last step let through: as many as waited for it (writers check again after waiting). */
  private passes = 0
  private idleWaiters: Array<{ resolve: () => void, reject: (e: unknown) => void }> = []
  private readyWaiters: Array<{ resolve: () => void, reject: (e: unknown) => void }> = []
  private progress: { since: number, last: number, merged: number, what: string } | undefined
  /** Roots indexed from staged rows since start (tests and benchmarks read it). */
  merged = 0

  constructor (private readonly d: Deps, opts: MergerOptions = {}) {
    this.o = {
      batchRoots: opts.batchRoots ?? 2000,
      fillRoots: opts.fillRoots ?? 250,
      sliceEntries: opts.sliceEntries ?? 6000,
      sliceRows: opts.sliceRows ?? 250,
      backlogLimit: opts.backlogLimit ?? 4000,
      delayMs: opts.delayMs ?? 250,
      sweepMinOrphans: opts.sweepMinOrphans ?? 1000,
      progressEveryMs: opts.progressEveryMs ?? 5000,
      clock: opts.clock ?? (() => performance.now())
    }
    this.log = d.logger ?? silentLogger
    this.slice = this.o.sliceEntries
    const p = (sql: string): SqlStatement => d.kv.prepare(sql)
    const key = 'ORDER BY f, v, d, rf LIMIT ?'
    this.st = {
      docOf: p('SELECT d FROM search_doc WHERE rid = ?').pluck(),
      docIns: p('INSERT INTO search_doc (rid, g) VALUES (?, ?)'),
      docDel: p('DELETE FROM search_doc WHERE d = ?'),
      docCount: p('SELECT count(*) FROM search_doc').pluck(),
      ftsDel: p('DELETE FROM search_fts WHERE rowid = ?'),
      ftsGet: p('SELECT hay, ids FROM search_fts WHERE rowid = ?').raw(),
      ftsPut: p('INSERT OR REPLACE INTO search_fts (rowid, hay, ids) VALUES (?, ?, ?)'),
      fill: p(fillBatchSql(d.excludePrefixes)),
      fstatAdd: p(`INSERT INTO search_fstat (f, multi) SELECT f, count(*) FROM temp.search_batch WHERE m GROUP BY f
        ON CONFLICT (f) DO UPDATE SET multi = multi + excluded.multi`),
      copy: p(`INSERT INTO search_field (f, v, d, rf, rv) SELECT f, v, d, rf, rv FROM temp.search_batch WHERE (f, v, d, rf) > (?, ?, ?, ?) ${key}`),
      cursorAt: p('SELECT f, v, d, rf FROM temp.search_batch WHERE (f, v, d, rf) > (?, ?, ?, ?) ORDER BY f, v, d, rf LIMIT 1 OFFSET ?').raw(),
      batchClear: p('DELETE FROM temp.search_batch'),
      stateGet: p('SELECT v FROM search_state WHERE k = ?').pluck(),
      statePut: p('INSERT INTO search_state (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v'),
      stateDel: p('DELETE FROM search_state WHERE k = ?'),
      sweepPage: p(`SELECT f, v, d, rf, EXISTS (SELECT 1 FROM search_doc doc WHERE doc.d = s.d) AS live, ${multiCond('coalesce(s.rv, s.v)')} AS m
        FROM search_field s WHERE (f, v, d, rf) > (?, ?, ?, ?) ${key}`).raw(),
      fieldDel: p('DELETE FROM search_field WHERE f = ? AND v = ? AND d = ? AND rf = ?'),
      fstatDec: p('UPDATE search_fstat SET multi = multi - 1 WHERE f = ?'),
      fstatPrune: p('DELETE FROM search_fstat WHERE multi <= 0')
    }
    d.pending.onStaged = () => { this.schedule() }
    d.pending.gate = () => this.whenWritable()
    this.orphanDocs = Number(this.st.stateGet.get(STATE_ORPHANS) ?? '0')
  }

  /** False while a rebuild runs: the structures are incomplete and queries read every record. */
  get trusted (): boolean {
    return this.rebuildAfter === undefined
  }

  get rebuilding (): boolean {
    return this.rebuildAfter !== undefined
  }

  // ------------------------------------------------------------ control

  /** Empties the structures and indexes every live root again, in the background (or with drainSync). */
  startRebuild (reason: string): void {
    this.abandonBatch()
    this.d.kv.writeSync(() => {
      clearStructures(this.d.kv)
      this.st.stateDel.run(STATE_FORMAT)
      this.st.statePut.run(STATE_ORPHANS, '0')
    })
    this.docs = 0
    this.orphanDocs = 0
    this.rebuildAfter = ''
    this.rebuildDone = 0
    this.rebuildTotal = countLiveRoots(this.d.kv)
    this.sweepAfter = undefined
    this.log.info('search: rebuilding the index from the records', { reason, roots: this.rebuildTotal })
    this.schedule()
  }

  /** Does all outstanding work now, one transaction after another (small stores at open). */
  drainSync (): void {
    while (!this.stopped && this.hasWork()) this.d.kv.writeSync(tx => { this.step(tx) })
    this.settle()
  }

  /**
   * Settles once nothing is staged, no rebuild runs and no sweep of orphaned
   * entries is due; merges without waiting for a batch to fill meanwhile.
   */
  async whenIdle (): Promise<void> {
    if (!this.hasWork()) return
    if (this.stopped) throw new AbortedError('search maintenance stopped')
    const p = new Promise<void>((resolve, reject) => { this.idleWaiters.push({ resolve, reject }) })
    this.schedule()
    await p
  }

  /** Settles once no rebuild runs. */
  async whenReady (): Promise<void> {
    if (this.trusted) return
    if (this.stopped) throw new AbortedError('search maintenance stopped')
    await new Promise<void>((resolve, reject) => { this.readyWaiters.push({ resolve, reject }) })
  }

  /**
   * A promise while writes must wait (see the top of this file): until the
   * next step past half the bound, until three quarters of it at the bound;
   * undefined when a write may go at once.
   */
  whenWritable (): Promise<void> | undefined {
    if (this.stopped) return undefined
    if (this.writable !== undefined) return this.writable.promise
    const size = this.d.pending.size
    if (size >= this.o.backlogLimit) {
      this.writable = waiter()
      this.schedule()
      return this.writable.promise
    }
    if (size < this.o.backlogLimit / 2) return undefined
    if (this.passes > 0) {
      this.passes--
      return undefined
    }
    if (this.paced === undefined) {
      this.paced = waiter()
      this.schedule()
    }
    this.pacedWaiting++
    return this.paced.promise
  }

  /** Stops scheduling; staged roots stay staged (the next open merges them). Records the change-log mark. */
  stop (): void {
    if (this.stopped) return
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    if (this.immediate !== undefined) clearImmediate(this.immediate)
    this.timer = undefined
    this.immediate = undefined
    this.abandonBatch()
    this.writable?.resolve()
    this.writable = undefined
    this.paced?.resolve()
    this.paced = undefined
    this.pacedWaiting = 0
    const err = new AbortedError('search maintenance stopped')
    for (const w of this.idleWaiters.splice(0)) w.reject(err)
    for (const w of this.readyWaiters.splice(0)) w.reject(err)
    try {
      if (!this.d.kv.isClosed) this.d.kv.writeSync(tx => { this.recordMark(tx) })
    } catch (e) {
      this.log.warn('search: could not record the change-log mark at stop; the next open replays more of the log', { err: e })
    }
  }

  /** Every change logged up to now is indexed or staged (all of this process's writes go through the hook). */
  recordMark (_tx: Tx): void {
    const head = this.d.records.changeLogHead()
    if (head !== undefined && this.st.stateGet.get(STATE_LOG_MARK) !== head) this.st.statePut.run(STATE_LOG_MARK, head)
  }

  /** Runs the next step at once when there is reason to hurry (a full batch, waiting writers or callers), else after the delay. */
  schedule (): void {
    if (this.stopped || this.immediate !== undefined || !this.hasWork()) return
    const soon = this.batch !== undefined || this.rebuilding || this.d.pending.size >= this.o.batchRoots ||
      this.writable !== undefined || this.paced !== undefined || this.idleWaiters.length > 0 || this.sweepDue()
    if (soon) {
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.timer = undefined
      this.immediate = setImmediate(() => { this.immediate = undefined; this.run() })
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => { this.timer = undefined; this.run() }, this.o.delayMs)
    }
  }

  // ------------------------------------------------------------ steps

  private hasWork (): boolean {
    return this.batch !== undefined || this.d.pending.size > 0 || this.rebuilding || this.sweepDue()
  }

  private run (): void {
    if (this.stopped) return
    try {
      const fields = this.batch?.phase === 'fields'
      const t0 = this.o.clock()
      this.d.kv.writeSync(tx => { this.step(tx) })
      if (fields) this.adaptSlice(this.o.clock() - t0)
    } catch (err) {
      this.abandonBatch()
      if (err instanceof KvClosedError) { this.stop(); return }
      this.log.error('search: merging failed; staged records stay staged and are checked on their rows', { err })
      this.timer = setTimeout(() => { this.timer = undefined; this.run() }, RETRY_MS)
      return
    }
    this.settle()
    this.schedule()
  }

  /** After a committed step: wakes writers and waiters, writes progress lines. */
  private settle (): void {
    if (this.writable !== undefined && this.d.pending.size < this.o.backlogLimit * 0.75) {
      this.writable.resolve()
      this.writable = undefined
    }
    this.passes = this.pacedWaiting
    this.pacedWaiting = 0
    this.paced?.resolve()
    this.paced = undefined
    if (this.trusted) for (const w of this.readyWaiters.splice(0)) w.resolve()
    if (!this.hasWork()) for (const w of this.idleWaiters.splice(0)) w.resolve()
    this.reportProgress()
  }

  /** One transaction's worth of work. */
  private step (tx: Tx): void {
    let b = this.batch
    if (b === undefined) {
      b = this.nextBatch(tx)
      if (b === undefined) {
        if (this.sweepDue()) this.sweepStep()
        return
      }
      this.batch = b
    }
    switch (b.phase) {
      case 'fill': this.fillStep(tx, b); break
      case 'fields': this.fieldsStep(b); break
      case 'fts': this.ftsStep(tx, b); break
      case 'finish': this.finishStep(tx, b); break
    }
  }

  private nextBatch (tx: Tx): Batch | undefined {
    const blank = { filled: 0, phase: 'fill' as const, canon: new Set<string>(), ftsDone: 0, orphans: 0, docs: 0, cursor: ['', '', -1, ''] as Batch['cursor'] }
    if (this.d.pending.size > 0) {
      const rids = [...this.d.pending.set].sort().slice(0, this.o.batchRoots)
      this.d.pending.beginBatch(rids)
      return { kind: 'pending', rids, ...blank }
    }
    if (this.rebuildAfter !== undefined) {
      const rids = recordRows.liveRoots(tx, this.rebuildAfter === '' ? undefined : this.rebuildAfter, this.o.batchRoots)
      if (rids.length === 0) {
        this.finishRebuild(tx)
        return undefined
      }
      return { kind: 'rebuild', rids, ...blank }
    }
    return undefined
  }

  private fillStep (tx: Tx, b: Batch): void {
    const end = Math.min(b.rids.length, b.filled + this.o.fillRoots)
    const docs: Array<[string, number]> = []
    for (let i = b.filled; i < end; i++) {
      const rid = b.rids[i]
      const old = this.st.docOf.get(rid) as number | undefined
      if (old !== undefined) {
        this.st.docDel.run(old)
        this.st.ftsDel.run(old)
        b.orphans++
        b.docs--
      }
      if (!recordRows.isLive(tx, rid)) continue
      const d = Number(this.st.docIns.run(rid, recordRows.inGroup(tx, rid) ? 1 : 0).lastInsertRowid)
      docs.push([rid, d])
      b.docs++
      b.canon.add(recordRows.canonOf(tx, rid))
    }
    if (docs.length > 0) this.st.fill.run({ docs: JSON.stringify(docs) })
    b.filled = end
    if (end === b.rids.length) b.phase = 'fields'
  }

  /** Shrinks the next fields slice after a step that took too long, grows it back after quick ones. */
  private adaptSlice (ms: number): void {
    const max = this.o.sliceEntries
    if (ms > STEP_TARGET_MS) this.slice = Math.max(Math.min(max, MIN_SLICE), Math.floor(this.slice * 0.7))
    else if (ms < STEP_TARGET_MS / 2) this.slice = Math.min(max, Math.ceil(this.slice * 1.25))
  }

  private fieldsStep (b: Batch): void {
    const n = this.slice
    const copied = this.st.copy.run(...b.cursor, n).changes
    const next = copied === n ? this.st.cursorAt.get(...b.cursor, n - 1) as Batch['cursor'] | undefined : undefined
    if (next !== undefined) {
      b.cursor = next
      return
    }
    // The whole batch is in: count its comma-set values once, and empty the temp table for the next batch.
    this.st.fstatAdd.run()
    this.st.batchClear.run()
    b.phase = 'fts'
  }

  private ftsStep (tx: Tx, b: Batch): void {
    b.ftsList ??= [...b.canon].sort()
    const end = Math.min(b.ftsList.length, b.ftsDone + this.o.sliceRows)
    for (let i = b.ftsDone; i < end; i++) {
      const c = b.ftsList[i]
      // Changed since the batch began (it is staged again then) or not indexed yet: its own batch writes the row.
      if (!recordRows.isLive(tx, c) || recordRows.canonOf(tx, c) !== c) continue
      const d = this.st.docOf.get(c) as number | undefined
      if (d === undefined) continue
      const [hay, ids] = this.d.fts.rowOf(tx, c)
      const old = this.st.ftsGet.get(d) as [string, string] | undefined
      if (old !== undefined && old[0] === hay && old[1] === ids) continue
      this.st.ftsPut.run(d, hay, ids)
    }
    b.ftsDone = end
    if (end === b.ftsList.length) b.phase = 'finish'
  }

  private finishStep (tx: Tx, b: Batch): void {
    if (b.kind === 'pending') {
      this.d.pending.finishBatch(tx, b.rids)
      const n = b.rids.length
      tx.afterCommit(() => { this.merged += n })
    } else {
      this.rebuildAfter = b.rids[b.rids.length - 1]
      this.rebuildDone += b.rids.length
    }
    const { orphans, docs } = b
    if (orphans > 0) this.st.statePut.run(STATE_ORPHANS, String(this.orphanDocs + orphans))
    tx.afterCommit(() => {
      this.orphanDocs += orphans
      if (this.docs !== undefined) this.docs += docs
    })
    this.recordMark(tx)
    this.batch = undefined
  }

  private finishRebuild (tx: Tx): void {
    this.recordMark(tx)
    this.st.statePut.run(STATE_FORMAT, this.d.marker)
    const done = this.rebuildDone
    tx.afterCommit(() => {
      this.rebuildAfter = undefined
      this.log.info('search: rebuild done', { roots: done })
    })
  }

  /** Drops the batch in progress: its roots stay staged; its entries so far are orphans or are redone. */
  private abandonBatch (): void {
    if (this.batch === undefined) return
    if (this.batch.kind === 'pending') this.d.pending.endBatch()
    this.batch = undefined
    try {
      if (!this.d.kv.isClosed && !this.d.kv.inTransaction) this.st.batchClear.run()
    } catch { /* a temp table on a closing connection: nothing to keep */ }
  }

  // ------------------------------------------------------------ orphans

  private sweepDue (): boolean {
    if (this.sweepAfter !== undefined) return true
    if (this.stopped || this.rebuilding || this.d.pending.size > 0 || this.batch !== undefined) return false
    if (this.orphanDocs < this.o.sweepMinOrphans) return false
    this.docs ??= this.st.docCount.get() as number
    return this.orphanDocs * 10 >= this.docs
  }

  /** Removes the entries of documents that no longer exist, a slice of the index at a time, in key order. */
  private sweepStep (): void {
    if (this.sweepAfter === undefined) {
      this.sweepAfter = ['', '', -1, '']
      this.orphansAtSweepStart = this.orphanDocs
      this.log.info('search: sweeping entries of re-indexed records', { orphanDocs: this.orphansAtSweepStart })
    }
    const rows = this.st.sweepPage.all(...this.sweepAfter, SWEEP_ENTRIES) as Array<[string, string, number, string, number, number]>
    for (const [f, v, d, rf, live, m] of rows) {
      if (live === 1) continue
      this.st.fieldDel.run(f, v, d, rf)
      if (m === 1) this.st.fstatDec.run(f)
    }
    if (rows.length === SWEEP_ENTRIES) {
      const last = rows[rows.length - 1]
      this.sweepAfter = [last[0], last[1], last[2], last[3]]
      return
    }
    this.st.fstatPrune.run()
    // Documents orphaned while the sweep ran may have entries behind its cursor: they stay counted.
    const left = Math.max(0, this.orphanDocs - this.orphansAtSweepStart)
    this.st.statePut.run(STATE_ORPHANS, String(left))
    this.orphanDocs = left
    this.sweepAfter = undefined
    this.log.info('search: sweep done')
  }

  // ------------------------------------------------------------ progress

  private reportProgress (): void {
    const now = Date.now()
    const busy = this.rebuilding || this.d.pending.size > 0
    if (!busy) {
      if (this.progress !== undefined && this.progress.last > this.progress.since) {
        this.log.info(`search: ${this.progress.what} merged`, { elapsedMs: now - this.progress.since })
      }
      this.progress = undefined
      return
    }
    const what = this.rebuilding ? 'rebuild' : 'backlog'
    if (this.progress === undefined || this.progress.what !== what) {
      this.progress = { since: now, last: now, merged: this.merged, what }
      return
    }
    if (now - this.progress.last < this.o.progressEveryMs) return
    const fields = this.rebuilding
      ? { done: this.rebuildDone, total: this.rebuildTotal, pending: this.d.pending.size }
      : { pending: this.d.pending.size, mergedPerSecond: Math.round((this.merged - this.progress.merged) * 1000 / (now - this.progress.last)) }
    this.log.info(`search: ${what} in progress`, { ...fields, elapsedMs: now - this.progress.since })
    this.progress.last = now
    this.progress.merged = this.merged
  }
}

function waiter (): { promise: Promise<void>, resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>(r => { resolve = r })
  return { promise, resolve }
}
