/**
 * The editor/search surface `/api/metadata/*` (docs/design/original.md#routes): search and list
 * come from the search service (503 `search_unavailable` on a node without
 * it); the record reads and writes go to the record layer.
 */
import { canonicalCid } from '../../cid/index.js'
import { UnknownRecordError, cidMemberOf } from '../../records/index.js'
import type { SearchHit as IndexHit } from '../../search/types.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ComponentUnavailableError } from '../errors.js'
import { queryInt } from '../query-int.js'
import { withErrors } from '../wire/kit.js'
import {
  EditorBody, EditorDeleteReply, EditorWriteReply, HashIds, ListQuery, ListResponse, SearchBody, SearchResponse, type SearchHit
} from '../wire/metadata.js'
import { FlatRecord, HashParams } from '../wire/records.js'
import { checkAddress } from './meta-routes.js'
import { clientFields } from '../location-fields.js'

/** Editor fields that describe processing, not the media: the original's editor PUT dropped them. */
export const EDITOR_DROPPED = ['processingStatus']

/** The canonical CID of a hit, from its `cids/<cid>` members (the record layer's rank, as on every read). */
export function withCanonical (h: IndexHit): SearchHit {
  const cids: string[] = []
  for (const k of Object.keys(h.metadata)) {
    const c = cidMemberOf(k)
    if (c !== undefined) cids.push(c)
  }
  const canon = canonicalCid(cids)
  return canon === undefined ? h : { ...h, canonical_cid: canon }
}

export function metadataRoutes (app: ApiScope, ctx: ApiContext): void {
  const { records } = ctx

  app.post('/api/metadata/search', {
    schema: {
      summary: 'Search records by free text and field filters; total counts the matches (the original returned the index size)',
      tags: ['metadata'],
      body: SearchBody,
      response: withErrors({ 200: SearchResponse }, 413, 415)
    }
  }, async (req) => {
    if (ctx.search === undefined) throw new ComponentUnavailableError('search')
    const r = ctx.search.search(req.body)
    return { ...r, results: r.results.map(withCanonical) }
  })

  app.get('/api/metadata/list', {
    schema: {
      summary: 'Records with their display fields, in id order',
      tags: ['metadata'],
      querystring: ListQuery,
      response: withErrors({ 200: ListResponse })
    }
  }, async (req) => {
    if (ctx.search === undefined) throw new ComponentUnavailableError('search')
    const offset = queryInt(req.query.offset, 'offset', 0, 0, 10_000_000)
    const limit = queryInt(req.query.limit, 'limit', 100, 1, 10_000)
    return ctx.search.list(offset, limit)
  })

  app.get('/api/metadata/hash-ids', {
    schema: {
      summary: 'Every record id',
      tags: ['metadata'],
      response: withErrors({ 200: HashIds })
    }
  }, async () => {
    const hashIds = [...records.iterateRoots()]
    return { hashIds, count: hashIds.length }
  })

  app.get('/api/metadata/:hash', {
    schema: {
      summary: 'A record as a flat map',
      tags: ['metadata'],
      params: HashParams,
      response: withErrors({ 200: FlatRecord }, 404)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const rid = records.resolveRoot(req.params.hash)
    const metadata = rid === undefined ? undefined : records.getFlat(rid)
    if (rid === undefined || metadata === undefined) throw new UnknownRecordError(req.params.hash)
    return { hashId: rid, metadata }
  })

  app.put('/api/metadata/:hash', {
    schema: {
      summary: 'Merge edited fields into the record (processingStatus is dropped)',
      tags: ['metadata'],
      params: HashParams,
      body: EditorBody,
      response: withErrors({ 200: EditorWriteReply }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const fields = { ...req.body }
    for (const f of EDITOR_DROPPED) delete fields[f]
    const r = await records.mergeFlat(req.params.hash, clientFields(records, req.params.hash, fields))
    return { status: 'ok', hashId: r.rid, message: 'Metadata updated successfully' }
  })

  app.delete('/api/metadata/:hash', {
    schema: {
      summary: 'Delete the record',
      tags: ['metadata'],
      params: HashParams,
      response: withErrors({ 200: EditorDeleteReply })
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.deleteRoot(req.params.hash)
    return { status: 'ok', hashId: r.rid ?? req.params.hash, deletedKeys: r.deleted }
  })
}
