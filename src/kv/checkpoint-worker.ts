/**
 * The checkpointer's thread (started by checkpointer.ts, which explains
 * why): its own connection to the store, a look at the WAL every
 * `intervalMs`, a PASSIVE checkpoint past `thresholdBytes`, and the
 * start-over of the WAL (RESTART past `restartBytes`, TRUNCATE once writes
 * are quiet and the file is larger than `keepBytes`) under the holds it
 * shares with the store's threads (wal-hold.ts).
 */
import fs from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { WalHold } from './wal-hold.js'

export interface CheckpointWorkerData {
  path: string
  thresholdBytes: number
  restartBytes: number
  restartWaitMs: number
  intervalMs: number
  keepBytes: number
  hold: SharedArrayBuffer
}

type StartOverMode = 'RESTART' | 'TRUNCATE'

/** What the thread tells the store: a checkpoint that failed (it goes on looking), or how a start-over went. */
export type CheckpointMessage =
  | { error: string, restart?: undefined }
  | { error?: undefined, restart: { mode: StartOverMode, done: boolean, frames: number, walMiB: number, ms: number, heldMs: number } }

/** How long the thread's statements wait for a lock outside a start-over. */
const BUSY_MS = 5000
/** The longest wait after start-overs that gave up before the next try. */
const MAX_BACKOFF_MS = 30_000
/** Looks over which the WAL must take less than a sixteenth of keepBytes for writes to count as quiet (2 s at the default interval). */
const QUIET_LOOKS = 8

const d = workerData as CheckpointWorkerData
const port = parentPort!
const db = new Database(d.path)
db.pragma(`busy_timeout = ${BUSY_MS}`)
const wal = `${d.path}-wal`
// A WAL frame: a 24-byte header and a page.
const frameBytes = (db.pragma('page_size', { simple: true }) as number) + 24
// Writes are quiet under a sixteenth of keepBytes over the last eight looks (under 2 MB/s, where a burst writes tens).
const quietBytes = d.keepBytes / 16
const hold = WalHold.of(d.hold)

let busy = false
/** The frames of the WAL the last RESTART left for the writer to start over: a look before the writer's next commit finds them again. */
let leftAt = -1
/** The WAL's frames at the last look, and the frames it took at each of the last QUIET_LOOKS looks. */
let lastLog = -1
let recent: number[] = []
/** After start-overs that gave up, the next waits longer each time (one that gave up in its RESTART held writers back for up to restartWaitMs). */
let failures = 0
let nextTry = 0

interface CheckpointRow { busy: number, log: number, checkpointed: number }

function checkpoint (mode: 'PASSIVE' | StartOverMode): CheckpointRow {
  return (db.pragma(`wal_checkpoint(${mode})`) as CheckpointRow[])[0]
}

function tick (): void {
  if (busy) return
  busy = true
  try {
    let size = 0
    try { size = fs.statSync(wal).size } catch {}
    if (size < d.thresholdBytes) return
    // log: the frames the WAL holds since it last started over; checkpointed: how many of them are in the database.
    const r = checkpoint('PASSIVE')
    // (Fewer frames than at the last look: the WAL started over meanwhile.)
    recent.push(lastLog < 0 || r.log < lastLog ? r.log : r.log - lastLog)
    if (recent.length > QUIET_LOOKS) recent.shift()
    lastLog = r.log
    if (Date.now() < nextTry) return
    if (r.log * frameBytes >= d.restartBytes && r.log !== leftAt) startOver('RESTART', r.log)
    else if (size > d.keepBytes && r.checkpointed === r.log && quiet()) startOver('TRUNCATE', r.log)
  } catch (err) {
    port.postMessage({ error: String((err as Error)?.message ?? err) } satisfies CheckpointMessage)
  } finally {
    busy = false
  }
}

function quiet (): boolean {
  return recent.length === QUIET_LOOKS && recent.reduce((a, b) => a + b, 0) * frameBytes < quietBytes
}

/**
 * RESTART: the WAL is past restartBytes, the writers start it over from its
 * first frame, in the file as it is. TRUNCATE: writes are quiet, the same,
 * and the file is cut to nothing.
 */
function startOver (mode: StartOverMode, log: number): void {
  // Step 1: flush what the passive checkpoints copied, holding no lock, so the sync inside the last step is short.
  const fd = fs.openSync(d.path, 'r')
  try { fs.fdatasyncSync(fd) } finally { fs.closeSync(fd) }
  const t0 = Date.now()
  const until = t0 + d.restartWaitMs
  let done = false
  let frames = log
  let heldMs = 0
  hold.holdReaders()
  try {
    // Step 2: the readers that take part finish the transactions they are in; writers go on meanwhile.
    if (hold.waitReadersOut(until)) {
      // Step 3: no reader of ours in the WAL: this copies everything committed so far, writers still going on.
      checkpoint('PASSIVE')
      db.pragma(`busy_timeout = ${Math.max(1, until - Date.now())}`)
      const held = Date.now()
      // Step 4: writers hold off; the checkpoint takes the write lock once the running transaction commits.
      hold.holdWriters()
      try {
        const r = checkpoint(mode)
        done = r.busy === 0
        frames = r.log
      } finally {
        hold.releaseWriters()
        heldMs = Date.now() - held
      }
    }
  } finally {
    // Step 5.
    hold.release()
    db.pragma(`busy_timeout = ${BUSY_MS}`)
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
    nextTry = Date.now() + Math.min(MAX_BACKOFF_MS, d.intervalMs * 2 ** failures)
  }
  port.postMessage({ restart: { mode, done, frames, walMiB: Math.round(frames * frameBytes / 2 ** 20), ms: Date.now() - t0,
    heldMs } } satisfies CheckpointMessage)
}

setInterval(tick, d.intervalMs)
