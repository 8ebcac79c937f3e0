import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { Logger } from '../common/index.js'
import type { CheckpointTuning } from './types.js'

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
 * `restartBytes` since it last started over, the worker flushes what its
 * passive checkpoints copied (an fdatasync, holding no lock) and runs a
 * RESTART checkpoint: it takes the write lock, copies the last frames,
 * waits for the readers to leave the WAL, and starts it over. Meanwhile a
 * flag shared with the store's writers (`hold`) keeps them from starting
 * transactions (group-commit.ts), so the lock is free once the one running
 * now commits, and keeps search's index writer from starting its next one
 * (side-file.ts), so the reader still in the WAL leaves it. A start-over
 * that cannot finish within `restartWaitMs` gives up, and the next one
 * waits twice as long as the last (from one look's interval to 30 s), so
 * a reader that stays in the WAL holds writers back a few per cent of the
 * time at most; five in a row log a warning.
 * `journal_size_limit` on the writer's connection (kv-store.ts) then cuts
 * the file back.
 *
 * Failure mode: if the worker dies, checkpoints stop and the WAL grows; the
 * store notices (`error` event), logs it, and falls back to SQLite's own
 * automatic checkpoints on the main connection.
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
let busy = false
// The frames of the WAL the last RESTART left for the writer to start over: a look before the writer's next commit finds them again.
let leftAt = -1
// After start-overs that gave up, the next waits longer each time (each held the writers back for up to restartWaitMs).
let failures = 0
let nextTry = 0
function tick () {
  if (busy) return
  busy = true
  try {
    let size = 0
    try { size = fs.statSync(wal).size } catch {}
    if (size < workerData.thresholdBytes) return
    // log: the frames the WAL holds since it last started over.
    const [r] = db.pragma('wal_checkpoint(PASSIVE)')
    if (r.log * frameBytes >= workerData.restartBytes && r.log !== leftAt && Date.now() >= nextTry) restart()
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) })
  } finally {
    busy = false
  }
}
// Set while a RESTART runs: the store's writers hold off meanwhile (group-commit.ts), so it gets the write lock at the end of the transaction running now.
const hold = new Int32Array(workerData.hold)
function restart () {
  const fd = fs.openSync(workerData.path, 'r')
  try { fs.fdatasyncSync(fd) } finally { fs.closeSync(fd) }
  const t0 = Date.now()
  db.pragma('busy_timeout = ' + workerData.restartWaitMs)
  Atomics.store(hold, 0, 1)
  try {
    const [r] = db.pragma('wal_checkpoint(RESTART)')
    if (r.busy === 0) {
      leftAt = r.log
      failures = 0
      nextTry = 0
    } else {
      failures++
      nextTry = Date.now() + Math.min(MAX_BACKOFF_MS, workerData.intervalMs * 2 ** failures)
    }
    parentPort.postMessage({ restart: { done: r.busy === 0, frames: r.log, walMiB: Math.round(r.log * frameBytes / 2 ** 20), ms: Date.now() - t0 } })
  } finally {
    Atomics.store(hold, 0, 0)
    Atomics.notify(hold, 0)
    db.pragma('busy_timeout = ' + BUSY_MS)
  }
}
setInterval(tick, workerData.intervalMs)
`

export interface CheckpointerOptions extends CheckpointTuning {
  path: string
  logger: Logger
  onFailure: () => void
}

/** Start-overs given up in a row before the store warns (each has held writers back for up to `restartWaitMs`). */
const WARN_AFTER_GIVEN_UP = 5

export class Checkpointer {
  private readonly worker: Worker
  private stopped = false
  private givenUp = 0
  /** Non-zero while the worker starts the WAL over: writers hold off. */
  private readonly hold = new Int32Array(new SharedArrayBuffer(4))

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
        hold: this.hold.buffer
      }
    })
    // The worker must not keep the process alive on its own.
    this.worker.unref()
    this.worker.on('message', (m: { error?: string, restart?: { done: boolean, frames: number, walMiB: number, ms: number } }) => {
      if (m.error !== undefined) opts.logger.warn('background checkpoint failed; retrying', { error: m.error })
      if (m.restart !== undefined) {
        const { done, frames, walMiB, ms } = m.restart
        opts.logger.debug(done ? 'WAL started over' : 'WAL start-over given up (a reader stayed); the next try waits longer', { frames, ms })
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

  /** Clears the hold a worker that died, or is being stopped, may have left set. */
  private release (): void {
    Atomics.store(this.hold, 0, 0)
    Atomics.notify(this.hold, 0)
  }

  /** The flag itself, for the store's readers on other threads (search's index writer: side-file.ts). */
  get holdBuffer (): SharedArrayBuffer {
    return this.hold.buffer as SharedArrayBuffer
  }

  /** True while the worker starts the WAL over (the store's writers hold off meanwhile). */
  holdsWrites (): boolean {
    return Atomics.load(this.hold, 0) !== 0
  }

  /** Teardown for `close()` (synchronous): the worker's connection dies with its thread; SQLite recovers nothing from it, since a PASSIVE checkpoint never leaves the database half written. */
  terminate (): void {
    if (this.stopped) return
    this.stopped = true
    void this.worker.terminate()
    this.release()
  }
}
