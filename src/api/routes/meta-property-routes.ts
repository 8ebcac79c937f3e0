/**
 * Single-field routes under `/meta/{hash}/{key…}` (docs/design/original.md#routes). The key may
 * contain `/`. Reads answer text/plain. Writes take `{"value": "…"}` as JSON
 * or the raw body as the value (any other content type, decoded as strict
 * UTF-8), as the original did.
 */
import { InvalidInputError } from '../../common/index.js'
import { UnknownRecordError, isLocationField, validateFieldPath } from '../../records/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError } from '../errors.js'
import { checkAddress } from './meta-routes.js'
import { clientFields, refuseLocationField } from '../location-fields.js'
import { Type, withErrors, type Static } from '../wire/kit.js'
import { PropertyParams, PropertyReply, ValueBody } from '../wire/records.js'

/** Largest single value body: the original read property bodies up to 1 MiB. */
const PROPERTY_BODY_LIMIT = 1024 * 1024

/** What the handlers below read of a request. */
interface PropertyRequest { params: Static<typeof PropertyParams>, body?: unknown }

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The value a write carries: the JSON `value` member or the raw text. */
function bodyValue (req: PropertyRequest): string {
  const b = req.body
  if (typeof b === 'string') return b
  if (b !== null && typeof b === 'object' && !Array.isArray(b)) {
    const v = (b as Record<string, unknown>).value
    if (typeof v === 'string') return v
    if (v === undefined) throw new ApiError(400, 'schema_violation', 'value is required: send {"value": "<string>"} or the raw value')
    throw new ApiError(400, 'schema_violation', 'value must be a string')
  }
  if (b === undefined) throw new ApiError(400, 'schema_violation', 'value is required: send {"value": "<string>"} or the raw value')
  throw new ApiError(400, 'schema_violation', 'body must be {"value": "<string>"} or the raw value')
}

function fieldOf (req: PropertyRequest): string {
  const field = req.params['*']
  validateFieldPath(field)
  return field
}

export function metaPropertyRoutes (app: ApiScope, ctx: ApiContext): void {
  const { records } = ctx

  // Raw values: anything that is not JSON is the value itself, as strict UTF-8 (mis-encoded bytes are refused, not replaced).
  app.removeContentTypeParser('text/plain')
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: PROPERTY_BODY_LIMIT }, (_req, body, done) => {
    try {
      done(null, utf8.decode(body as Buffer))
    } catch {
      done(new InvalidInputError('body is not valid UTF-8', { code: 'invalid_value' }), undefined)
    }
  })

  app.get('/meta/:hash/*', {
    schema: {
      summary: 'One field\'s value as text/plain (an empty value is 200 with an empty body)',
      tags: ['meta'],
      params: PropertyParams,
      produces: ['text/plain'],
      response: withErrors({ 200: Type.String() }, 404)
    }
  }, async (req, reply) => {
    checkAddress(req.params.hash)
    const field = fieldOf(req)
    const v = ctx.read(() => {
      const rid = records.resolveRoot(req.params.hash)
      if (rid === undefined) throw new UnknownRecordError(req.params.hash)
      return records.getProperty(rid, field)
    })
    if (v === undefined) throw new ApiError(404, 'unknown_property', 'property not found')
    return reply.type('text/plain; charset=utf-8').send(v)
  })

  app.put('/meta/:hash/*', {
    bodyLimit: PROPERTY_BODY_LIMIT,
    schema: {
      summary: 'Set one field',
      tags: ['meta'],
      params: PropertyParams,
      body: ValueBody,
      response: withErrors({ 200: PropertyReply }, 413)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const field = fieldOf(req)
    if (isLocationField(field)) {
      // Only the same value as shown is accepted, and written nowhere (location-fields.ts).
      clientFields(records, req.params.hash, { [field]: bodyValue(req) })
      return { success: true, hashId: records.resolveRoot(req.params.hash) ?? req.params.hash, property: field, created: false }
    }
    const r = await records.setProperty(req.params.hash, field, bodyValue(req))
    return { success: true, hashId: r.rid, property: field, created: r.created }
  })

  app.delete('/meta/:hash/*', {
    schema: {
      summary: 'Delete one field',
      tags: ['meta'],
      params: PropertyParams,
      response: withErrors({ 200: PropertyReply })
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const field = fieldOf(req)
    refuseLocationField(field)
    const r = await records.deleteProperty(req.params.hash, field)
    return { success: true, hashId: r.rid ?? req.params.hash, property: field, deleted: r.deleted }
  })

  app.post('/meta/:hash/_add/*', {
    bodyLimit: PROPERTY_BODY_LIMIT,
    schema: {
      summary: 'Add a member to a pipe-delimited set field (a|b|c); a member already present is a no-op',
      tags: ['meta'],
      params: PropertyParams,
      body: ValueBody,
      response: withErrors({ 200: PropertyReply }, 413)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const field = fieldOf(req)
    refuseLocationField(field)
    const value = bodyValue(req)
    if (value === '') throw new ApiError(400, 'schema_violation', 'value is required')
    const r = await records.addToSet(req.params.hash, field, value)
    return { success: true, hashId: r.rid, property: field, added: r.added }
  })
}
