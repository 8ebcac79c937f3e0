import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { Logger } from '../common/index.js'
import type { CheckpointTuning } from './types.js'
import { FIRST_READER, HOLD_READERS, HOLD_WRITERS, READER_SLOTS, newWalHold, releaseHolds } from './wal-hold.js'

/**
 * Runs WAL checkpoints on a worker thread with its own connection, so the
 * write path never pays for them. With SQLite's automatic checkpoint, every
 * ~1000 pages a COMMIT would copy the WAL into the database file and fsync it
 * twice (synchronous=NORMAL), stalling the event loop; measured on ingest that
 * was about half of all commit time. A PASSIVE checkpoint never blocks the
 * writer, and the writer starts the WAL over from the top when it finds
 * every frame copied and no reader in the WAL.
 *
 * Under sustained writes that moment never comes: each commit adds frames
 * while a checkpoint copies the earlier ones, and search's index writer
 * reads the store in back-to-back transactions, each holding the frames of
 * its snapshot. The WAL then only grows: 1,152 MiB beside a 177 MiB store
 * after 40,000 records through the write path. So once the WAL holds
 * `restartBytes` since it last started over, the worker starts it over,
 * in steps that hold writers back as briefly as it can (the flags it
 * shares with the store's threads: wal-hold.ts):
 * 1. it flushes what its passive checkpoints copied (an fdatasync, holding
 *    no lock);
 * 2. it holds readers off: search's index writer finishes the transaction
 *    it is in and begins no other (side-file.ts); writers go on;
 * 3. once no such reader is in the WAL, a PASSIVE checkpoint copies what
 *    the writers committed meanwhile (nothing stops it now), writers still
 *    going on;
 * 4. it holds writers off (group-commit.ts: the lock is free once the
 *    transaction running now commits) and runs a RESTART checkpoint: it
 *    takes the write lock, copies the last frames, and starts the WAL over.
 * A start-over that cannot finish within `restartWaitMs` (a reader stays in
 * its transaction, or a reader outside the protocol in the WAL) gives up,
 * and the next one waits twice as long as the last (from one look's
 * interval to 30 s), so such a reader holds writers back a few per cent of
 * the time at most; five in a row log a warning.
 *
 * The writers then write the WAL from its first frame again, over the file
 * as it is: during a burst the file stays at its largest (about
 * `restartBytes` and what a start-over takes), and no commit pays for
 * growing it or cutting it back. (Cutting it back in the writer's commit,
 * with `journal_size_limit`, took 100-150 ms of the event loop at every
 * start-over, some 200 MiB freed by an ftruncate.) Once writes are quiet
 * (the WAL took less than a sixteenth of `keepBytes` over the last eight
 * looks) a file larger than `keepBytes` is given back: the same steps with
 * a TRUNCATE checkpoint, which leaves it empty.
 *
 * Failure mode: if the worker dies, checkpoints stop and the WAL grows; the
 * store notices (`error` event), logs it, and falls back to SQLite's own
 * automatic checkpoints on the main connection (and `journal_size_limit`
 * at `keepBytes`).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const Database = require(workerData.driver)
const db = new Database(workerData.path)
const BUSY_MS = 5000
const MAX_BACKOFF_MS = 30000
db.pragma('busy_timeout = ' + BUSY_MS)
const wal = workerData.path + '-wal'
// A WAL frame: a 24-byte header and a page.
const frameBytes = db.pragma('page_size', { simple: true }) + 24
// Writes are quiet once the WAL has taken less than a sixteenth of keepBytes over the last eight looks (2 s by
// default: under 2 MB/s, where a burst writes tens): a file grown past keepBytes is then given back.
const QUIET_LOOKS = 8
const quietBytes = workerData.keepBytes / 16
let busy = false
// The frames of the WAL the last RESTART left for the writer to start over: a look before the writer's next commit finds them again.
let leftAt = -1
// The WAL's frames at the last look, and the frames it took at each of the last QUIET_LOOKS looks.
let lastLog = -1
let recent = []
// After start-overs that gave up, the next waits longer each time (one that gave up in its RESTART held the writers back for up to restartWaitMs).
let failures = 0
let nextTry = 0
function tick () {
  if (busy) return
  busy = true
  try {
    let size = 0
    try { size = fs.statSync(wal).size } catch {}
    if (size < workerData.thresholdBytes) return
    // log: the frames the WAL holds since it last started over; checkpointed: how many of them are in the database.
    const [r] = db.pragma('wal_checkpoint(PASSIVE)')
    // (Fewer frames than at the last look: the WAL started over meanwhile.)
    recent.push(lastLog < 0 || r.log < lastLog ? r.log : r.log - lastLog)
    if (recent.length > QUIET_LOOKS) recent.shift()
    lastLog = r.log
    if (Date.now() < nextTry) return
    if (r.log * frameBytes >= workerData.restartBytes && r.log !== leftAt) startOver('RESTART', r.log)
    else if (size > workerData.keepBytes && r.checkpointed === r.log && quiet()) startOver('TRUNCATE', r.log)
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) })
  } finally {
    busy = false
  }
}
function quiet () {
  return recent.length === QUIET_LOOKS && recent.reduce((a, b) => a + b, 0) * frameBytes < quietBytes
}
// Shared with the store's threads (wal-hold.ts): writers hold off while HOLD_WRITERS is set, readers that take part while HOLD_READERS is.
const hold = new Int32Array(workerData.hold)
const HOLD_WRITERS = ${HOLD_WRITERS}
const HOLD_READERS = ${HOLD_READERS}
const FIRST_READER = ${FIRST_READER}
const LAST_READER = FIRST_READER + ${READER_SLOTS} - 1
// True when no reader that takes part is in a transaction (each has a slot: 1 while it is in one): wal-hold.ts's
// readersOut, written out here because this source runs in an eval'd worker that cannot import the module.
function readersOut () {
  for (let i = FIRST_READER; i <= LAST_READER; i++) if (Atomics.load(hold, i) !== 0) return false
  return true
}
// mode: RESTART (the WAL is past restartBytes: the writers start it over from its first frame, in the file as it is)
// or TRUNCATE (writes are quiet: the same, and the file is cut to nothing).
function startOver (mode, log) {
  const fd = fs.openSync(workerData.path, 'r')
  try { fs.fdatasyncSync(fd) } finally { fs.closeSync(fd) }
  const t0 = Date.now()
  const until = t0 + workerData.restartWaitMs
  let done = false
  let frames = log
  let heldMs = 0
  Atomics.store(hold, HOLD_READERS, 1)
  try {
    // The readers that take part finish the transactions they are in; writers go on meanwhile.
    // (A reader that finds the hold set steps back out at once; the look at every slot is repeated until none is in.)
    while (!readersOut() && Date.now() < until) {
      for (let i = FIRST_READER; i <= LAST_READER && Date.now() < until; i++) {
        if (Atomics.load(hold, i) !== 0) Atomics.wait(hold, i, 1, Math.max(1, until - Date.now()))
      }
    }
    if (readersOut()) {
      // No reader of ours in the WAL: this copies everything committed so far, writers still going on, and leaves the last frames to copy while they wait.
      db.pragma('wal_checkpoint(PASSIVE)')
      db.pragma('busy_timeout = ' + Math.max(1, until - Date.now()))
      const held = Date.now()
      Atomics.store(hold, HOLD_WRITERS, 1)
      try {
        const [r] = db.pragma('wal_checkpoint(' + mode + ')')
        done = r.busy === 0
        frames = r.log
      } finally {
        Atomics.store(hold, HOLD_WRITERS, 0)
        Atomics.notify(hold, HOLD_WRITERS)
        heldMs = Date.now() - held
      }
    }
  } finally {
    Atomics.store(hold, HOLD_READERS, 0)
    Atomics.notify(hold, HOLD_READERS)
    db.pragma('busy_timeout = ' + BUSY_MS)
  }
  if (done) {
    leftAt = mode === 'RESTART' ? frames : -1
    failures = 0
    nextTry = 0
    if (mode === 'TRUNCATE') {
      lastLog = -1
      recent = []
    }
  } else {
    failures++
    nextTry = Date.now() + Math.min(MAX_BACKOFF_MS, workerData.intervalMs * 2 ** failures)
  }
  parentPort.postMessage({ restart: { mode, done, frames, walMiB: Math.round(frames * frameBytes / 2 ** 20), ms: Date.now() - t0, heldMs } })
}
setInterval(tick, workerData.intervalMs)
`

export interface CheckpointerOptions extends CheckpointTuning {
  path: string
  logger: Logger
  onFailure: () => void
}

/** What a WAL file may keep of a burst's growth once writes are quiet (CheckpointTuning.keepBytes). */
export const DEFAULT_KEEP_BYTES = 64 * 2 ** 20

