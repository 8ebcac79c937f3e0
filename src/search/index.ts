/**
 * search: the field index and the FTS table over the kv rows, the query
 * planner and the matchers behind POST /api/metadata/search and
 * GET /api/metadata/list.
 *
 * Guarantees:
 * - Answers equal those of the scan-everything reference (referenceSearch, in testing.ts):
 *   SQL only narrows the candidates, the matchers decide, and queries the
 *   indexes cannot serve (tokens under 3 characters) fall back to scans.
 * - Fresh (read-your-writes): a record write stages its root in the same
 *   transaction (pending-roots.ts), and until the merger has indexed it a
 *   query ignores its entries and checks it on the kv rows. So a write
 *   acknowledged before a search starts is found, and a changed or deleted
 *   value is no longer matched, whether or not it has been merged yet.
 * - Off the commit, and off the node's thread: the index entries and FTS
 *   rows live in an index file beside the store (`<store>-search`), written
 *   in sorted batches by the index writer on a worker thread with its own
 *   connection (index-writer.ts), scheduled by the merger (merger.ts, its
 *   decisions in merge-plan.ts, its hold on the thread in
 *   index-writer-host.ts), so
 *   group commits and indexing never wait for each other; writers wait
 *   only when the staged backlog reaches its bound.
 * - A group (roots sharing a CID) is one result and one count, under its
 *   canonical root, matched and shown with the merged document.
 * - Fields under the excluded prefixes never match and never show.
 * - Rebuildable and crash-safe: every structure is derived from the kv
 *   rows. A crash leaves staged roots staged (the next open merges them);
 *   changes made while search was not attached are found in the change log
 *   since the mark the merger keeps and staged at open; an index file of
 *   another format, missing, of another store or not level with the store,
 *   or a store whose log no longer reaches back to the mark, is rebuilt
 *   (in the background for large stores, answering correctly meanwhile by
 *   reading every record).
 *
 * One search service per RecordStore: it registers its record hook once.
 * The record layout's key names come from search-schema.ts only (a lint rule
 * in eslint.config.js keeps it so); what tests tune is `SearchInit.internal`.
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { MetaCoreError, silentLogger, type Startable } from '../common/index.js'
import type { KvStore } from '../kv/index.js'
import { recordRows, type EventId, type IndexedRecords } from '../records/index.js'
import { SearchNotStartedError } from './errors.js'
import { FieldIndex } from './field-index.js'
import { FtsIndex } from './fts-index.js'
import { IndexedSearch, type QueryPlan } from './indexed-search.js'
import { DEFAULT_EXCLUDE_PREFIXES, makeExcluder } from './matchers.js'
import { MAX_BATCHES_IN_FLIGHT, Merger } from './merger.js'
import { PendingRoots } from './pending-roots.js'
import { GroupCache } from './record-views.js'
import { RootIndex } from './root-index.js'
import { IndexWorker, type WorkerInit } from './index-worker-client.js'
import {
  DEFAULT_BUCKET_SHIFT, INDEX_SCHEMA, STATE_BULK, STATE_GEN, STATE_ID, STATE_LOG_MARK, ensureStoreSchema, indexFileOf, indexSchemaDiff, readIndexInfo,
    versionMarker, type IndexInfo
} from './search-schema.js'
import { TrigramStats } from './trigram-stats.js'
import type { SearchComponents, SearchInit, SearchRequest, SearchResponse, SearchService } from './types.js'

export type * from './types.js'
export { InvalidSearchRequestError, SearchNotStartedError } from './errors.js'
export { MAX_LIMIT } from './normalize-request.js'
export { fold } from './fold.js'

/** Stores with at most this many roots are brought up to date synchronously at start (well under a second). */
const SYNC_REPAIR_MAX_ROOTS = 2000
/** The index writer's page cache (KiB). */
const INDEX_CACHE_KIB = 32_768
/**
 * The index file's WAL is checkpointed past this many pages (about 40 MiB)
 * rather than SQLite's 1,000: batches rewrite the pages of the newest
 * buckets, and each checkpoint copies a page once however many commits
 * rewrote it since the last (docs/storage.md, D3).
 */
const INDEX_AUTOCHECKPOINT_PAGES = 10_000
/** More roots than this changed while search was not attached: a rebuild (in the background) rather than a backlog writers would wait on. */
const MAX_REPLAY_ROOTS = 4000

