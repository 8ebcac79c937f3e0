/**
 * The index writer's thread (see index-writer.ts): opens the index file,
 * attaches the store, reports what the index holds, then runs one job per
 * message, each a transaction of the index file, and answers each with its
 * result or its error. `close` closes the connection and ends the thread.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { openSideFile } from '../kv/index.js'
import { IndexWriter, type JobResult } from './index-writer.js'
import type { IndexJob, WorkerInit, WorkerReply } from './index-worker-client.js'

const init = workerData as WorkerInit
const port = parentPort!
// FULL: a batch's commit is on disk before the store unstages its roots (one fsync per batch).
const db = openSideFile({
  path: init.indexPath, store: { path: init.storePath, as: 'store' }, synchronous: 'FULL', cacheKiB: init.cacheKiB, autocheckpointPages: init.autocheckpointPages
})
const writer = new IndexWriter(db, init.excludePrefixes, init.marker, init.bucketShift)
const reply = (m: WorkerReply): void => { port.postMessage(m) }
reply({ type: 'ready', info: writer.info })

function run (job: IndexJob): JobResult {
  switch (job.type) {
    case 'batch': return writer.batch(job.rids, job.gen)
    case 'clear': return writer.clear(job.id, job.gen)
    case 'rebuild': return writer.rebuildStep(job.after, job.n)
    case 'sweep': return writer.sweepStep()
    case 'renumber': return writer.renumberStep(job.n)
  }
}

port.on('message', (m: { seq: number, job: IndexJob } | { type: 'close' }) => {
  if ('type' in m) {
    db.close()
    port.close()
    return
  }
  try {
    reply({ type: 'done', seq: m.seq, result: run(m.job) })
  } catch (err) {
    reply({ type: 'failed', seq: m.seq, message: err instanceof Error ? err.message : String(err) })
  }
})