/** Start-overs given up in a row before the store warns (one that gives up in its RESTART has held writers back for up to `restartWaitMs`). */
const WARN_AFTER_GIVEN_UP = 5

export class Checkpointer {
  private readonly worker: Worker
  private stopped = false
  private givenUp = 0
  /** The flags a start-over shares with the store's writers and readers (wal-hold.ts). */
  private readonly hold = newWalHold()

  constructor (opts: CheckpointerOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        path: opts.path,
        driver,
        thresholdBytes: opts.thresholdBytes ?? 16 * 2 ** 20,
        restartBytes: opts.restartBytes ?? 256 * 2 ** 20,
        restartWaitMs: opts.restartWaitMs ?? 1000,
        intervalMs: opts.intervalMs ?? 250,
        keepBytes: opts.keepBytes ?? DEFAULT_KEEP_BYTES,
        hold: this.hold.buffer
      }
    })
    // The worker must not keep the process alive on its own.
    this.worker.unref()
    this.worker.on('message', (m: { error?: string, restart?: { mode: 'RESTART' | 'TRUNCATE', done: boolean, frames: number, walMiB: number, ms: number, heldMs: number } }) => {
      if (m.error !== undefined) opts.logger.warn('background checkpoint failed; retrying', { error: m.error })
      if (m.restart !== undefined) {
        const { mode, done, frames, walMiB, ms, heldMs } = m.restart
        // ms: the whole start-over; heldMs: the part that held writers back.
        opts.logger.debug(done ? (mode === 'TRUNCATE' ? 'WAL file cut back (writes quiet)' : 'WAL started over') : 'WAL start-over given up (a reader stayed); the next try waits longer', { frames, ms, heldMs })
        this.givenUp = done ? 0 : this.givenUp + 1
        // Once per run of failures: the WAL grows again until a start-over succeeds.
        if (this.givenUp === WARN_AFTER_GIVEN_UP) opts.logger.warn('the WAL cannot start over: a reader of the store stays in it, and it grows meanwhile', { attempts: this.givenUp, walMiB })
      }
    })
    this.worker.on('error', (err) => {
      this.release()
      if (this.stopped) return
      opts.logger.error('checkpoint worker died; falling back to automatic checkpoints', { err })
      opts.onFailure()
    })
  }

  /** Clears the holds a worker that died, or is being stopped, may have left set. */
  private release (): void {
    releaseHolds(this.hold)
  }

  /** The flags themselves, for the store's readers on other threads (search's index writer: side-file.ts, wal-hold.ts). */
  get holdBuffer (): SharedArrayBuffer {
    return this.hold.buffer as SharedArrayBuffer
  }

  /** True while the worker's RESTART runs (the store's writers hold off meanwhile). */
  holdsWrites (): boolean {
    return Atomics.load(this.hold, HOLD_WRITERS) !== 0
  }

  /** Teardown for `close()` (synchronous): the worker's connection dies with its thread; SQLite recovers nothing from it, since a PASSIVE checkpoint never leaves the database half written. */
  terminate (): void {
    if (this.stopped) return
    this.stopped = true
    void this.worker.terminate()
    this.release()
  }
}
