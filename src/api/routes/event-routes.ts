/**
 * SSE mirrors of the event streams (docs/design/original.md#sse): `/api/events/meta`
 * (`meta:events`) and `/api/events/files` (`file:events`). The cursor comes
 * only from the `Last-Event-ID` header.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { FILE_EVENTS, META_EVENTS } from '../../records/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import type { StartPosition } from '../sse/sse-connection.js'
import { Type, withErrors } from '../wire/kit.js'

/**
 * Start position from the header. `0` / `0-0` on `meta` asks for a snapshot
 * of every record key; on `files` it is an ordinary cursor older than
 * everything, so the client gets a gap (when the start was trimmed) and
 * every retained entry.
 */
function startPosition (stream: string, header: string | string[] | undefined): StartPosition {
  const raw = Array.isArray(header) ? header[0] : header
  const cursor = raw?.trim() ?? ''
  if (cursor === '') return { kind: 'new' }
  if (stream === META_EVENTS && (cursor === '0' || cursor === '0-0')) return { kind: 'snapshot' }
  return { kind: 'after', cursor }
}

export function eventRoutes (app: ApiScope, ctx: ApiContext): void {
  const open = (stream: string) => async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    // Touch the store before taking over the socket: if it is down the client gets a 503 envelope with Retry-After, not a dead stream.
    ctx.records.events.head(stream)
    const pos = startPosition(stream, req.headers['last-event-id'])
    reply.hijack()
    ctx.hub.open(stream, reply.raw, pos)
  }

  const schema = (summary: string) => ({
    summary,
    tags: ['events'],
    headers: Type.Object({
      'last-event-id': Type.Optional(Type.String({ description: 'resume strictly after this id; 0 or 0-0 on meta: snapshot then live tail' }))
    }),
    produces: ['text/event-stream'],
    response: withErrors({ 200: Type.String({ description: 'text/event-stream: id, event, data per entry; :keep-alive after 30 s of silence' }) })
  })

  // No automatic HEAD route: a HEAD would take over the socket and never end.
  app.get('/api/events/meta', { exposeHeadRoute: false, schema: schema('Record key changes (set/del) as server-sent events') }, open(META_EVENTS))
  app.get('/api/events/files', { exposeHeadRoute: false, schema: schema('File events (add/change/delete/rename/reset) as server-sent events') }, open(FILE_EVENTS))
}
