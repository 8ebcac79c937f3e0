/**
 * `/health`, `/status`, `/api/stats`, `/api/schema`. The original's field
 * names stay (`redis`, `redisKeys`, `redisMemory`): its clients read them.
 */
import { Dict, Nullable, StringEnum, Type, type Static } from './kit.js'
import { MeshClock } from './mesh.js'
import { WatcherStatus } from './watcher.js'

export const HealthReason = Type.Object({ reason: StringEnum(['storage', 'clock', 'no_peer', 'watcher']), message: Type.String() })
export type HealthReason = Static<typeof HealthReason>

export const Health = Type.Object({
  status: StringEnum(['ok', 'degraded']),
  storage: Type.Boolean(),
  redis: Type.Boolean({ description: 'same as storage (name kept for clients of the original)' }),
  timestamp: Type.String(),
  clock: Nullable(MeshClock),
  reasons: Type.Array(HealthReason, { description: 'why the status is degraded (empty when ok)' })
})
export type Health = Static<typeof Health>

export const HealthQuery = Type.Object({ strict: Type.Optional(StringEnum(['1', '0', 'true', 'false'])) }, { additionalProperties: false })

export const Status = Type.Object({
  status: Type.String(),
  storage: Type.Boolean(),
  redis: Type.Boolean(),
  serviceName: Type.String(),
  version: Type.String(),
  nodeId: Type.String(),
  uptimeSeconds: Type.Integer(),
  fileCount: Type.Integer({ description: 'visible records (a group of roots sharing a CID counts once)' }),
  eventStreams: Type.Integer({ description: 'open SSE connections' }),
  search: Type.Boolean(),
  watcher: Nullable(WatcherStatus)
})
export type Status = Static<typeof Status>

export const Stats = Type.Object({
  records: Type.Integer(),
  redisKeys: Nullable(Type.Integer({ description: 'keys under file: (name kept from the original)' })),
  redisMemory: Nullable(Type.Integer({ description: 'bytes of the store file, search\'s index file beside it, and their WALs' })),
  identities: Nullable(Type.Integer()),
  files: Nullable(Type.Object({ count: Type.Integer(), totalSize: Type.Integer() })),
  udlUsers: Nullable(Type.Integer()),
  sweptAt: Nullable(Type.Integer()),
  sweeping: Type.Boolean()
})
export type Stats = Static<typeof Stats>

export const FieldSchema = Type.Object({
  type: Type.String(),
  hint: Type.Optional(Type.String()),
  key_hint: Type.Optional(Type.String()),
  breakdown: Dict(Type.Integer())
})
export type FieldSchema = Static<typeof FieldSchema>

export const StoreSchema = Type.Object({ fields: Dict(FieldSchema), generated_at: Type.String(), source: Type.String() })
export type StoreSchema = Static<typeof StoreSchema>
