/**
 * A real store in a temp folder with search attached, and the check every
 * search test leans on: the indexed answer equals the reference scan's.
 */
import path from 'node:path'
import { expect } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { createSearch, type Search, type SearchRequest, type SearchResponse } from '../../src/search/index.js'
import { referenceSearch, type MergerOptions } from '../../src/search/testing.js'
import { tmpDir } from '../helpers/tmp.js'

export interface Fixture {
  dir: string
  dbPath: string
  store: NodeStore
  search: Search
  excludePrefixes?: string[]
  /** Indexed answer, asserted equal to the reference scan's. */
  query: (req: SearchRequest) => SearchResponse
  /** Closes and reopens the store (and search) on the same file. */
  reopen: (opts?: { excludePrefixes?: string[], syncRepairMaxRoots?: number }) => Promise<void>
  close: () => Promise<void>
}

export async function openFixture (opts: { excludePrefixes?: string[], nodeId?: string, merger?: MergerOptions, bucketShift?: number } = {}): Promise<Fixture> {
  const { dir, cleanup } = tmpDir('mc-search-')
  const dbPath = path.join(dir, 'store.db')
  const f = {} as Fixture
  const open = async (excludePrefixes: string[] | undefined, syncRepairMaxRoots?: number): Promise<void> => {
    f.store = openNodeStore({ path: dbPath, nodeId: opts.nodeId ?? 'node-a' })
    // META_CORE_TEST_LOG=1 shows what search logs (its merger's errors above all) while debugging a test.
    const logger = process.env.META_CORE_TEST_LOG === '1' ? createLogger({ level: 'debug' }) : undefined
    f.search = createSearch({ kv: f.store.kv, records: f.store.records, logger }, {
      ...(excludePrefixes === undefined ? {} : { excludePrefixes }),
      internal: {
        ...(syncRepairMaxRoots === undefined ? {} : { syncRepairMaxRoots }),
        ...(opts.merger === undefined ? {} : { merger: opts.merger }),
        ...(opts.bucketShift === undefined ? {} : { bucketShift: opts.bucketShift })
      }
    })
    f.excludePrefixes = excludePrefixes
    await f.search.start()
  }
  await open(opts.excludePrefixes)
  Object.assign(f, {
    dir,
    dbPath,
    query (req: SearchRequest): SearchResponse {
      const got = f.search.search(req)
      const want = referenceSearch(f.store.records, req, f.excludePrefixes)
      expect(got).toEqual(want)
      return got
    },
    async reopen (o: { excludePrefixes?: string[], syncRepairMaxRoots?: number } = {}) {
      await f.search.stop()
      f.store.close()
      await open(o.excludePrefixes ?? f.excludePrefixes, o.syncRepairMaxRoots)
    },
    async close () {
      await f.search.stop()
      f.store.close()
      cleanup()
    }
  })
  return f
}

export const ids = (r: SearchResponse): string[] => r.results.map(x => x.hashId)

/** A merger that never merges on its own within a test (only a full batch or a waiting writer would start it): writes stay staged. */
export const NEVER_MERGES: MergerOptions = { delayMs: 3_600_000, batchRoots: 100_000, backlogLimit: 100_000 }

/**
 * The derived structures as comparable data: each indexed root's field
 * entries and FTS row (document ids left out: they differ between builds),
 * entries of re-indexed documents (orphans) left out as every read does.
 */
export function indexState (kv: NodeStore['kv']): { entries: string[][], fts: string[][], docs: string[] } {
  const entries = kv.prepare(`SELECT doc.rid, s.f, s.v, s.rf, coalesce(s.rv, '') FROM search_field s JOIN search_doc doc ON doc.d = s.d
    ORDER BY doc.rid, s.f, s.v, s.rf`).raw().all() as string[][]
  const fts = kv.prepare('SELECT doc.rid, f.hay, f.ids FROM search_fts f JOIN search_doc doc ON doc.d = f.rowid ORDER BY doc.rid').raw().all() as string[][]
  // Every FTS row belongs to a document.
  expect(kv.prepare('SELECT count(*) FROM search_fts WHERE rowid NOT IN (SELECT d FROM search_doc)').pluck().get()).toBe(0)
  const docs = kv.prepare('SELECT rid FROM search_doc ORDER BY rid').pluck().all() as string[]
  return { entries, fts, docs }
}
