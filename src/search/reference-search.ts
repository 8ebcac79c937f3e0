/**
 * The scan-everything reference: reads every record's document through the
 * records layer and applies the matchers to it. No index, no SQL of its own;
 * it defines what the indexed path must answer (the equivalence test
 * compares them) and is the baseline the search benchmark measures against.
 */
import type { RecordReads } from '../records/index.js'
import { DEFAULT_EXCLUDE_PREFIXES, makeExcluder, mapView, matchesCriteria, stripExcluded } from './matchers.js'
import { normalizeRequest } from './normalize-request.js'
import { pageOf } from './paging.js'
import { lookupHashId, toResponse } from './respond.js'
import type { SearchRequest, SearchResponse } from './types.js'

export function referenceSearch (records: RecordReads, req: SearchRequest, excludePrefixes: readonly string[] = DEFAULT_EXCLUDE_PREFIXES): SearchResponse {
  const excluded = makeExcluder(excludePrefixes)
  const n = normalizeRequest(req)
  if (n.kind === 'hashId') return lookupHashId(records, excluded, n.hashId, n.paging)
  const matches: string[] = []
  const docs = new Map<string, Record<string, string>>()
  for (const rid of records.iterateRoots()) {
    const doc = records.getDocument(rid)
    if (doc === undefined) continue
    const fields = stripExcluded(doc.metadata, excluded)
    if (!matchesCriteria(n.criteria, mapView(doc.members, fields))) continue
    matches.push(rid)
    docs.set(rid, fields)
  }
  const valueOf = (rid: string): string | undefined => {
    const d = docs.get(rid)!
    return n.paging.sort !== undefined && Object.hasOwn(d, n.paging.sort.field) ? d[n.paging.sort.field] : undefined
  }
  return toResponse(pageOf(matches, n.paging, valueOf), rid => docs.get(rid)!)
}
