/**
 * The shapes the page reads from the node's API: the node's own schemas
 * (src/api/wire/, the same ones that validate, serialize and document each
 * route), as types only. `export type` leaves nothing of src/ in the bundle.
 */

export type { ErrorEnvelope } from '../../src/api/wire/kit.js'
export type { SearchHit, SearchResponse } from '../../src/api/wire/metadata.js'
export type { FieldVersion, RecordView } from '../../src/api/wire/records.js'
export type { FileInfo } from '../../src/api/wire/files.js'
export type { Health, HealthReason, Stats, Status } from '../../src/api/wire/system.js'
export type { FullHashStatus, WatcherProgress, WatcherView as WatcherStatus } from '../../src/api/wire/watcher.js'
export type {
  MeshDigest, MeshDigests, MeshJoin, MeshMapping, MeshMember, MeshPeer, MeshPortMapping, MeshReach, MeshRelay, MeshRelayLimits, MeshRelayPeer,
  MeshStatus, PeerDigest
} from '../../src/api/wire/mesh.js'

/** One server-sent event as the page's stream reader parsed it. */
export interface StreamEvent { id?: string, event: string, data: Record<string, string> }
