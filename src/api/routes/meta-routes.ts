/**
 * The `/meta` record routes (docs/design/original.md#routes): list, read, replace (PUT), merge
 * (PATCH), delete. `{hash}` is a record id or any CID of the record; a write
 * addressed by a valid CID no record carries creates a record holding it.
 */
import type { FastifyInstance } from 'fastify'
import { isCid } from '../../cid/index.js'
import { InvalidAddressError, UnknownRecordError, isRecordId, type RecordId } from '../../records/index.js'
import type { ApiContext } from '../context.js'
import { hashParam, intString, queryInt, stringArray, stringMap, withErrors } from '../schemas.js'
import { clientFields } from '../location-fields.js'

/** Most fields one write may carry: bounds the work (and transaction size) one request can cause. */
export const MAX_FIELDS_PER_WRITE = 10_000

/** Refuses an address that can be neither a record id nor a CID (400 `invalid_address`). */
export function checkAddress (addr: string): void {
  if (!isRecordId(addr) && !isCid(addr)) throw new InvalidAddressError(addr)
}

const recordBody = { ...stringMap, maxProperties: MAX_FIELDS_PER_WRITE, description: 'flat map of field path to string value' }

const writeReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    hashId: { type: 'string' },
    updated: { type: 'integer' },
    created: { type: 'boolean' }
  }
} as const

export function metaRoutes (app: FastifyInstance, ctx: ApiContext): void {
  const { records } = ctx

  app.get<{ Querystring: { after?: string, limit?: string } }>('/meta', {
    schema: {
      summary: 'Record ids (canonical roots, in id order); all of them unless limit is given',
      tags: ['meta'],
      querystring: {
        type: 'object',
        properties: { after: { type: 'string', maxLength: 64 }, limit: intString },
        additionalProperties: false
      },
      response: withErrors({
        200: {
          type: 'object',
          properties: {
            hashIds: stringArray,
            count: { type: 'integer' },
            total: { type: 'integer' },
            nextAfter: { type: 'string' }
          }
        }
      })
    }
  }, async (req) => {
    const limit = req.query.limit === undefined ? undefined : queryInt(req.query.limit, 'limit', 1000, 1, 100_000)
    const hashIds: RecordId[] = limit === undefined
      ? [...records.iterateRoots()]
      : records.listRoots({ after: req.query.after, limit })
    const out: { hashIds: string[], count: number, total: number, nextAfter?: string } = {
      hashIds, count: hashIds.length, total: records.countRecords()
    }
    if (limit !== undefined && hashIds.length === limit) out.nextAfter = hashIds[hashIds.length - 1]
    return out
  })

  app.get<{ Params: { hash: string } }>('/meta/:hash', {
    schema: {
      summary: 'A record as a flat map; hashId is its canonical root',
      tags: ['meta'],
      params: hashParam,
      response: withErrors({ 200: { type: 'object', properties: { hashId: { type: 'string' }, metadata: stringMap } } }, 404)
    }
  }, async (req) => {
    const addr = req.params.hash
    checkAddress(addr)
    const found = ctx.read(() => {
      const rid = records.resolveRoot(addr)
      const metadata = rid === undefined ? undefined : records.getFlat(rid)
      return rid === undefined || metadata === undefined ? undefined : { hashId: rid, metadata }
    })
    if (found === undefined) throw new UnknownRecordError(addr)
    return found
  })

  app.put<{ Params: { hash: string }, Body: Record<string, string> }>('/meta/:hash', {
    schema: {
      summary: 'Replace the record\'s fields (fields the store owns — filePath, sizeByte, mtimeNano, cids/, holders/ — are kept)',
      tags: ['meta'],
      params: hashParam,
      body: recordBody,
      response: withErrors({ 200: writeReply }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.setFlat(req.params.hash, clientFields(records, req.params.hash, req.body))
    return { success: true, hashId: r.rid, updated: r.updated, created: r.created }
  })

  app.patch<{ Params: { hash: string }, Body: Record<string, string> }>('/meta/:hash', {
    schema: {
      summary: 'Merge the given fields into the record',
      tags: ['meta'],
      params: hashParam,
      body: recordBody,
      response: withErrors({ 200: writeReply }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.mergeFlat(req.params.hash, clientFields(records, req.params.hash, req.body))
    return { success: true, hashId: r.rid, updated: r.updated, created: r.created }
  })

  app.delete<{ Params: { hash: string } }>('/meta/:hash', {
    schema: {
      summary: 'Delete the record (every root of its group); 200 even when there was nothing',
      tags: ['meta'],
      params: hashParam,
      response: withErrors({
        200: { type: 'object', properties: { success: { type: 'boolean' }, hashId: { type: 'string' }, deleted: { type: 'integer' } } }
      })
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.deleteRoot(req.params.hash)
    return { success: true, hashId: r.rid ?? req.params.hash, deleted: r.deleted }
  })
}
