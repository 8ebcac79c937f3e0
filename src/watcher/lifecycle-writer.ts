import { delay, silentLogger, systemClock, type Clock, type Logger } from '../common/index.js'
import type { LocalTx } from '../records/index.js'
import { FILES_MOUNT, FileState, type FileEntry } from './file-state.js'
import { RecordOps } from './record-ops.js'
import { FILE_EVENTS, type WatcherRecords } from './types.js'

/** A settled file was hashed: record it at its path (arrival, change, or the new end of a move). */
export interface SeenStep {
  kind: 'seen'
  rel: string
  size: number
  mtimeNs: string
  cid: string
  /** The scan this step belongs to, for its summary. */
  tag?: number
  /** From registerFile: never paired with a pending delete as a move. */
  register?: boolean
}

/** A known file has been gone for the settle window without reappearing elsewhere. */
export interface GoneStep {
  kind: 'gone'
  rel: string
  tag?: number
}

export type Step = SeenStep | GoneStep

export type FileEventType = 'add' | 'change' | 'delete' | 'rename'

export interface StepOutcome {
  ok: boolean
  /** The `file:events` entry written, if any (none when nothing changed). */
  event?: FileEventType
  /** A new root was minted. */
  created?: boolean
  oldPath?: string
  error?: unknown
}

export interface LifecycleWriterOptions {
  records: WatcherRecords
  state: FileState
  holderId: string
  /** Event timestamps and the batch's gathering wait (default `systemClock`). */
  clock?: Clock
  logger?: Logger
  /** Takes a pending (not yet written) delete of this content, if any: its path becomes the old end of a move. */
  claimPendingDelete: (cid: string) => string | undefined
  /** Steps written per transaction (default 256): a few record writes each, well under kv's group-commit cap. */
  maxBatch?: number
  /** How long the first step of a batch waits for others to join it (default 20 ms). */
  gatherMs?: number
  /** A path the records name as a copy on this node that the state did not know (now known, unconfirmed): look at it. */
  recheck?: (rel: string) => void
  /** A file was recorded at a path as holding a content (committed): the background full hash's queue. */
  onRecorded?: (entry: FileEntry) => void
}

interface Queued {
  step: Step
  resolve: (o: StepOutcome) => void
}

interface Plan {
  queued: Queued
  /** Record writes, in the order queued. */
  writes: Array<Promise<unknown>>
  /** The event and state-row write (shared by the batch), queued after `writes`: resolves true when it committed. */
  event?: Promise<boolean>
  /** Writes the event and state rows; with `verify`, first checks the record change is visible in `tx`. */
  commit?: (tx: LocalTx, verify: boolean) => boolean
  /** In-memory state change, applied once the event committed. */
  apply?: () => void
  outcome: StepOutcome
}

/**
 * Turns lifecycle steps into record writes, `file:events` entries and state
 * rows, a batch at a time.
 *
 * Atomicity: records offers no "record write plus event" call, so a step's
 * record writes (record-layer methods, each one store write function) and then
 * its event-and-state write function are all queued in the same turn of the
 * event loop; the store's group commit runs them in one transaction. The event
 * function first checks, inside that transaction, that the record change is
 * there (a record write that threw was rolled back alone), so an event is
 * never published for a change that did not happen. If the store ever splits them
 * across two transactions (its batch cap), a crash in between leaves a record
 * change without its event and state row: the next scan finds the file with
 * no row, hashes it, finds it already recorded and publishes the event then
 * (`add` is idempotent for consumers); for a removal, the row still names
 * the vanished path, so the next scan removes it again (a no-op on the
 * record) and publishes the `delete`. Nothing is lost, at worst re-sent.
 *
 * A removal is one records call (`releaseCopy`) that decides inside its
 * transaction, from the committed rows, whether a local copy remains: a
 * duplicate row, or one of the other paths the state knows for the content
 * (handed over with their size and mtime, so a promoted copy's `sizeByte`
 * and `mtimeNano` describe it, and so a copy the record lost is written
 * back). The state and the record can disagree (a copy's record write that
 * committed without its state row, a duplicate row removed behind our
 * back), and neither side alone may conclude "last copy": a record is
 * deleted only when neither names another copy and no other node holds the
 * content. Duplicate paths the record names that the state does not know
 * become unconfirmed entries and are looked at (`recheck`), so a copy that
 * exists is confirmed and announced, and one that does not is removed.
 *
 * Steps in one batch touch different paths and different contents (a step
 * that shares either with an earlier one waits for the next batch), so each
 * step's plan, made from committed state, cannot be invalidated by another
 * step of its own batch.
 */
