/**
 * Response assembly shared by the indexed path and the reference scan: the
 * `hashId` lookup, and turning a page of roots into results whose metadata
 * is the record's visible (group-merged, exclusion-stripped) flat fields.
 */
import { isRecordId, type RecordReads } from '../records/index.js'
import { stripExcluded, type Excluder } from './matchers.js'
import type { Paging } from './normalize-request.js'
import { pageOf, type Page } from './paging.js'
import type { SearchResponse } from './types.js'

/** A record's visible fields, as results show them. */
export function visibleFields (records: RecordReads, rid: string, excluded: Excluder): Record<string, string> {
  return stripExcluded(records.getFlat(rid) ?? {}, excluded)
}

export function toResponse (page: Page, metadataOf: (rid: string) => Record<string, string>): SearchResponse {
  const results = page.rids.map(hashId => ({ hashId, metadata: metadataOf(hashId) }))
  const res: SearchResponse = { results, count: results.length, total: page.total }
  if (page.nextCursor !== undefined) res.nextCursor = page.nextCursor
  return res
}

/**
 * `hashId`: exactly that root, read directly; a CID is not resolved (as in
 * the original), so it finds nothing. A root that belongs to a group answers
 * with the group's canonical root and merged document, as every read does.
 */
export function lookupHashId (records: RecordReads, excluded: Excluder, hashId: string, paging: Paging): SearchResponse {
  const rid = isRecordId(hashId) ? records.resolveRoot(hashId) : undefined
  // At most one result: a sort has nothing to order.
  const page = pageOf(rid === undefined ? [] : [rid], paging, () => undefined)
  return toResponse(page, r => visibleFields(records, r, excluded))
}
