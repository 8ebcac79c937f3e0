/**
 * The search service's contract, shared with the API (which imports these
 * types only) and the node composition root (which creates the service).
 */
import type { Logger } from '../common/index.js'
import type { KvStore } from '../kv/index.js'
import type { IndexedRecords } from '../records/index.js'
import type { MergerOptions } from './merger.js'

export interface SearchComponents {
  /** The store, for search's own SQL structures (the field index and the FTS table over the record rows). */
  kv: KvStore
  records: IndexedRecords
  logger?: Logger
}

export interface SearchInit {
  /** Field prefixes left out of the index and the results (META_CORE_INDEX_EXCLUDE_PREFIXES; default ['categories/newznab/']). */
  excludePrefixes?: string[]
  /** Internals a node leaves at their defaults; tests and benchmarks set them (search/testing.ts). */
  internal?: SearchInternals
}

/** What tests and benchmarks tune: none of it is a node option. */
interface SearchInternals {
  /**
   * A store needing a rebuild at open with at most this many roots is rebuilt
   * before start settles; a larger one in the background (default 2000,
   * well under a second of work).
   */
  syncRepairMaxRoots?: number
  /**
   * Documents per bucket of the field index, as a power of two (default 12:
   * 4,096). A batch's entries go into the newest buckets, so its commit
   * rewrites only their pages; a value filter seeks each bucket. Changing it
   * rebuilds the index.
   */
  bucketShift?: number
  /** How the merger batches, bounds and reports its work, and its clock (merger-options.ts). */
  merger?: MergerOptions
}

export interface SearchFilter {
  /** Absent or empty: the filter matches everything, as in the original. */
  property?: string
  values?: string[]
  exact?: boolean
}

/** The original's request body of POST /api/metadata/search, plus paging. */
export interface SearchRequest {
  query?: string
  hashId?: string
  property?: string
  propertyValue?: string
  /** 0/absent → 100. */
  limit?: number
  filters?: SearchFilter[]
  /** Beyond the original: skip this many matches. */
  offset?: number
  /** Beyond the original: continue after this opaque cursor (from a previous response's nextCursor). */
  cursor?: string
  /**
   * Beyond the original: order the matches by this field's value (`-field`:
   * descending) instead of by root id. Numbers compare as numbers, text
   * case-insensitively; records without the field come last either way; ties
   * in root id order. Page with `offset` (a cursor is refused with a sort).
   */
  sort?: string
}

export interface SearchHit {
  hashId: string
  metadata: Record<string, string>
}

export interface SearchResponse {
  results: SearchHit[]
  count: number
  /** Number of matches (the original returned the index size; see docs/api.md). */
  total: number
  /** Present when more matches follow. */
  nextCursor?: string
}

export interface ListItem {
  hashId: string
  title?: string
  fileName?: string
  filePath?: string
  type?: string
  year?: string
}

export interface ListResponse {
  items: ListItem[]
  count: number
  total: number
}

export interface SearchService {
  /** Throws InvalidSearchRequestError (an InvalidInputError, code `invalid_search_request`) for a malformed request. */
  search: (req: SearchRequest) => SearchResponse
  /** Same errors as search() for a negative or fractional offset or limit. */
  list: (offset: number, limit: number) => ListResponse
  /** Rebuilds the derived structures from the kv rows. */
  rebuild: () => Promise<void>
  /**
   * Settles when the FTS rows are complete (a store opened without them is
   * rebuilt in the background; answers are correct meanwhile, only slower).
   * Rejects if that rebuild failed. (Optional so a test double need not
   * have it; createSearch's service always does.)
   */
  whenReady?: () => Promise<void>
  /**
   * While the index is being built (a rebuild, or records arriving in bulk
   * before one), how far the rebuild is (roots done of total; 0 of 0 before
   * it starts); undefined once it is complete. Answers are right
   * meanwhile, only slower. (Optional for test doubles.)
   */
  building?: () => { done: number, total: number } | undefined
  /** Stops background rebuilding (it resumes at next open). Idempotent; call before closing the store. */
  stop?: () => Promise<void>
}
