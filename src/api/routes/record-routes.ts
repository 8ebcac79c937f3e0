/**
 * `GET /api/records/{hash}`: everything about one record in one read, for
 * the web page's record view: the merged fields, every CID with the
 * canonical one, the group's roots, this node's duplicate paths, and the
 * version of each field (when and by which node it was last written, from
 * the version map), deleted fields included as tombstones.
 *
 * Behind the token like `/meta/{hash}`: versions name the nodes that wrote.
 */
import type { FastifyInstance } from 'fastify'
import { UnknownRecordError, type RecordId, type RemoteEntry } from '../../records/index.js'
import type { ApiContext } from '../context.js'
import { hashParam, stringArray, stringMap, withErrors } from '../schemas.js'
import { checkAddress } from './meta-routes.js'

export interface FieldVersion {
  field: string
  /** The hybrid logical clock of the write (16 hex digits: 12 of wall milliseconds, 4 of counter). */
  hlc: string
  /** The wall time in the clock, as an ISO 8601 string. */
  at: string
  /** The node that wrote it (its node id; a peer id in a mesh). */
  origin: string
  /** The root (of the record's group) whose version this is. */
  root: string
  /** True for a tombstone: the field was deleted by this write. */
  deleted: boolean
}

const versionSchema = {
  type: 'object',
  required: ['field', 'hlc', 'at', 'origin', 'root', 'deleted'],
  properties: {
    field: { type: 'string' },
    hlc: { type: 'string' },
    at: { type: 'string' },
    origin: { type: 'string' },
    root: { type: 'string' },
    deleted: { type: 'boolean' }
  }
} as const

/** Milliseconds in an HLC string as an ISO date ("" for a malformed clock, which the record layer never issues). */
function hlcTime (hlc: string): string {
  const ms = parseInt(hlc.slice(0, 12), 16)
  return Number.isFinite(ms) ? new Date(ms).toISOString() : ''
}

/**
 * Per field, the newest version across the group's roots: the one whose
 * value the merged document shows (groups merge last-writer-wins per key).
 * Version strings order as (hlc, origin), so the greater pair wins.
 */
export function fieldVersions (roots: ReadonlyArray<{ rid: RecordId, entries: RemoteEntry[] }>): FieldVersion[] {
  const best = new Map<string, FieldVersion>()
  for (const { rid, entries } of roots) {
    const prefix = `file:${rid}/`
    for (const e of entries) {
      if (!e.key.startsWith(prefix)) continue // the root tombstone `file:<rid>` names no field
      const field = e.key.slice(prefix.length)
      const cur = best.get(field)
      if (cur !== undefined && (cur.hlc > e.hlc || (cur.hlc === e.hlc && cur.origin >= e.origin))) continue
      best.set(field, { field, hlc: e.hlc, at: hlcTime(e.hlc), origin: e.origin, root: rid, deleted: e.value === null })
    }
  }
  return [...best.values()].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0))
}

export function recordRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: { hash: string } }>('/api/records/:hash', {
    schema: {
      summary: 'One record for the web page: merged fields, CIDs, group roots, duplicates and each field\'s version',
      tags: ['meta'],
      params: hashParam,
      response: withErrors({
        200: {
          type: 'object',
          required: ['hashId', 'roots', 'metadata', 'cids', 'duplicates', 'versions'],
          properties: {
            hashId: { type: 'string', description: 'the canonical root' },
            roots: { ...stringArray, description: 'every root of the record\'s group, canonical first' },
            metadata: { ...stringMap, description: 'flat fields, cids/<cid> members included' },
            cids: stringArray,
            canonical_cid: { type: 'string' },
            duplicates: { ...stringArray, description: 'other paths of the same content on this node' },
            versions: { type: 'array', items: versionSchema, description: 'per field (deleted ones too), the version that decided it' }
          }
        }
      }, 404)
    }
  }, async (req) => {
    const addr = req.params.hash
    checkAddress(addr)
    const found = ctx.read(() => {
      const doc = ctx.records.getDocument(addr)
      if (doc === undefined) return undefined
      const versions = fieldVersions(doc.members.map(rid => ({ rid, entries: ctx.records.exportRoot(rid) })))
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
