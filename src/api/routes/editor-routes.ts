/**
 * The rest of the original metadata editor's surface (docs/design/original.md#routes, meta-sort's
 * editor UI): one property read and write, a batch of record updates, and
 * clearing every record. Shapes are the original's; every route is behind
 * the token like every other write and internal read.
 *
 * Decisions where the original was odd:
 * - It did not resolve `{hashId}` on these routes (the id was used as the
 *   root as given). Roots are record ids here and records are addressed by
 *   any of their CIDs everywhere else, so these routes resolve too: a
 *   record id or any CID, and the answer's `hashId` is the canonical root.
 * - A batch applies each update as its own write: an update that fails
 *   (a bad address, a bad or deprecated field) writes nothing and is
 *   reported in its result, the others are written, as the original's
 *   per-item results say. A body that is not the documented shape at all is
 *   a 400 and writes nothing.
 * - `clear` removes every record through the record layer (root tombstones,
 *   in transactions of 500 records), so in a mesh the deletion replicates
 *   like any delete. The watcher's own state is left alone: files already
 *   seen are recorded again by `POST /api/watchers/reset`.
 */
import { UnknownRecordError, isLocationField } from '../../records/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError } from '../errors.js'
import { withErrors } from '../wire/kit.js'
import {
  BatchBody, BatchReply, ClearReply, PropertyPair, PropertyQuery, PropertyValue, PropertyWriteReply, type BatchResult, type BatchUpdate
} from '../wire/metadata.js'
import { HashParams } from '../wire/records.js'
import { checkAddress } from './meta-routes.js'
import { EDITOR_DROPPED } from './metadata-routes.js'
import { clientFields } from '../location-fields.js'

/** The fields one batch update writes, the editor's dropped fields left out. */
function fieldsOf (u: BatchUpdate): Record<string, string> {
  const fields: Record<string, string> = { ...u.metadata }
  if (Array.isArray(u.properties)) for (const p of u.properties) fields[p.property] = p.value
  else Object.assign(fields, u.properties)
  for (const f of EDITOR_DROPPED) delete fields[f]
  return fields
}

export function editorRoutes (app: ApiScope, ctx: ApiContext): void {
  const { records } = ctx

  app.get('/api/metadata/:hash/property', {
    schema: {
      summary: 'One field of a record (the original editor\'s read)',
      tags: ['metadata'],
      params: HashParams,
      querystring: PropertyQuery,
      response: withErrors({ 200: PropertyValue }, 404)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const { property } = req.query
    const found = ctx.read(() => {
      const rid = records.resolveRoot(req.params.hash)
      if (rid === undefined) throw new UnknownRecordError(req.params.hash)
      return { rid, value: records.getProperty(rid, property) }
    })
    if (found.value === undefined) throw new ApiError(404, 'unknown_property', 'property not found')
    return { hashId: found.rid, property, value: found.value }
  })

  app.put('/api/metadata/:hash/property', {
    schema: {
      summary: 'Set one field of a record (the original editor\'s write)',
      tags: ['metadata'],
      params: HashParams,
      body: PropertyPair,
      response: withErrors({ 200: PropertyWriteReply }, 413, 415)
    }
  }, async (req) => {
    checkAddress(req.params.hash)
    const { property, value } = req.body
    if (isLocationField(property)) {
      clientFields(records, req.params.hash, { [property]: value }) // the value shown only, written nowhere (location-fields.ts)
      return { status: 'success', hashId: records.resolveRoot(req.params.hash) ?? req.params.hash, property, value }
    }
    const r = await records.setProperty(req.params.hash, property, value)
    return { status: 'ok', hashId: r.rid, property, value, message: 'Property updated successfully' }
  })

  app.post('/api/metadata/batch', {
    schema: {
      summary: 'Merge fields into many records; each update succeeds or fails on its own',
      tags: ['metadata'],
      body: BatchBody,
      response: withErrors({ 200: BatchReply }, 413, 415)
    }
  }, async (req) => {
    const { updates } = req.body
    if (updates.length === 0) throw new ApiError(400, 'schema_violation', 'updates is empty')
    // Queued together: kv's group commit joins them in one transaction, and a failing update rolls back alone.
    const settled = await Promise.allSettled(updates.map(async (u) => {
      checkAddress(u.hashId)
      return await records.mergeFlat(u.hashId, clientFields(records, u.hashId, fieldsOf(u)))
    }))
    const results: BatchResult[] = settled.map((s, i) => s.status === 'fulfilled'
      ? { hashId: s.value.rid, status: 'ok' }
      : { hashId: updates[i].hashId, status: 'error', error: s.reason instanceof Error ? s.reason.message : String(s.reason) })
    const errors = results.filter(r => r.status === 'error').length
    return { status: 'completed', total: results.length, success: results.length - errors, errors, results }
  })

  app.post('/api/metadata/clear', {
    schema: {
      summary: 'Delete every record (needs the token whenever one is set); says how many it removed',
      tags: ['metadata'],
      response: withErrors({ 200: ClearReply })
    }
  }, async () => {
    const total = records.countRecords()
    ctx.log.warn('clearing every record', { records: total })
    let lastLogged = 0
    const deletedCount = await records.deleteAll({
      onProgress: (n) => {
        // A progress line for a large library (a transaction per 500 records).
        if (n - lastLogged >= 10_000) { lastLogged = n; ctx.log.info('clearing records', { deleted: n, of: total }) }
      }
    })
    ctx.log.warn('cleared every record', { deleted: deletedCount })
    return { status: 'ok', message: 'Metadata cleared', deletedCount }
  })
}
