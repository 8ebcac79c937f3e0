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
import { UnknownRecordError } from '../../records/index.js'
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
