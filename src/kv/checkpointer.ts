import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { Logger } from '../common/index.js'

/**
 * Runs WAL checkpoints on a worker thread with its own connection, so the
 * write path never pays for them. With SQLite's automatic checkpoint, every
 * ~1000 pages a COMMIT would copy the WAL into the database file and fsync it
 * twice (synchronous=NORMAL), stalling the event loop; measured on ingest that
 * was about half of all commit time. A PASSIVE checkpoint never blocks the
 * writer, and the writer restarts the WAL from the top once a checkpoint has
 * caught up, so the WAL stays bounded.
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
db.pragma('busy_timeout = 5000')
const wal = workerData.path + '-wal'
let busy = false
function tick () {
  if (busy) return
  busy = true
  try {
    let size = 0
    try { size = fs.statSync(wal).size } catch {}
    if (size >= workerData.thresholdBytes) db.pragma('wal_checkpoint(PASSIVE)')
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) })
  } finally {
    busy = false
  }
}
setInterval(tick, workerData.intervalMs)
`

export interface CheckpointerOptions {
  path: string
  /** Checkpoint once the WAL is this large (default 16 MiB). */
  thresholdBytes?: number
  /** How often the worker looks at the WAL size (default 250 ms). */
  intervalMs?: number
  logger: Logger
  onFailure: () => void
}

export class Checkpointer {
  private readonly worker: Worker
  private stopped = false

  constructor (opts: CheckpointerOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: opts.path, driver, thresholdBytes: opts.thresholdBytes ?? 16 * 2 ** 20, intervalMs: opts.intervalMs ?? 250 }
    })
    // The worker must not keep the process alive on its own.
    this.worker.unref()
    this.worker.on('message', (m: { error?: string }) => {
      if (m.error !== undefined) opts.logger.warn('background checkpoint failed; retrying', { error: m.error })
    })
    this.worker.on('error', (err) => {
      if (this.stopped) return
      opts.logger.error('checkpoint worker died; falling back to automatic checkpoints', { err })
      opts.onFailure()
    })
  }

  /** Teardown for `close()` (synchronous): the worker's connection dies with its thread; SQLite recovers nothing from it, since a PASSIVE checkpoint never leaves the database half written. */
  terminate (): void {
    if (this.stopped) return
    this.stopped = true
    void this.worker.terminate()
  }
}
