/**
 * `GET /api/meta/{cid}` (docs/design/original.md#routes): the public, CID-addressed document peers
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
  }, async (req, reply) => {
    const cid = parseCid(req.params.cid)
    const doc = ctx.records.getDocumentJson(cid)
    if (doc === undefined) throw new UnknownCidError()
    // The hottest route: the fields arrive as JSON text from SQLite and the
    // reply is assembled around them (a string payload skips the serializer;
    // the shape is the documented one, checked by the route tests).
    const canonical = doc.canonical_cid === undefined ? '' : `,"canonical_cid":${JSON.stringify(doc.canonical_cid)}`
    return await reply.type('application/json; charset=utf-8').send(
      `{"cid":${JSON.stringify(cid)},"metadata":${doc.metadataJson},"cids":${JSON.stringify(doc.cids)},"duplicates":${JSON.stringify(doc.duplicates)}${canonical}}`)
  })
}
