/**
 * A real store in a temp folder with search attached, and the check every
 * search test leans on: the indexed answer equals the reference scan's.
 */
import path from 'node:path'
import { expect } from 'vitest'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { createSearch, referenceSearch, type Search, type SearchRequest, type SearchResponse } from '../../src/search/index.js'
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

export async function openFixture (opts: { excludePrefixes?: string[], nodeId?: string } = {}): Promise<Fixture> {
  const { dir, cleanup } = tmpDir('mc-search-')
  const dbPath = path.join(dir, 'store.db')
  const f = {} as Fixture
  const open = async (excludePrefixes: string[] | undefined, syncRepairMaxRoots?: number): Promise<void> => {
    f.store = openNodeStore({ path: dbPath, nodeId: opts.nodeId ?? 'node-a' })
    f.search = createSearch({ kv: f.store.kv, records: f.store.records }, {
      ...(excludePrefixes === undefined ? {} : { excludePrefixes }),
      ...(syncRepairMaxRoots === undefined ? {} : { syncRepairMaxRoots })
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
