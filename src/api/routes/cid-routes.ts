/**
 * `GET /api/meta/{cid}` (spec §4.3): the public, CID-addressed document peers
 * resolve metadata with. It never discloses the root id.
 */
import type { FastifyInstance } from 'fastify'
import { parseCid } from '../../cid/index.js'
import type { ApiContext } from '../context.js'
import { ApiError, UnknownCidError } from '../errors.js'
import { cidParam, stringArray, stringMap, withErrors } from '../schemas.js'

const documentSchema = {
  type: 'object',
  required: ['cid', 'metadata', 'cids', 'duplicates'],
  properties: {
    cid: { type: 'string', description: 'the CID as requested' },
    metadata: { ...stringMap, description: 'flat fields, cids/<cid> members included' },
    cids: stringArray,
    canonical_cid: { type: 'string', description: 'derived on read by rank (spec §2), never stored' },
    duplicates: { ...stringArray, description: 'other paths of the same content on this node' }
  }
} as const

export function cidRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get('/api/meta/', {
    config: { public: true },
    schema: { hide: true }
  }, async () => {
    throw new ApiError(400, 'invalid_cid', 'empty cid')
  })

  app.get<{ Params: { cid: string } }>('/api/meta/:cid', {
    config: { public: true },
    schema: {
      summary: 'The record carrying this CID',
      tags: ['cid'],
      security: [],
      params: cidParam,
      response: withErrors({ 200: documentSchema }, 404)
    }
  }, async (req) => {
    const cid = parseCid(req.params.cid)
    const doc = ctx.read(() => ctx.records.getDocument(cid))
    if (doc === undefined) throw new UnknownCidError()
    const out: { cid: string, metadata: Record<string, string>, cids: string[], canonical_cid?: string, duplicates: string[] } = {
      cid, metadata: doc.metadata, cids: doc.cids, duplicates: doc.duplicates
    }
    if (doc.canonical_cid !== undefined) out.canonical_cid = doc.canonical_cid
    return out
  })
}