/** The service plus its lifecycle and what tests and benchmarks look at. */
export interface Search extends SearchService, Startable {
  /** Settles once no rebuild runs (rejects if search stops first). */
  whenReady: () => Promise<void>
  /** Settles once every staged root is indexed and no rebuild runs; merges without waiting for a batch to fill meanwhile. */
  whenIdle: () => Promise<void>
  stop: () => Promise<void>
  /** search() and the plan it used. */
  explain: (req: SearchRequest) => { response: SearchResponse, plan?: QueryPlan }
  /** FTS rows now (one per indexed record). */
  ftsRowCount: () => number
  /** Roots changed and not indexed yet. */
  pendingCount: () => number
  /** True while the index writer's thread runs: it starts with work and ends after a while without. */
  indexWriterRunning: () => boolean
}

interface Running {
  engine: IndexedSearch
  merger: Merger
  pending: PendingRoots
}

const attached = new WeakSet<IndexedRecords>()

/**
 * Creates the search service over a record store. Nothing touches the store
 * until `start()`: it creates the search structures, registers the record
 * hook (once for the store's life), stages the records changed while it was
 * not attached (from the change log) or rebuilds, and brings the structures
 * up to date (synchronously for a small store, in the background for a large
 * one). Queries need a started service.
 */
export function createSearch (components: SearchComponents, init: SearchInit = {}): Search {
  const { kv, records } = components
  const log = components.logger ?? silentLogger
  const internal = init.internal ?? {}
  const bucketShift = internal.bucketShift ?? DEFAULT_BUCKET_SHIFT
  if (!Number.isInteger(bucketShift) || bucketShift < 0 || bucketShift > 30) {
    throw new MetaCoreError('invalid_search_option', `bucketShift must be an integer from 0 to 30, got ${String(internal.bucketShift)}`)
  }
  if (attached.has(records)) throw new MetaCoreError('search_already_attached', 'a search service is already attached to this record store')
  attached.add(records)
  const excludePrefixes = (init.excludePrefixes ?? DEFAULT_EXCLUDE_PREFIXES).filter(p => p.length > 0)
  const excluded = makeExcluder(excludePrefixes)
  const marker = versionMarker(excludePrefixes, bucketShift)
  let hook: PendingRoots | undefined
  let running: Running | undefined
  let starting: Promise<Running> | undefined

  const start = async (): Promise<Running> => {
    if (kv.path === ':memory:') throw new MetaCoreError('search_needs_file', 'search keeps its index in a file beside the store: it needs a store file, not :memory:')
    ensureStoreSchema(kv)
    const storePath = path.resolve(kv.path)
    const files: WorkerInit = {
      indexPath: indexFileOf(storePath), storePath, excludePrefixes, marker, bucketShift, cacheKiB: INDEX_CACHE_KIB,
        autocheckpointPages: INDEX_AUTOCHECKPOINT_PAGES, storeHold: kv.walHold()
    }
    const startWorker = async (): Promise<IndexWorker> => await IndexWorker.start(files)
    // A missing index file is created by its writer (in WAL mode, with its tables) before the store's connection attaches it.
    let worker = fs.existsSync(files.indexPath) ? undefined : await startWorker()
    try {
      const attachedNow = kv.prepare('SELECT name FROM pragma_database_list').pluck().all() as string[]
      if (!attachedNow.includes(INDEX_SCHEMA)) kv.prepare(`ATTACH DATABASE ? AS ${INDEX_SCHEMA}`).run(files.indexPath)
      // Tables to create or recreate: the writer does it. Otherwise no thread runs until there is work.
      if (worker === undefined && indexSchemaDiff(kv, INDEX_SCHEMA).length > 0) worker = await startWorker()
      return prepare(worker?.info ?? readIndexInfo(kv, INDEX_SCHEMA), worker, startWorker)
    } catch (err) {
      await worker?.close()
      throw err
    }
  }

  const prepare = (info: IndexInfo, worker: IndexWorker | undefined, startWorker: () => Promise<IndexWorker>): Running => {
    const groups = new GroupCache(kv)
    if (hook === undefined) {
      // Registered once: the record layer keeps its hooks for the store's life (a restart reuses it).
      hook = new PendingRoots(kv, excluded)
      records.addIndexer(hook)
    }
    const pending = hook
    pending.groupsChanged = () => { groups.invalidate() }
    pending.load()

    const state = kv.prepare('SELECT v FROM main.search_state WHERE k = ?').pluck()
    const putState = kv.prepare('INSERT INTO main.search_state (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v')
    let indexId = state.get(STATE_ID) as string | undefined
    if (indexId === undefined) {
      const id = randomUUID()
      kv.writeSync(() => { putState.run(STATE_ID, id) })
      indexId = id
    }
    const gen = Number(state.get(STATE_GEN) ?? '0')
    const merger = new Merger({
      kv,
      records,
      pending,
      ...(worker === undefined ? {} : { worker }),
      startWorker,
      docs: info.docs,
      orphanDocs: info.orphans,
      span: info.span,
      bucketDocs: 2 ** bucketShift,
      gen: Math.max(gen, info.gen),
      indexId,
      logger: log
    }, internal.merger)

    const bulkUnindexed = state.get(STATE_BULK) !== undefined
    pending.setBulkMarked(bulkUnindexed)
    const rebuild = info.format !== marker || !info.created.every(n => n === 'search_info')
      ? (info.created.includes('search_doc') ? 'no search structures yet' : 'search format, excluded prefixes or bucket size changed')
      : info.id !== indexId
        ? 'the index file belongs to another store'
        : info.gen < gen || info.gen > gen + MAX_BATCHES_IN_FLIGHT
          ? 'the index file is not level with the store'
          : bulkUnindexed
            ? 'records arrived in bulk and were not indexed yet'
            : changedSinceMark(kv, records, state.get(STATE_LOG_MARK) as string | undefined)
    if (typeof rebuild === 'string') {
      merger.startRebuild(rebuild)
    } else if (rebuild.size > 0) {
      kv.writeSync(tx => {
        pending.stage(tx, rebuild)
        merger.recordMark(tx)
      })
      log.info('search: staged records changed while search was not attached', { roots: rebuild.size })
    }
    merger.schedule()

    const engine = new IndexedSearch({
      kv,
      records,
      fields: new FieldIndex(kv, bucketShift),
      fts: new FtsIndex(kv),
      roots: new RootIndex(kv),
      trigrams: new TrigramStats(kv),
      excluded,
      groups,
      trusted: () => merger.trusted,
      pending: () => pending.set,
      logger: log
    })
    return { engine, merger, pending }
  }

  const live = (): Running => {
    if (running === undefined) throw new SearchNotStartedError()
    return running
  }

  return {
    async start () {
      if (running !== undefined) return
      starting ??= start().finally(() => { starting = undefined })
      const r = await starting
      running = r
      // A small store is brought up to date before start settles (well under a second); a large one in the background.
      // (It reads at most one root past the bound: counting every root took some 40 ms of a start at 169,000 records.)
      const max = internal.syncRepairMaxRoots ?? SYNC_REPAIR_MAX_ROOTS
      if (recordRows.liveRoots(kv, undefined, max + 1).length <= max) await r.merger.whenIdle()
    },
    async stop () {
      const r = running
      running = undefined
      await r?.merger.stop()
    },
    search: req => live().engine.search(req),
    explain: req => live().engine.explain(req),
    list: (offset, limit) => live().engine.list(offset, limit),
    rebuild: async () => {
      const { merger } = live()
      merger.startRebuild('requested')
      await merger.whenIdle()
    },
    whenReady: async () => { await live().merger.whenReady() },
    building: () => running?.merger.building,
    whenIdle: async () => { await live().merger.whenIdle() },
    ftsRowCount: () => { live(); return kv.prepare('SELECT count(*) FROM search_fts').pluck().get() as number },
    pendingCount: () => live().pending.size,
    indexWriterRunning: () => live().merger.writerRunning
  }
}

/**
 * The roots changed since the mark (written while search was not attached:
 * by a tool, an older build, the node's own start-up steps), with the
 * groups they are in now and every root indexed as part of a group (it may
 * have left it since). A string says why a rebuild is needed instead.
 */
function changedSinceMark (kv: KvStore, records: IndexedRecords, mark: string | undefined): Set<string> | string {
  const head = records.changeLogHead()
  if (head === undefined || head === mark) return new Set()
  if (mark === undefined) return 'no change-log mark'
  const changed = records.changedRootsSince(mark as EventId, MAX_REPLAY_ROOTS)
  if (changed === undefined) return 'the change log no longer reaches back to the mark, or too many records changed'
  const rids = new Set<string>(changed)
  for (const r of changed) {
    if (!recordRows.inGroup(kv, r)) continue
    for (const m of recordRows.membersOf(kv, recordRows.canonOf(kv, r))) rids.add(m)
  }
  for (const r of kv.prepare('SELECT rid FROM search_doc WHERE g = 1').pluck().all() as string[]) rids.add(r)
  return rids
}
