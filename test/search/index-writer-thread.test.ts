/**
 * The index writer's thread, seen from the merger: a thread that ends under
 * it (here closed behind its back) fails the job in hand; the staged roots
 * stay staged and a new thread takes the work a second later. And seen from
 * the store's WAL: a thread terminated inside a transaction leaves no mark
 * in the start-over flags.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor } from '../../src/common/index.js'
import { READERS_TAKEN, WalHold } from '../../src/kv/wal-hold.js'
import { formatHlc, newRecordId, openNodeStore, type NodeStore, type RemoteEntry } from '../../src/records/index.js'
import { IndexWorker, type WorkerInit } from '../../src/search/index-worker-client.js'
import { makeExcluder } from '../../src/search/matchers.js'
import { Merger } from '../../src/search/merger.js'
import { PendingRoots } from '../../src/search/pending-roots.js'
import { DEFAULT_BUCKET_SHIFT, INDEX_SCHEMA, ensureStoreSchema, indexFileOf, versionMarker } from '../../src/search/search-schema.js'
import { tmpDir } from '../helpers/tmp.js'

let cleanup: (() => Promise<void>) | undefined
afterEach(async () => { await cleanup?.(); cleanup = undefined })

describe('index writer thread', () => {
  it('starts a new thread when the one in use has ended, and indexes what stayed staged', async () => {
    const t = tmpDir('mc-thread-')
    const s: NodeStore = openNodeStore({ path: path.join(t.dir, 'store.db'), nodeId: 'n' })
    ensureStoreSchema(s.kv)
    const files: WorkerInit = { indexPath: indexFileOf(path.join(t.dir, 'store.db')), storePath: path.join(t.dir, 'store.db'), excludePrefixes: [],
      marker: versionMarker([]), bucketShift: DEFAULT_BUCKET_SHIFT, cacheKiB: 2048, autocheckpointPages: 1000 }
    const first = await IndexWorker.start(files)
    s.kv.prepare(`ATTACH DATABASE ? AS ${INDEX_SCHEMA}`).run(files.indexPath)
    const pending = new PendingRoots(s.kv, makeExcluder([]))
    s.records.addIndexer(pending)
    pending.load()
    const started: IndexWorker[] = []
    const lines: string[] = []
    const merger = new Merger({
      kv: s.kv,
      records: s.records,
      pending,
      worker: first,
      startWorker: async () => { const w = await IndexWorker.start(files); started.push(w); return w },
      docs: 0,
      orphanDocs: 0,
      span: 0,
      bucketDocs: 2 ** DEFAULT_BUCKET_SHIFT,
      gen: 0,
      indexId: 'test-index',
      logger: createLogger({ level: 'error', write: l => { lines.push(l) } })
    }, { delayMs: 3_600_000 })
    cleanup = async () => { await merger.stop(); s.close(); t.cleanup() }
    merger.startRebuild('test')
    await merger.whenIdle()
    expect(started).toHaveLength(0)

    await first.close() // the thread ends behind the merger's back
    expect(first.dead).toBe(true)
    for (let i = 0; i < 5; i++) await s.records.mint(`/files/t/${i}.mkv`, i, i, { title: `thread ${i}` })
    expect(pending.size).toBe(5)
    const t0 = Date.now()
    await merger.whenIdle()
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900) // the retry waits a second
    expect(lines.some(l => l.includes('the index writer stopped'))).toBe(true)
    expect(started).toHaveLength(1)
    expect(pending.size).toBe(0)
    const docs = s.kv.prepare(`SELECT count(*) FROM ${INDEX_SCHEMA}.search_doc`).pluck().get()
    expect(docs).toBe(5)
  })

  it('gives its reader slot in the store\'s start-over flags back when it is terminated inside a transaction, and the WAL starts over again', async () => {
    const t = tmpDir('mc-thread-')
    const file = path.join(t.dir, 'store.db')
    const lines: string[] = []
    // Start-overs past 2 MiB of WAL, each giving up on a reader after 200 ms.
    const s: NodeStore = openNodeStore({
      path: file,
      nodeId: 'n',
      checkpoint: { thresholdBytes: 256 * 1024, restartBytes: 2 * 2 ** 20, keepBytes: 2 ** 20, restartWaitMs: 200, intervalMs: 20 },
      logger: createLogger({ level: 'debug', write: l => { lines.push(l) } })
    })
    ensureStoreSchema(s.kv)
    const baseMs = Date.now() - 100_000
    const entries: RemoteEntry[] = []
    for (let i = 0; i < 4000; i++) {
      const rid = newRecordId(baseMs + i)
      const hlc = formatHlc({ ms: baseMs + i, counter: 0 })
      for (const [f, v] of Object.entries({ title: `Stone ${i}`, year: String(2000 + (i % 9)),
        path: `/files/s/${i}.mkv` })) entries.push({ key: `file:${rid}/${f}`, value: v, hlc, origin: 'peer-b' })
    }
    await s.records.applyBatch(entries)
    const hold = new Int32Array(s.kv.walHold()!)
    const readersOut = (): boolean => WalHold.of(s.kv.walHold()!).readersOut()
    const w = await IndexWorker.start({ indexPath: indexFileOf(file), storePath: file, excludePrefixes: [], marker: versionMarker([]),
      bucketShift: DEFAULT_BUCKET_SHIFT, cacheKiB: 2048, autocheckpointPages: 1000, storeHold: s.kv.walHold() })
    cleanup = async () => { await w.close(); s.close(); t.cleanup() }
    expect(Atomics.load(hold, READERS_TAKEN)).not.toBe(0)

    // One rebuild step over every root: one long transaction. Once the thread is in it, it is terminated.
    const job = w.run({ type: 'rebuild', after: '', n: 100_000 })
    await waitFor(() => !readersOut(), { timeoutMs: 10_000, intervalMs: 1, what: 'the index writer inside its rebuild transaction' })
    await w.close(1)
    await expect(job).rejects.toThrow('search index writer')
    // Its slot is marked out and free again.
    expect(readersOut()).toBe(true)
    expect(Atomics.load(hold, READERS_TAKEN)).toBe(0)

    // Writes past the threshold: the WAL starts over, instead of every start-over waiting for the thread and giving up.
    const from = lines.length
    const startedOver = (): boolean => lines.slice(from).some(l => l.includes('WAL started over'))
    const value = 'x'.repeat(1000)
    let n = 0
    const deadline = Date.now() + 10_000
    while (!startedOver() && Date.now() < deadline) {
      // Each write waits for its commit, so the event loop turns between them and the checkpointer's lines (messages from its thread) come in.
      await s.kv.write(tx => { for (let i = 0; i < 64; i++) tx.put(`k/${String(n++).padStart(9, '0')}`, value) })
    }
    expect(startedOver()).toBe(true)
  }, 60_000)
})
