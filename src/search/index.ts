/**
 * search: the field index and the FTS table over the record rows, the query
 * planner and the matchers behind POST /api/metadata/search and
 * GET /api/metadata/list.
 *
 * Guarantees:
 * - Answers equal those of the scan-everything reference (referenceSearch):
 *   SQL only narrows the candidates, the matchers decide, and queries the
 *   indexes cannot serve (tokens under 3 characters) fall back to scans.
 * - Fresh: the FTS row of a record changes in the same transaction as the
 *   record write (a RecordIndexer), and the field index is an SQLite index,
 *   so an acknowledged write is visible to the next query.
 * - A group (roots sharing a CID) is one result and one count, under its
 *   canonical root, matched and shown with the merged document.
 * - Fields under the excluded prefixes never match and never show.
 * - Rebuildable: every structure is derived from the kv rows; a store opened
 *   without them, with another format, or written by a process that did not
 *   run search is repaired at open (in the background for large stores,
 *   answering correctly meanwhile through scans).
 *
 * One search service per record store: it registers its record hook once.
 * A `Startable`: creating it does no work; `start()` builds and repairs,
 * `stop()` ends background work; both are idempotent.
 */
import { MetaCoreError, silentLogger, type Startable } from '../common/index.js'
import { countLiveRoots, type IndexedRecords } from '../records/index.js'
import { FieldIndex } from './field-index.js'
import { FtsIndex } from './fts-index.js'
import { SearchNotStartedError } from './errors.js'
import { DirtyJob, RebuildJob, runJob, runJobSync, type Job } from './fts-rebuild.js'
import { IndexedSearch, type QueryPlan } from './indexed-search.js'
import { DEFAULT_EXCLUDE_PREFIXES, HAY_FIELDS, makeExcluder } from './matchers.js'
import { GroupCache } from './record-views.js'
import { RootIndex } from './root-index.js'
import { TrigramStats } from './trigram-stats.js'
import { VERSION_KEY, ensureSchema, versionMarker } from './search-schema.js'
import type { SearchComponents, SearchInit, SearchRequest, SearchResponse, SearchService } from './types.js'

export type * from './types.js'
export { InvalidSearchRequestError, SearchNotStartedError } from './errors.js'
export { referenceSearch } from './reference-search.js'
export { DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_LENGTH, MAX_FILTERS, MAX_FILTER_VALUES } from './normalize-request.js'
export { fold } from './fold.js'
export { HAY_FIELDS, DEFAULT_EXCLUDE_PREFIXES } from './matchers.js'
export type { QueryPlan } from './indexed-search.js'

/** Stores with at most this many roots are brought up to date synchronously at open (well under a second). */
const SYNC_REPAIR_MAX_ROOTS = 2000

/** The service plus its lifecycle and what tests and benchmarks look at. */
export interface Search extends SearchService, Startable {
  whenReady: () => Promise<void>
  stop: () => Promise<void>
  /** search() and the plan it used. */
  explain: (req: SearchRequest) => { response: SearchResponse, plan?: QueryPlan }
  /** FTS rows now (one per record). */
  ftsRowCount: () => number
}

const attached = new WeakSet<IndexedRecords>()

/**
 * Creates the search service over a record store. Nothing touches the store
 * until `start()`: it creates the search structures, registers the record
 * hook (records written before it are found by the store's triggers and
 * refreshed), and brings the rows up to date (synchronously for a small
 * store, in the background for a large one). Queries need a started service.
 */
