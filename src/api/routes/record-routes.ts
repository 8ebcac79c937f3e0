/**
 * `GET /api/records/{hash}`: everything about one record in one read, for
 * the web page's record view: the merged fields, every CID with the
 * canonical one, the group's roots, this node's duplicate paths, and the
 * version of each field (when and by which node it was last written, from
 * the version map), deleted fields included as tombstones.
 *
 * Behind the token like `/meta/{hash}`: versions name the nodes that wrote.
 */
import { UnknownRecordError } from '../../records/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import { withErrors } from '../wire/kit.js'
import { HashParams, RecordView, type FieldVersion } from '../wire/records.js'
import { checkAddress } from './meta-routes.js'

/** Milliseconds in an HLC string as an ISO date ("" for a malformed clock, which the record layer never issues). */
function hlcTime (hlc: string): string {
  const ms = parseInt(hlc.slice(0, 12), 16)
  return Number.isFinite(ms) ? new Date(ms).toISOString() : ''
}

export function recordRoutes (app: ApiScope, ctx: ApiContext): void {
  app.get('/api/records/:hash', {
    schema: {
      summary: 'One record for the web page: merged fields, CIDs, group roots, duplicates and each field\'s version',
      tags: ['meta'],
      params: HashParams,
      response: withErrors({ 200: RecordView }, 404)
    }
  }, async (req) => {
    const addr = req.params.hash
    checkAddress(addr)
    const found = ctx.read(() => {
      const doc = ctx.records.getDocument(addr)
      if (doc === undefined) return undefined
      const versions: FieldVersion[] = ctx.records.fieldVersions(doc).map(v => ({ ...v, at: hlcTime(v.hlc) }))
      return {
        hashId: doc.rid,
        roots: doc.members,
        metadata: doc.metadata,
        cids: [...doc.cids].sort(),
        ...(doc.canonical_cid === undefined ? {} : { canonical_cid: doc.canonical_cid }),
        duplicates: doc.duplicates,
        versions
      }
    })
    if (found === undefined) throw new UnknownRecordError(addr)
    return found
  })
}