export class LifecycleWriter {
  private readonly records: WatcherRecords
  private readonly state: FileState
  private readonly holder: string
  private readonly log: Logger
  private readonly claim: (cid: string) => string | undefined
  private readonly maxBatch: number
  private readonly gatherMs: number
  private readonly ops: RecordOps
  private readonly clock: Clock
  private readonly onRecorded: (entry: FileEntry) => void
  private queue: Queued[] = []
  private running: Promise<void> | undefined

  constructor (opts: LifecycleWriterOptions) {
    this.records = opts.records
    this.state = opts.state
    this.holder = `holders/${opts.holderId}`
    this.log = opts.logger ?? silentLogger
    this.claim = opts.claimPendingDelete
    this.maxBatch = opts.maxBatch ?? 256
    this.gatherMs = opts.gatherMs ?? 20
    this.clock = opts.clock ?? systemClock
    this.onRecorded = opts.onRecorded ?? (() => {})
    this.ops = new RecordOps({ records: this.records, state: this.state, holder: this.holder, logger: this.log, recheck: opts.recheck ?? (() => {}) })
  }

  get busy (): boolean {
    return this.running !== undefined || this.queue.length > 0
  }

  async submit (step: Step): Promise<StepOutcome> {
    return await new Promise(resolve => {
      this.queue.push({ step, resolve })
      this.kick()
    })
  }

  /** Resolves once everything submitted so far is written (or failed). */
  async idle (): Promise<void> {
    while (this.running !== undefined) await this.running
  }

  private kick (): void {
    if (this.running !== undefined) return
    this.running = this.drain().finally(() => {
      this.running = undefined
      if (this.queue.length > 0) this.kick()
    })
  }

  private async drain (): Promise<void> {
    while (this.queue.length > 0) {
      // Gather steps finishing close together into one batch (and one transaction): during a scan files
      // finish hashing a few at a time, and a transaction per file costs about twice the work per file.
      // The wait is small against the settle window every change has already waited. Writes on their way: it keeps the process alive.
      if (this.queue.length < this.maxBatch) await delay(this.clock, this.gatherMs, { keepAlive: true })
      await this.runBatch(this.takeBatch())
    }
  }

  private takeBatch (): Queued[] {
    const used = new Set<string>()
    const batch: Queued[] = []
    const rest: Queued[] = []
    for (const q of this.queue) {
      // Keys are read now, not at submit: the path's entry may have changed since.
      const keys = [`p:${q.step.rel}`]
      if (q.step.kind === 'seen') keys.push(`c:${q.step.cid}`)
      const prior = this.state.get(q.step.rel)
      if (prior !== undefined) keys.push(`c:${prior.cid}`)
      if (batch.length < this.maxBatch && !keys.some(k => used.has(k))) batch.push(q)
      else rest.push(q)
      for (const k of keys) used.add(k) // a deferred step still blocks later steps on its keys: order per path and per content holds
    }
    this.queue = rest
    return batch
  }

  private async runBatch (batch: Queued[]): Promise<void> {
    const plans: Plan[] = []
    // Everything below up to the await runs in one turn: all writes of the batch join one store transaction.
    for (const q of batch) {
      try {
        plans.push(q.step.kind === 'seen' ? this.planSeen(q, q.step) : this.planGone(q, q.step))
      } catch (err) {
        q.resolve({ ok: false, error: err })
      }
    }
    // The batch's events and state rows go in one write function (not one per file), queued after every
    // record write. Each step is still checked on its own.
    const publishing = plans.filter(p => p.commit !== undefined)
    if (publishing.length > 0) {
      const all = this.records.local.write(tx => publishing.map(p => p.commit!(tx, true)))
      publishing.forEach((p, i) => { p.event = all.then(done => done[i]) })
    }
    await Promise.all(plans.map(async p => { await this.finish(p) }))
  }

