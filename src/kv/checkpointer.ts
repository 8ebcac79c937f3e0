import fs from 'node:fs'
import type { Worker } from 'node:worker_threads'
import { startModuleWorker, workerModule, type Logger } from '../common/index.js'
import type { CheckpointMessage, CheckpointWorkerData } from './checkpoint-worker.js'
import type { CheckpointTuning } from './types.js'
import { WalHold } from './wal-hold.js'

/**
 * Runs WAL checkpoints on a worker thread (checkpoint-worker.ts) with its own connection, so the
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
 * The thread starts once the WAL first holds half of `thresholdBytes`
 * (looked at, at most every START_LOOK_MS, before a group commit; at open
 * for a WAL left large): a store that writes little never pays for a
 * thread (about 250 ms of CPU to boot it from TypeScript sources, which a
 * node returning to its mesh would otherwise pay while it catches up), and
 * the flags exist from the start, for readers on other threads.
 *
 * Failure mode: if the worker dies, checkpoints stop and the WAL grows; the
 * store notices (`error` event), logs it, and falls back to SQLite's own
 * automatic checkpoints on the main connection (and `journal_size_limit`
 * at `keepBytes`).
 */
interface CheckpointerOptions extends CheckpointTuning {
  path: string
  logger: Logger
  onFailure: () => void
  /** The clock the thread's start is looked for by (at most every START_LOOK_MS; the store's `now`). */
  now: () => number
}

const CHECKPOINT_WORKER = workerModule('checkpoint-worker', import.meta.url)

/** What a WAL file may keep of a burst's growth once writes are quiet (CheckpointTuning.keepBytes). */
export const DEFAULT_KEEP_BYTES = 64 * 2 ** 20

/** Start-overs given up in a row before the store warns (one that gives up in its RESTART has held writers back for up to `restartWaitMs`). */
const WARN_AFTER_GIVEN_UP = 5

/** How often, at most, a store without its thread yet looks at the WAL's size (a stat). */
const START_LOOK_MS = 100

export class Checkpointer {
  private worker: Worker | undefined
  private stopped = false
  private givenUp = 0
  /** The flags a start-over shares with the store's writers and readers (wal-hold.ts). */
  private readonly hold = WalHold.create()
  private readonly data: CheckpointWorkerData
  private readonly wal: string
  /** The WAL's size at which the thread starts. */
  private readonly startBytes: number
  private lastLook = 0

  constructor (private readonly opts: CheckpointerOptions) {
    this.data = {
      path: opts.path,
      thresholdBytes: opts.thresholdBytes ?? 16 * 2 ** 20,
      restartBytes: opts.restartBytes ?? 256 * 2 ** 20,
      restartWaitMs: opts.restartWaitMs ?? 1000,
      intervalMs: opts.intervalMs ?? 250,
      keepBytes: opts.keepBytes ?? DEFAULT_KEEP_BYTES,
      hold: this.hold.buffer
    }
    this.wal = `${opts.path}-wal`
    this.startBytes = Math.floor(this.data.thresholdBytes / 2)
    this.look()
  }

  /** True once the thread runs (for tests and diagnostics). */
  get started (): boolean {
    return this.worker !== undefined
  }

  /** Starts the thread if the WAL has grown to where it has work. */
  private look (): void {
    this.lastLook = this.opts.now()
    let size = 0
    try {
      size = fs.statSync(this.wal).size
    } catch {
      return // no WAL file yet
    }
    if (size >= this.startBytes) this.start(size)
  }

  private start (walBytes: number): void {
    const opts = this.opts
    opts.logger.debug('checkpoint thread started', { walMiB: Math.round(walBytes / 2 ** 20 * 10) / 10 })
    const worker = this.worker = startModuleWorker(CHECKPOINT_WORKER, this.data)
    // The worker must not keep the process alive on its own.
    worker.unref()
    worker.on('message', (m: CheckpointMessage) => {
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
    worker.on('error', (err) => {
      this.release()
      if (this.stopped) return
      opts.logger.error('checkpoint worker died; falling back to automatic checkpoints', { err })
      opts.onFailure()
    })
  }

  /** Clears the holds a worker that died, or is being stopped, may have left set. */
  private release (): void {
    this.hold.release()
  }

  /** The flags themselves, for the store's readers on other threads (search's index writer: side-file.ts, wal-hold.ts). */
  get holdBuffer (): SharedArrayBuffer {
    return this.hold.buffer
  }

  /**
   * True while the worker's RESTART runs (the store's writers hold off
   * meanwhile). Asked before every group commit, so it is also where a
   * store without its thread yet looks, now and then, whether the WAL calls
   * for one.
   */
  holdsWrites (): boolean {
    if (this.worker === undefined && !this.stopped && this.opts.now() - this.lastLook >= START_LOOK_MS) this.look()
    return this.hold.writersHeld()
  }

  /**
   * Teardown for `close()` (synchronous): the worker's connection dies with its thread; SQLite recovers nothing from it, since a PASSIVE
   * checkpoint never leaves the database half written.
   */
  terminate (): void {
    if (this.stopped) return
    this.stopped = true
    void this.worker?.terminate()
    this.release()
  }
}
