/** The KV browser `/api/kv/*`: store figures, keys, one level of the key space, key and value searches, one key. */
import { IntString, Nullable, StringList, Type } from './kit.js'

export const KvInfo = Type.Object({
  prefix: Type.String(),
  fileCount: Type.Integer(),
  keyCount: Nullable(Type.Integer()),
  totalSize: Nullable(Type.Integer()),
  memoryUsage: Type.Integer(),
  sweptAt: Nullable(Type.Integer())
})

export const KeysQuery = Type.Object({ cursor: Type.Optional(Type.String({ maxLength: 64 })), count: Type.Optional(IntString) },
  { additionalProperties: false })

export const KeysPage = Type.Object({ keys: StringList, cursor: Type.String(), hasMore: Type.Boolean() })

export const KeyParams = Type.Object({ '*': Type.String({ description: 'the key: file:<root> for a record, any other key for its value' }) })

/** A record as its flat map (`type: 'hash'`) or a plain key's value (`type: 'string'`). */
export const KeyAnswer = Type.Object({ key: Type.String(), type: Type.String(), value: Type.Unknown() })

export const TreeQuery = Type.Object({
  prefix: Type.Optional(Type.String({ maxLength: 1024 })),
  delimiter: Type.Optional(Type.String({ minLength: 1, maxLength: 1 })),
  cursor: Type.Optional(Type.String({ maxLength: 2048 })),
  max: Type.Optional(IntString)
}, { additionalProperties: false })

export const TreeLevel = Type.Object({
  prefix: Type.String(),
  delimiter: Type.String(),
  branches: StringList,
  leaves: StringList,
  cursor: Type.String(),
  hasMore: Type.Boolean()
})

export const KeySearchQuery = Type.Object({
  contains: Type.Optional(Type.String({ maxLength: 256 })),
  prefix: Type.Optional(Type.String({ maxLength: 1024 })),
  limit: Type.Optional(IntString),
  cursor: Type.Optional(Type.String({ maxLength: 2048 }))
}, { additionalProperties: false })

export const KeySearch = Type.Object({ contains: Type.String(), keys: StringList, truncated: Type.Boolean(), cursor: Type.String() })

export const ValueSearchQuery = Type.Object({
  contains: Type.Optional(Type.String({ maxLength: 256 })),
  fields: Type.Optional(Type.String({ maxLength: 2048 })),
  limit: Type.Optional(IntString),
  cursor: Type.Optional(Type.String({ maxLength: 2048 }))
}, { additionalProperties: false })

export const ValueSearch = Type.Object({
  contains: Type.String(),
  fields: StringList,
  matches: Type.Array(Type.Object({ key: Type.String(), value: Type.String() })),
  truncated: Type.Boolean(),
  cursor: Type.String()
})

export const KeyQuery = Type.Object({ key: Type.String({ minLength: 1 }) }, { additionalProperties: false })

export const ValueBody = Type.Object({ key: Type.String({ minLength: 1 }), value: Type.String({ maxLength: 256 * 1024 }) }, { additionalProperties: false })

export const ValueReply = Type.Object({ key: Type.String(), type: Type.String(), value: Nullable(Type.String()), exists: Type.Boolean() })

export const KeyDeleted = Type.Object({ key: Type.String(), deleted: Type.Boolean() })
