/**
 * The index writer's thread, seen from the merger: a thread that ends under
 * it (here closed behind its back) fails the job in hand; the staged roots
 * stay staged and a new thread takes the work a second later.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
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
    const files: WorkerInit = { indexPath: indexFileOf(path.join(t.dir, 'store.db')), storePath: path.join(t.dir, 'store.db'), excludePrefixes: [], marker: versionMarker([]), bucketShift: DEFAULT_BUCKET_SHIFT, cacheKiB: 2048, autocheckpointPages: 1000 }
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
})
