/**
 * The `/meta` record routes (docs/design/original.md#routes): list, read, replace (PUT), merge
 * (PATCH), delete. `{hash}` is a record id or any CID of the record; a write
 * addressed by a valid CID no record carries creates a record holding it.
 */
import { isCid } from '../../cid/index.js'
import { InvalidAddressError, UnknownRecordError, isRecordId, type RecordId } from '../../records/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import { queryInt } from '../query-int.js'
import { clientFields } from '../location-fields.js'
import { withErrors } from '../wire/kit.js'
import { DeleteReply, FlatRecord, HashParams, MetaList, MetaListQuery, RecordBody, WriteReply } from '../wire/records.js'

/** Refuses an address that can be neither a record id nor a CID (400 `invalid_address`). */
export function checkAddress (addr: string): void {
  if (!isRecordId(addr) && !isCid(addr)) throw new InvalidAddressError(addr)
}

export function metaRoutes (app: ApiScope, ctx: ApiContext): void {
  const { records } = ctx

  app.get('/meta', {
    schema: {
      summary: 'Record ids (canonical roots, in id order); all of them unless limit is given',
      tags: ['meta'],
      querystring: MetaListQuery,
      response: withErrors({ 200: MetaList })
    }
  }, async (req) => {
    const limit = req.query.limit === undefined ? undefined : queryInt(req.query.limit, 'limit', 1000, 1, 100_000)
    const hashIds: RecordId[] = limit === undefined
      ? [...records.iterateRoots()]
      : records.listRoots({ after: req.query.after, limit })
    const out: MetaList = { hashIds, count: hashIds.length, total: records.countRecords() }
    if (limit !== undefined && hashIds.length === limit) out.nextAfter = hashIds[hashIds.length - 1]
    return out
  })

  app.get('/meta/:hash', {
    schema: {
      summary: 'A record as a flat map; hashId is its canonical root',
      tags: ['meta'],
      params: HashParams,
      response: withErrors({ 200: FlatRecord }, 404)
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

  app.put('/meta/:hash', {
    schema: {
      summary: 'Replace the record\'s fields (fields the store owns — filePath, sizeByte, mtimeNano, cids/, holders/ — are kept)',
      tags: ['meta'],
      params: HashParams,
      body: RecordBody,
      response: withErrors({ 200: WriteReply }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.setFlat(req.params.hash, clientFields(records, req.params.hash, req.body))
    return { success: true, hashId: r.rid, updated: r.updated, created: r.created }
  })

  app.patch('/meta/:hash', {
    schema: {
      summary: 'Merge the given fields into the record',
      tags: ['meta'],
      params: HashParams,
      body: RecordBody,
      response: withErrors({ 200: WriteReply }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.mergeFlat(req.params.hash, clientFields(records, req.params.hash, req.body))
    return { success: true, hashId: r.rid, updated: r.updated, created: r.created }
  })

  app.delete('/meta/:hash', {
    schema: {
      summary: 'Delete the record (every root of its group); 200 even when there was nothing',
      tags: ['meta'],
      params: HashParams,
      response: withErrors({ 200: DeleteReply })
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const r = await records.deleteRoot(req.params.hash)
    return { success: true, hashId: r.rid ?? req.params.hash, deleted: r.deleted }
  })
}
