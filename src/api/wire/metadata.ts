/**
 * The original editor's surface `/api/metadata/*` (search, list, reads and
 * writes, one property, batches, clear) and `GET /api/search`, the search
 * language as a link.
 */
import { Dict, IntString, OneOf, StringEnum, StringList, StringMap, Type, type Static } from './kit.js'
import { MAX_FIELDS_PER_WRITE } from './records.js'

/** Most updates in one batch: each is a transaction, so this bounds one request's work. */
export const MAX_BATCH = 1000

export const SearchFilter = Type.Object({
  property: Type.Optional(Type.String({ maxLength: 512, description: 'absent or empty: the filter matches everything, as in the original' })),
  values: Type.Optional(Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 256 })),
  exact: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export const SearchBody = Type.Object({
  query: Type.Optional(Type.String({ maxLength: 1024 })),
  hashId: Type.Optional(Type.String({ maxLength: 256 })),
  property: Type.Optional(Type.String({ maxLength: 512 })),
  propertyValue: Type.Optional(Type.String({ maxLength: 1024 })),
  limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
  sort: Type.Optional(Type.String({ maxLength: 513, description: 'beyond the original: order by this field (-field: descending); page with offset' })),
  filters: Type.Optional(Type.Array(SearchFilter, { maxItems: 64 }))
}, { additionalProperties: false })

export const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({
    maxLength: 1024,
    description: 'words (free text), field:value (contains), field:=value (equals), "quoted runs", a bare CID; absent or empty: every record'
  })),
  limit: Type.Optional(Type.String({ ...IntString, description: '0 or absent: 100; capped at 1000' })),
  offset: Type.Optional(Type.String({ ...IntString, description: 'skip this many matches' })),
  cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'nextCursor of the previous page' })),
  sort: Type.Optional(Type.String({ maxLength: 513, description: 'order by this field (-field: descending); page with offset' }))
}, { additionalProperties: false })

export const SearchHit = Type.Object({
  hashId: Type.String(),
  metadata: StringMap,
  canonical_cid: Type.Optional(Type.String({ description: 'beyond the original: derived from the cids/ members by rank (docs/design/data-model.md#canonical-cid), absent when there are none' }))
})
export type SearchHit = Static<typeof SearchHit>

/** The answer of both search routes (POST /api/metadata/search, GET /api/search). */
export const SearchResponse = Type.Object({
  results: Type.Array(SearchHit),
  count: Type.Integer(),
  total: Type.Integer(),
  nextCursor: Type.Optional(Type.String())
})
export type SearchResponse = Static<typeof SearchResponse>

export const ListQuery = Type.Object({ offset: Type.Optional(IntString), limit: Type.Optional(IntString) }, { additionalProperties: false })

export const ListResponse = Type.Object({
  items: Type.Array(Type.Object({
    hashId: Type.String(),
    title: Type.Optional(Type.String()),
    fileName: Type.Optional(Type.String()),
    filePath: Type.Optional(Type.String()),
    type: Type.Optional(Type.String()),
    year: Type.Optional(Type.String())
  })),
  count: Type.Integer(),
  total: Type.Integer()
})

export const HashIds = Type.Object({ hashIds: StringList, count: Type.Integer() })

export const EditorBody = Dict(Type.String(), { maxProperties: MAX_FIELDS_PER_WRITE })

export const EditorWriteReply = Type.Object({ status: Type.String(), hashId: Type.String(), message: Type.String() })

export const EditorDeleteReply = Type.Object({ status: Type.String(), hashId: Type.String(), deletedKeys: Type.Integer() })

export const PropertyQuery = Type.Object({ property: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false })

export const PropertyValue = Type.Object({ hashId: Type.String(), property: Type.String(), value: Type.String() })

export const PropertyPair = Type.Object({ property: Type.String({ minLength: 1, maxLength: 512 }), value: Type.String() }, { additionalProperties: false })

/** A location field is answered with the value shown and no message (it is written nowhere). */
export const PropertyWriteReply = Type.Object({
  status: Type.String(),
  hashId: Type.String(),
  property: Type.String(),
  value: Type.String(),
  message: Type.Optional(Type.String())
})

export const BatchUpdate = Type.Object({
  hashId: Type.String({ maxLength: 256 }),
  metadata: Type.Optional(Dict(Type.String(), { maxProperties: MAX_FIELDS_PER_WRITE, description: 'fields to merge' })),
  properties: Type.Optional(OneOf([
    Dict(Type.String(), { maxProperties: MAX_FIELDS_PER_WRITE }),
    Type.Array(PropertyPair, { maxItems: MAX_FIELDS_PER_WRITE })
  ], { description: 'more fields to merge: a map, or a list of {property, value}' }))
}, { additionalProperties: false })
export type BatchUpdate = Static<typeof BatchUpdate>

export const BatchBody = Type.Object({ updates: Type.Array(BatchUpdate, { maxItems: MAX_BATCH }) }, { additionalProperties: false })

export const BatchResult = Type.Object({ hashId: Type.String(), status: StringEnum(['ok', 'error']), error: Type.Optional(Type.String()) })
export type BatchResult = Static<typeof BatchResult>

export const BatchReply = Type.Object({
  status: Type.String(),
  total: Type.Integer(),
  success: Type.Integer(),
  errors: Type.Integer(),
  results: Type.Array(BatchResult)
})

export const ClearReply = Type.Object({ status: Type.String(), message: Type.String(), deletedCount: Type.Integer() })
