/**
 * The editor/search surface `/api/metadata/*` (docs/design/original.md#routes): search and list
 * come from the search service (503 `search_unavailable` on a node without
 * it); the record reads and writes go to the record layer.
 */
import type { FastifyInstance } from 'fastify'
import { canonicalCid } from '../../cid/index.js'
import { UnknownRecordError, cidMemberOf } from '../../records/index.js'
import type { SearchHit, SearchRequest } from '../../search/types.js'
import type { ApiContext } from '../context.js'
import { ComponentUnavailableError } from '../errors.js'
import { hashParam, intString, queryInt, stringArray, stringMap, withErrors } from '../schemas.js'
import { MAX_FIELDS_PER_WRITE, checkAddress } from './meta-routes.js'
import { clientFields } from '../location-fields.js'

/** Editor fields that describe processing, not the media: the original's editor PUT dropped them. */
export const EDITOR_DROPPED = ['processingStatus']

const searchBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    query: { type: 'string', maxLength: 1024 },
    hashId: { type: 'string', maxLength: 256 },
    property: { type: 'string', maxLength: 512 },
    propertyValue: { type: 'string', maxLength: 1024 },
    limit: { type: 'integer', minimum: 0, maximum: 10_000 },
    offset: { type: 'integer', minimum: 0, maximum: 10_000_000 },
    cursor: { type: 'string', maxLength: 1024 },
    sort: { type: 'string', maxLength: 513, description: 'beyond the original: order by this field (-field: descending); page with offset' },
    filters: {
      type: 'array',
      maxItems: 64,
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          property: { type: 'string', maxLength: 512, description: 'absent or empty: the filter matches everything, as in the original' },
          values: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 1024 } },
          exact: { type: 'boolean' }
        }
      }
    }
  }
} as const

const searchHit = {
  type: 'object',
  properties: {
    hashId: { type: 'string' },
    metadata: stringMap,
    canonical_cid: { type: 'string', description: 'beyond the original: derived from the cids/ members by rank (spec §2), absent when there are none' }
  }
} as const

/** The answer of both search routes (POST here, GET /api/search in search-routes.ts). */
export const searchAnswer = { results: { type: 'array', items: searchHit }, count: { type: 'integer' }, total: { type: 'integer' }, nextCursor: { type: 'string' } } as const

/** The canonical CID of a hit, from its `cids/<cid>` members (the record layer's rank, as on every read). */
export function withCanonical (h: SearchHit): SearchHit & { canonical_cid?: string } {
  const cids: string[] = []
  for (const k of Object.keys(h.metadata)) {
    const c = cidMemberOf(k)
    if (c !== undefined) cids.push(c)
  }
  const canon = canonicalCid(cids)
  return canon === undefined ? h : { ...h, canonical_cid: canon }
}

export function metadataRoutes (app: FastifyInstance, ctx: ApiContext): void {
  const { records } = ctx

  app.post<{ Body: SearchRequest }>('/api/metadata/search', {
    schema: {
      summary: 'Search records by free text and field filters; total counts the matches (the original returned the index size)',
      tags: ['metadata'],
      body: searchBody,
      response: withErrors({
        200: {
          type: 'object',
          properties: searchAnswer
        }
      }, 413, 415)
    }
  }, async (req) => {
    if (ctx.search === undefined) throw new ComponentUnavailableError('search')
    const r = ctx.search.search(req.body)
    return { ...r, results: r.results.map(withCanonical) }
  })

  app.get<{ Querystring: { offset?: string, limit?: string } }>('/api/metadata/list', {
    schema: {
      summary: 'Records with their display fields, in id order',
      tags: ['metadata'],
      querystring: { type: 'object', properties: { offset: intString, limit: intString }, additionalProperties: false },
      response: withErrors({
        200: {
          type: 'object',
          properties: {
            items: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  hashId: { type: 'string' }, title: { type: 'string' }, fileName: { type: 'string' }, filePath: { type: 'string' }, type: { type: 'string' }, year: { type: 'string' }
                }
              }
            },
            count: { type: 'integer' },
            total: { type: 'integer' }
          }
        }
      })
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
      response: withErrors({ 200: { type: 'object', properties: { hashIds: stringArray, count: { type: 'integer' } } } })
    }
  }, async () => {
    const hashIds = [...records.iterateRoots()]
    return { hashIds, count: hashIds.length }
  })

  app.get<{ Params: { hash: string } }>('/api/metadata/:hash', {
    schema: {
      summary: 'A record as a flat map',
      tags: ['metadata'],
      params: hashParam,
      response: withErrors({ 200: { type: 'object', properties: { hashId: { type: 'string' }, metadata: stringMap } } }, 404)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const rid = records.resolveRoot(req.params.hash)
    const metadata = rid === undefined ? undefined : records.getFlat(rid)
    if (rid === undefined || metadata === undefined) throw new UnknownRecordError(req.params.hash)
    return { hashId: rid, metadata }
  })

  app.put<{ Params: { hash: string }, Body: Record<string, string> }>('/api/metadata/:hash', {
    schema: {
      summary: 'Merge edited fields into the record (processingStatus is dropped)',
      tags: ['metadata'],
      params: hashParam,
      body: { ...stringMap, maxProperties: MAX_FIELDS_PER_WRITE },
      response: withErrors({
        200: { type: 'object', properties: { status: { type: 'string' }, hashId: { type: 'string' }, message: { type: 'string' } } }
      }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const fields = { ...req.body }
    for (const f of EDITOR_DROPPED) delete fields[f]
    const r = await records.mergeFlat(req.params.hash, clientFields(records, req.params.hash, fields))
    return { status: 'ok', hashId: r.rid, message: 'Metadata updated successfully' }
  })

  app.delete<{ Params: { hash: string } }>('/api/metadata/:hash', {
    schema: {
      summary: 'Delete the record',
      tags: ['metadata'],
      params: hashParam,
      response: withErrors({ 200: { type: 'object', properties: { status: { type: 'string' }, hashId: { type: 'string' }, deletedKeys: { type: 'integer' } } } })
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.deleteRoot(req.params.hash)
    return { status: 'ok', hashId: r.rid ?? req.params.hash, deletedKeys: r.deleted }
  })
}
