/**
 * The index writer's thread (see index-writer.ts): opens the index file,
 * attaches the store, reports what the index holds, then runs one job per
 * message, in the order sent, each a transaction of the index file, and
 * answers each with its result or its error. `close` closes the connection
 * and ends the thread once the job running (if any) has finished: jobs sent
 * before it and not started are dropped unanswered (the scheduler sends it
 * when it no longer waits for them, and their roots stay staged).
 *
 * A batch takes, when it starts, the `extend` messages for it that have
 * reached the thread (roots staged after it was sent), and its answer says
 * how many; an `extend` for a batch already run is dropped (the scheduler
 * frees those roots when it reads that answer).
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import { openSideFile } from '../kv/index.js'
import { IndexWriter, type JobResult } from './index-writer.js'
import type { IndexJob, WorkerInit, WorkerMessage, WorkerReply } from './index-worker-client.js'

const init = workerData as WorkerInit
const port = parentPort!
// FULL: a batch's commit is on disk before the store unstages its roots (one fsync per batch).
const db = openSideFile({
  path: init.indexPath,
  store: { path: init.storePath, as: 'store' },
  synchronous: 'FULL',
  cacheKiB: init.cacheKiB,
  autocheckpointPages: init.autocheckpointPages,
  ...(init.storeHold === undefined || init.storeReaderSlot === undefined ? {} : { storeReader: { hold: init.storeHold, slot: init.storeReaderSlot } })
})
const writer = new IndexWriter(db, init.excludePrefixes, init.marker, init.bucketShift)
const reply = (m: WorkerReply): void => { port.postMessage(m) }
reply({ type: 'ready', info: writer.info })

function run (job: IndexJob): JobResult {
  switch (job.type) {
    case 'batch': {
      const [rids, extra] = withExtensions(job.rids, job.gen)
      return { ...writer.batch(rids, job.gen), extra }
    }
    case 'clear': return writer.clear(job.id, job.gen)
    case 'rebuild': return writer.rebuildStep(job.after, job.n, job.upTo)
    case 'sweep': return writer.sweepStep()
    case 'renumber': return writer.renumberStep(job.n)
  }
}

/** Messages taken in and not yet handled, in the order they came. */
const queue: WorkerMessage[] = []

/** Takes every message that has reached the thread into the queue, without waiting for its event. */
function takeArrived (): void {
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) queue.push(m.message as WorkerMessage)
}

/** A batch's roots with those of the `extend` messages for it that have come (sorted), and how many of those there were. */
function withExtensions (rids: readonly string[], gen: number): [readonly string[], number] {
  takeArrived()
  let all: string[] | undefined
  let extra = 0
  for (let i = 0; i < queue.length;) {
    const m = queue[i]
    if ('type' in m && m.type === 'extend' && m.gen === gen) {
      all ??= [...rids]
      for (const r of m.rids) all.push(r)
      extra++
      queue.splice(i, 1)
    } else {
      i++
    }
  }
  return all === undefined ? [rids, 0] : [all.sort(), extra]
}

function handle (m: WorkerMessage): void {
  // An `extend` left here is for a batch already run.
  if ('type' in m) return
  try {
    reply({ type: 'done', seq: m.seq, result: run(m.job) })
  } catch (err) {
    reply({ type: 'failed', seq: m.seq, message: err instanceof Error ? err.message : String(err) })
  }
}

port.on('message', (m: WorkerMessage) => {
  queue.push(m)
  // A batch takes messages from the port into the queue while it runs; a close waits for no job not yet started.
  for (takeArrived(); queue.length > 0; takeArrived()) {
    if (queue.some(x => 'type' in x && x.type === 'close')) {
      queue.length = 0
      db.close()
      port.close()
      return
    }
    handle(queue.shift()!)
  }
})
