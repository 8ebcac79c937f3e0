/**
 * mesh/protocol: the replication core with no I/O of its own (see
 * runtime.ts for the runtime and store contracts it is driven through).
 */
export { MeshCore } from './mesh-core.js'
export type { GossipVerdict } from './gossip-intake.js'
export { DEFAULT_MESH_OPTIONS, meshOptions } from './options.js'
export type { MeshOptions } from './options.js'
export { CURSOR_PREFIX } from './peer-sync.js'
export type { MeshStatus, PeerStatus, SelfStatus, PeerCounters } from './status.js'
export type { CopyStatus } from './range-copy.js'
export type {
  MeshRuntime, MeshEndpoint, RuntimeProbe, ReplicaStore, ChangePage, RangePage, ApplyOutcome, BulkPage, StoreDigest, PeerKey, Cursor, RemoteEntry
} from './runtime.js'