export function createSearch (components: SearchComponents, init: SearchInit = {}): Search {
  const { kv, records } = components
  const log = components.logger ?? silentLogger
  if (attached.has(records)) throw new MetaCoreError('search_already_attached', 'a search service is already attached to this record store')
  attached.add(records)
  const excluded = makeExcluder(init.excludePrefixes ?? DEFAULT_EXCLUDE_PREFIXES)
  const marker = versionMarker(HAY_FIELDS.filter(f => excluded(f)))
  const syncMax = init.syncRepairMaxRoots ?? SYNC_REPAIR_MAX_ROOTS

  let running: Running | undefined
  let fts: FtsIndex | undefined
  let trusted = false
  let stopped = false
  let dirtyQueued = false
  let chain: Promise<void> = Promise.resolve()
  let tail: Promise<void> = Promise.resolve()

  /** Background jobs run one after another; `tail` is the last one (whenReady), `chain` never rejects. */
  const enqueue = (what: string, fn: () => Promise<void>): Promise<void> => {
    tail = chain.then(fn)
    chain = tail.catch(err => {
      if (stopped) log.info(`${what} stopped; it resumes at next open`)
      else log.error(`${what} failed; answers stay correct through scans until the next rebuild`, { err })
    })
    return tail
  }
  const rebuildJob = (f: FtsIndex): Job => new RebuildJob(kv, f, marker, log)
  const rebuildInBackground = (f: FtsIndex, reason: string): Promise<void> => enqueue('search rebuild', async () => {
    trusted = false
    log.info('rebuilding search rows', { reason })
    await runJob(kv, rebuildJob(f), () => stopped)
    trusted = true
  })
  const scheduleDirty = (): void => {
    const f = fts
    if (dirtyQueued || stopped || f === undefined) return
    dirtyQueued = true
    const pending = f.dirtyCount()
    log.warn('records were written without the search hook; refreshing their search rows', { roots: pending })
    void enqueue('search refresh', async () => {
      try {
        await runJob(kv, new DirtyJob(f, log, pending), () => stopped)
      } finally {
        dirtyQueued = false
      }
    })
  }

  const start = (): Running => {
    const t0 = Date.now()
    const created = ensureSchema(kv)
    if (created.length > 0) log.info('created search structures', { created, ms: Date.now() - t0 })
    const groups = new GroupCache(kv)
    if (fts === undefined) {
      // Registered once: the record layer keeps its hooks for the store's life (a restart reuses it).
      fts = new FtsIndex(kv, records, excluded, () => { groups.invalidate() })
      records.addIndexer(fts)
    } else {
      fts.onGroupsChanged(() => { groups.invalidate() })
    }
    const f = fts
    // Rows are trusted when they were built with this format and nothing could have written around the triggers.
    trusted = kv.get(VERSION_KEY) === marker && !created.some(n => n === 'fts' || n.startsWith('search_dirty'))
    if (!trusted) {
      if (countLiveRoots(kv) <= syncMax) {
        runJobSync(kv, rebuildJob(f))
        trusted = true
      } else {
        void rebuildInBackground(f, kv.get(VERSION_KEY) === undefined ? 'no search rows yet' : 'search format changed')
      }
    } else if (f.dirty(1).length > 0) {
      if (f.dirty(syncMax + 1).length <= syncMax) runJobSync(kv, new DirtyJob(f, log, 0))
      else scheduleDirty()
    }
    const engine = new IndexedSearch({
      kv,
      records,
      fields: new FieldIndex(kv),
      fts: f,
      roots: new RootIndex(kv),
      trigrams: new TrigramStats(kv),
      excluded,
      groups,
      ftsTrusted: () => trusted,
      onDirty: scheduleDirty,
      logger: log
    })
    return { engine, fts: f }
  }

  const live = (): Running => {
    if (running === undefined) throw new SearchNotStartedError()
    return running
  }

  return {
    async start () {
      if (running !== undefined) return
      stopped = false
      running = start()
    },
    async stop () {
      stopped = true
      await chain
      running = undefined
    },
    search: req => live().engine.search(req),
    explain: req => live().engine.explain(req),
    list: (offset, limit) => live().engine.list(offset, limit),
    rebuild: async () => { await rebuildInBackground(live().fts, 'requested') },
    whenReady: async () => { await tail },
    ftsRowCount: () => live().fts.rowCount()
  }
}

interface Running {
  engine: IndexedSearch
  fts: FtsIndex
}
