/**
 * Records: `/meta` (list, read, replace, merge, delete), single fields under
 * `/meta/{hash}/{key…}`, the page's record view `/api/records/{hash}`, and
 * the public CID document `/api/meta/{cid}`.
 */
import { Dict, IntString, OneOf, StringList, StringMap, Type, type Static } from './kit.js'

/** Most fields one write may carry: bounds the work (and transaction size) one request can cause. */
export const MAX_FIELDS_PER_WRITE = 10_000

/** A record address (`/meta/{hash}`): a root id or any CID, checked by the handler for a precise error. */
export const HashParams = Type.Object({ hash: Type.String({ minLength: 1, maxLength: 256, description: 'a record id or any CID of the record' }) })

export const CidParams = Type.Object({ cid: Type.String({ maxLength: 256, description: 'any CID of the record (CIDv1, base32 lower-case)' }) })

export const RecordBody = Dict(Type.String(), { maxProperties: MAX_FIELDS_PER_WRITE, description: 'flat map of field path to string value' })

export const WriteReply = Type.Object({ success: Type.Boolean(), hashId: Type.String(), updated: Type.Integer(), created: Type.Boolean() })

export const DeleteReply = Type.Object({ success: Type.Boolean(), hashId: Type.String(), deleted: Type.Integer() })

export const MetaListQuery = Type.Object({ after: Type.Optional(Type.String({ maxLength: 64 })), limit: Type.Optional(IntString) },
  { additionalProperties: false })

export const MetaList = Type.Object({ hashIds: StringList, count: Type.Integer(), total: Type.Integer(), nextAfter: Type.Optional(Type.String()) })
export type MetaList = Static<typeof MetaList>

/** A record as a flat map; `hashId` is its canonical root. */
export const FlatRecord = Type.Object({ hashId: Type.String(), metadata: StringMap })
export type FlatRecord = Static<typeof FlatRecord>

export const PropertyParams = Type.Object({
  hash: Type.String({ minLength: 1, maxLength: 256, description: 'a record id or any CID of the record' }),
  '*': Type.String({ description: 'field path; may contain /' })
})

/** A single field's value: `{"value": "…"}` as JSON, or the raw text in any other content type. */
export const ValueBody = OneOf([Type.Object({ value: Type.String() }), Type.String()], {
  description: '{"value": "<string>"} as application/json, or the raw value in any other content type'
})

/** Set (`created`), delete (`deleted`) or add to a set (`added`): each answer carries its own. */
export const PropertyReply = Type.Object({
  success: Type.Boolean(),
  hashId: Type.String(),
  property: Type.String(),
  created: Type.Optional(Type.Boolean()),
  deleted: Type.Optional(Type.Boolean()),
  added: Type.Optional(Type.Boolean())
})

/** One field's version in `/api/records/{hash}`. */
export const FieldVersion = Type.Object({
  field: Type.String(),
  hlc: Type.String({ description: 'the hybrid logical clock of the write (16 hex digits: 12 of wall milliseconds, 4 of counter)' }),
  at: Type.String({ description: 'the wall time in the clock, ISO 8601' }),
  origin: Type.String({ description: 'the node that wrote it (its node id; a peer id in a mesh)' }),
  root: Type.String({ description: 'the root (of the record\'s group) whose version this is' }),
  deleted: Type.Boolean({ description: 'a tombstone: the field was deleted by this write' })
})
export type FieldVersion = Static<typeof FieldVersion>

/** GET /api/records/{hash}: everything about one record, for the page. */
export const RecordView = Type.Object({
  hashId: Type.String({ description: 'the canonical root' }),
  roots: Type.Array(Type.String(), { description: 'every root of the record\'s group, canonical first' }),
  metadata: Dict(Type.String(), { description: 'flat fields, cids/<cid> members included' }),
  cids: StringList,
  canonical_cid: Type.Optional(Type.String()),
  duplicates: Type.Array(Type.String(), { description: 'other paths of the same content on this node' }),
  versions: Type.Array(FieldVersion, { description: 'per field (deleted ones too), the version that decided it' })
})
export type RecordView = Static<typeof RecordView>

/** GET /api/meta/{cid}: the public document peers resolve metadata with (it never discloses the root id). */
export const CidDocument = Type.Object({
  cid: Type.String({ description: 'the CID as requested' }),
  metadata: Dict(Type.String(), { description: 'flat fields, cids/<cid> members included' }),
  cids: StringList,
  canonical_cid: Type.Optional(Type.String({ description: 'derived on read by rank (docs/design/data-model.md#canonical-cid), never stored' })),
  duplicates: Type.Array(Type.String(), { description: 'other paths of the same content on this node' })
})
export type CidDocument = Static<typeof CidDocument>