  private async finish (p: Plan): Promise<void> {
    const results = await Promise.allSettled(p.writes)
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (p.event === undefined) {
      p.apply?.()
      p.queued.resolve(p.outcome)
      return
    }
    let committed = false
    let error: unknown = failed?.reason
    try {
      committed = await p.event
    } catch (err) {
      error ??= err
    }
    if (!committed && error === undefined && p.commit !== undefined) {
      // The record writes committed after the event check ran (not queued in the same turn): publish now.
      const commit = p.commit
      try {
        committed = await this.records.local.write(tx => commit(tx, false))
      } catch (err) {
        error = err
      }
    }
    const path = p.queued.step.rel
    if (committed) {
      p.apply?.()
      // The event is out and the record holds the file; only a clean-up write (a removal) failed.
      if (failed !== undefined) this.log.error('a record clean-up write failed', { path, err: failed.reason })
      p.queued.resolve(p.outcome)
      return
    }
    // Nothing was published and the state row is unchanged: the next scan tries this file again.
    this.log.warn('could not record a file change', { path, err: error })
    p.queued.resolve({ ok: false, error })
  }

  // ------------------------------------------------------------ plans

  private planSeen (q: Queued, s: SeenStep): Plan {
    const abs = FILES_MOUNT + s.rel
    const prior = this.state.get(s.rel)
    if (prior !== undefined && !prior.fresh && prior.cid === s.cid && prior.size === s.size && prior.mtimeNs === s.mtimeNs) {
      return { queued: q, writes: [], outcome: { ok: true, created: false } }
    }
    const writes: Array<Promise<unknown>> = []
    let event: FileEventType
    let created = false
    let oldRel: string | undefined
    let adopt = (): void => {}
    if (prior === undefined) {
      oldRel = s.register === true ? undefined : this.claim(s.cid)
      if (oldRel !== undefined) {
        event = 'rename'
        created = this.ops.move(writes, FILES_MOUNT + oldRel, abs, s)
      } else {
        event = 'add'
        created = this.ops.arrival(writes, abs, s)
      }
    } else {
      event = prior.fresh ? 'add' : 'change'
      if (prior.cid !== s.cid) {
        // The bytes at a known path changed (a tag fixed inside a video, say). The work follows the file: the
        // new content's record, when it is minted now, takes over the old record's fields but the ones the store
        // owns (records' mint inheritFrom), so it is written first, in the same transaction; then the path
        // leaves the old record, which goes when this was its last copy (its CIDs, naming the old bytes, stop
        // resolving). Content that already has a record keeps its own fields.
        created = this.ops.arrival(writes, abs, s, prior.cid)
        adopt = this.ops.removal(writes, s.rel, prior)
      } else {
        created = this.ops.arrival(writes, abs, s)
      }
    }
    const fields: Record<string, string> = { type: event, path: s.rel, timestamp: String(this.clock.now()) }
    if (s.size > 0) fields.size = String(s.size)
    fields.midhash256 = s.cid
    if (oldRel !== undefined) fields.oldPath = oldRel
    const entry: FileEntry = { size: s.size, mtimeNs: s.mtimeNs, cid: s.cid, fresh: false }
    const from = oldRel
    // A mint was planned because no record held the cid: the cid resolving now is proof enough (one read, the common case).
    const check = created
      ? (tx: LocalTx) => tx.resolves(s.cid)
      : (tx: LocalTx) => tx.recordedAt(s.cid, abs)
    return {
      queued: q,
      writes,
      commit: (tx, verify) => {
        if (verify && !check(tx)) return false
        tx.appendEvent(FILE_EVENTS, fields)
        FileState.putRow(tx, s.rel, entry)
        if (from !== undefined) FileState.deleteRow(tx, from)
        return true
      },
      apply: () => {
        this.state.set(s.rel, entry)
        if (from !== undefined) this.state.delete(from)
        adopt()
        this.onRecorded(entry)
      },
      outcome: { ok: true, event, created, ...(from !== undefined ? { oldPath: from } : {}) }
    }
  }

  private planGone (q: Queued, s: GoneStep): Plan {
    const prior = this.state.get(s.rel)
    if (prior === undefined) return { queued: q, writes: [], outcome: { ok: true } }
    const writes: Array<Promise<unknown>> = []
    const adopt = this.ops.removal(writes, s.rel, prior)
    const fields = { type: 'delete', path: s.rel, timestamp: String(this.clock.now()) }
    return {
      queued: q,
      writes,
      commit: (tx) => {
        tx.appendEvent(FILE_EVENTS, fields)
        FileState.deleteRow(tx, s.rel)
        return true
      },
      apply: () => {
        this.state.delete(s.rel)
        adopt()
      },
      outcome: { ok: true, event: 'delete' }
    }
  }
}
