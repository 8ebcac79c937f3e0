/**
 * `GET /api/search?q=…`: the search of `POST /api/metadata/search` as a
 * link, for curl, bookmarks and the web page. `q` is the search language
 * (search-query.ts: words, `field:value`, `field:=value`, quotes, a bare
 * CID); `limit`, `offset`, `cursor` and `sort` page and order as in the
 * POST body, with the same limits and the same answer.
 */
import type { FastifyInstance } from 'fastify'
import type { SearchRequest } from '../../search/types.js'
import type { ApiContext } from '../context.js'
import { ComponentUnavailableError } from '../errors.js'
import { intString, queryInt, withErrors } from '../schemas.js'
import { parseQuery } from '../search-query.js'
import { searchAnswer, withCanonical } from './metadata-routes.js'

interface SearchQuery { q?: string, limit?: string, offset?: string, cursor?: string, sort?: string }

export function searchRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: SearchQuery }>('/api/search', {
    schema: {
      summary: 'Search records with the search language in q (GET form of POST /api/metadata/search)',
      tags: ['metadata'],
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          q: { type: 'string', maxLength: 1024, description: 'words (free text), field:value (contains), field:=value (equals), "quoted runs", a bare CID; absent or empty: every record' },
          limit: { ...intString, description: '0 or absent: 100; capped at 1000' },
          offset: { ...intString, description: 'skip this many matches' },
          cursor: { type: 'string', maxLength: 1024, description: 'nextCursor of the previous page' },
          sort: { type: 'string', maxLength: 513, description: 'order by this field (-field: descending); page with offset' }
        }
      },
      response: withErrors({ 200: { type: 'object', properties: searchAnswer } })
    }
  }, async (req) => {
    if (ctx.search === undefined) throw new ComponentUnavailableError('search')
    const { q, cursor, sort } = req.query
    const body: SearchRequest = {
      ...parseQuery(q ?? ''),
      limit: queryInt(req.query.limit, 'limit', 0, 0, 10_000),
      offset: queryInt(req.query.offset, 'offset', 0, 0, 10_000_000),
      ...(cursor === undefined || cursor === '' ? {} : { cursor }),
      ...(sort === undefined || sort === '' ? {} : { sort })
    }
    const r = ctx.search.search(body)
    return { ...r, results: r.results.map(withCanonical) }
  })
}
