/**
 * `GET /api/search?q=…`: the search of `POST /api/metadata/search` as a
 * link, for curl, bookmarks and the web page. `q` is the search language
 * (search-query.ts: words, `field:value`, `field:=value`, quotes, a bare
 * CID); `limit`, `offset`, `cursor` and `sort` page and order as in the
 * POST body, with the same limits and the same answer.
 */
import type { SearchRequest } from '../../search/types.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ComponentUnavailableError } from '../errors.js'
import { queryInt } from '../query-int.js'
import { parseQuery } from '../search-query.js'
import { withErrors } from '../wire/kit.js'
import { SearchQuery, SearchResponse } from '../wire/metadata.js'
import { withCanonical } from './metadata-routes.js'

export function searchRoutes (app: ApiScope, ctx: ApiContext): void {
  app.get('/api/search', {
    schema: {
      summary: 'Search records with the search language in q (GET form of POST /api/metadata/search)',
      tags: ['metadata'],
      querystring: SearchQuery,
      response: withErrors({ 200: SearchResponse })
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
