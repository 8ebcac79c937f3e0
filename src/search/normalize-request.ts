/**
 * Validates a search request and turns it into criteria and paging, applying
 * the original's rules: a blank query has no text criterion, filter values
 * are trimmed and blanks dropped, a filter left with no property or no values
 * matches everything (so it is dropped), the legacy property/propertyValue
 * pair becomes one more substring filter, limit 0/absent means 100.
 */
import { decodeCursor } from './cursor.js'
import { InvalidSearchRequestError } from './errors.js'
import { fold, splitFields, trimSpace } from './fold.js'
import type { Criteria, FilterCriterion } from './matchers.js'
import type { SearchRequest } from './types.js'

const DEFAULT_LIMIT = 100
/** Largest page: a page is materialised as whole documents, so this bounds one response's work and size. */
export const MAX_LIMIT = 1000
/** Input bounds: generous for any real client, small enough that one request cannot plan for seconds. */
const MAX_QUERY_LENGTH = 4096
const MAX_FILTERS = 64
const MAX_FILTER_VALUES = 1000

export interface Paging {
  limit: number
  offset: number
  /** Resume after this root id (decoded cursor). */
  after?: string
  /** Order by this field's value rather than by root id. */
  sort?: SortOrder
}

export interface SortOrder { field: string, desc: boolean }

/** Longest sort field: a field path's limit, plus the `-`. */
const MAX_SORT_LENGTH = 513

type NormalizedRequest =
  | { kind: 'hashId', hashId: string, paging: Paging }
  | { kind: 'criteria', criteria: Criteria, paging: Paging }

const bad = (msg: string): never => { throw new InvalidSearchRequestError(msg) }

function optString (v: unknown, name: string, max = MAX_QUERY_LENGTH): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') bad(`${name} must be a string`)
  if ((v as string).length > max) bad(`${name} is longer than ${max} characters`)
  return v as string
}

function optCount (v: unknown, name: string): number | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(`${name} must be a non-negative integer`)
  return v as number
}

/** limit 0/absent → DEFAULT_LIMIT; above MAX_LIMIT → MAX_LIMIT. */
function normalizeLimit (v: unknown): number {
  const n = optCount(v, 'limit') ?? 0
  return n === 0 ? DEFAULT_LIMIT : Math.min(n, MAX_LIMIT)
}

export function normalizePaging (req: { limit?: unknown, offset?: unknown, cursor?: unknown, sort?: unknown }): Paging {
  const paging: Paging = { limit: normalizeLimit(req.limit), offset: optCount(req.offset, 'offset') ?? 0 }
  const cursor = optString(req.cursor, 'cursor')
  if (cursor !== undefined && cursor !== '') paging.after = decodeCursor(cursor)
  const sort = optString(req.sort, 'sort', MAX_SORT_LENGTH)
  if (sort !== undefined && sort !== '') {
    const desc = sort.startsWith('-')
    const field = desc ? sort.slice(1) : sort
    if (field === '') bad('sort must name a field')
    // A cursor is a root id: it can only resume the root id order.
    if (paging.after !== undefined) bad('cursor cannot be combined with sort: page with offset')
    paging.sort = { field, desc }
  }
  return paging
}

function normalizeFilter (raw: unknown, i: number): FilterCriterion | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return bad(`filters[${i}] must be an object`)
  const f = raw as Record<string, unknown>
  const property = optString(f.property, `filters[${i}].property`) ?? ''
  if (f.exact !== undefined && f.exact !== null && typeof f.exact !== 'boolean') bad(`filters[${i}].exact must be a boolean`)
  let values: string[] = []
  if (f.values !== undefined && f.values !== null) {
    if (!Array.isArray(f.values)) return bad(`filters[${i}].values must be an array of strings`)
    if (f.values.length > MAX_FILTER_VALUES) bad(`filters[${i}].values has more than ${MAX_FILTER_VALUES} entries`)
    values = f.values.map((v, j) => optString(v, `filters[${i}].values[${j}]`) ?? bad(`filters[${i}].values[${j}] must be a string`))
  }
  return makeFilter(property, values, f.exact === true)
}

/** A filter with its values trimmed and blanks dropped; undefined when it matches everything. */
function makeFilter (property: string, values: readonly string[], exact: boolean): FilterCriterion | undefined {
  const kept = values.map(trimSpace).filter(v => v !== '')
  if (property === '' || kept.length === 0) return undefined
  return { property, values: kept, folded: kept.map(fold), exact }
}

export function normalizeRequest (req: SearchRequest): NormalizedRequest {
  if (req === null || typeof req !== 'object' || Array.isArray(req)) bad('request body must be an object')
  const r = req as unknown as Record<string, unknown>
  const paging = normalizePaging(r)
  const hashId = optString(r.hashId, 'hashId')
  const query = optString(r.query, 'query')
  const property = optString(r.property, 'property')
  const propertyValue = optString(r.propertyValue, 'propertyValue')
  let rawFilters: unknown[] = []
  if (r.filters !== undefined && r.filters !== null) {
    if (!Array.isArray(r.filters)) bad('filters must be an array')
    rawFilters = r.filters as unknown[]
    if (rawFilters.length > MAX_FILTERS) bad(`filters has more than ${MAX_FILTERS} entries`)
  }
  const filters: FilterCriterion[] = []
  rawFilters.forEach((f, i) => {
    const n = normalizeFilter(f, i)
    if (n !== undefined) filters.push(n)
  })
  if (hashId !== undefined && hashId !== '') return { kind: 'hashId', hashId, paging }
  const legacy = makeFilter(property ?? '', propertyValue === undefined ? [] : [propertyValue], false)
  if (legacy !== undefined) filters.push(legacy)
  const criteria: Criteria = { filters }
  if (query !== undefined && query !== '') {
    const whole = fold(query)
    const tokens = splitFields(whole)
    // A blank query's tokens are all vacuously present: it matches every record, like no query at all.
    if (tokens.length > 0) criteria.text = { whole, tokens }
  }
  return { kind: 'criteria', criteria, paging }
}
