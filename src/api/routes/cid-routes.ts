/**
 * `GET /api/meta/{cid}` (docs/design/original.md#routes): the public, CID-addressed document peers
 * resolve metadata with. It never discloses the root id.
 */
import { parseCid } from '../../cid/index.js'
import type { FastifyReply } from 'fastify'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError, UnknownCidError } from '../errors.js'
import { withErrors } from '../wire/kit.js'
import { CidDocument, CidParams } from '../wire/records.js'

/**
 * Sends JSON text the route assembled itself: a string payload with a JSON
 * content type skips the response serializer (the schema still documents
 * the shape). Typed apart from the route's reply, which is the document.
 */
async function sendJsonText (reply: FastifyReply, text: string): Promise<FastifyReply> {
  return await reply.type('application/json; charset=utf-8').send(text)
}

export function cidRoutes (app: ApiScope, ctx: ApiContext): void {
  app.get('/api/meta/', {
    config: { public: true },
    schema: { hide: true }
  }, async () => {
    throw new ApiError(400, 'invalid_cid', 'empty cid')
  })

  app.get('/api/meta/:cid', {
    config: { public: true },
    schema: {
      summary: 'The record carrying this CID',
      tags: ['cid'],
      security: [],
      params: CidParams,
      response: withErrors({ 200: CidDocument }, 404)
    }
  }, async (req, reply) => {
    const cid = parseCid(req.params.cid)
    const doc = ctx.records.getDocumentJson(cid)
    if (doc === undefined) throw new UnknownCidError()
    // The hottest route: the fields arrive as JSON text from SQLite and the
    // reply is assembled around them (CidDocument's shape, checked by the route tests).
    const canonical = doc.canonical_cid === undefined ? '' : `,"canonical_cid":${JSON.stringify(doc.canonical_cid)}`
    return await sendJsonText(reply,
      `{"cid":${JSON.stringify(cid)},"metadata":${doc.metadataJson},"cids":${JSON.stringify(doc.cids)},"duplicates":${JSON.stringify(doc.duplicates)}${canonical}}`)
  })
}
