/**
 * The shapes the page reads from the node's API (docs/api.md). Written out
 * here rather than imported: the page shares nothing with src/ at run time,
 * and these are exactly the fields it uses.
 */

export interface ErrorEnvelope { error: string, message: string, retryable: boolean }

export interface SearchHit { hashId: string, metadata: Record<string, string>, canonical_cid?: string }

export interface SearchResponse { results: SearchHit[], count: number, total: number, nextCursor?: string }

export interface FieldVersion { field: string, hlc: string, at: string, origin: string, root: string, deleted: boolean }

/** GET /api/records/{hash} */
export interface RecordView {
  hashId: string
  roots: string[]
  metadata: Record<string, string>
  cids: string[]
  canonical_cid?: string
  duplicates: string[]
  versions: FieldVersion[]
}

/** GET /api/file/{cid}/info */
export interface FileInfo { exists: boolean, contentType?: string, size?: number, filePath?: string }

export interface HealthReason { reason: 'storage' | 'clock' | 'no_peer' | 'watcher', message: string }

/** GET /health; `reasons` is absent from an older node. */
export interface Health { status: 'ok' | 'degraded', storage: boolean, timestamp: string, reasons?: HealthReason[] }

/** The current scan's figures (the last one's while idle); `fileBytesHashed` and `sinceScan` are absent from an older node. */
export interface WatcherProgress {
  phase: 'idle' | 'initial-scan' | 'scan' | 'reset'
  filesSeen: number
  filesHashed: number
  fileBytesHashed?: number
  bytesHashed: number
  sinceScan?: { filesHashed: number, fileBytesHashed: number }
  mbPerSecond: number
  etaSeconds?: number
  startedAt?: string
  filesPending?: number
}

/** The background full hash (GET /api/watchers). */
export interface FullHashStatus {
  algorithms: string[]
  state: 'off' | 'idle' | 'checking' | 'hashing' | 'paused'
  filesHashed: number
  bytesHashed: number
  filesKnown: number
  filesPending: number
  bytesPending: number
  mbPerSecond: number
  etaSeconds?: number
  current?: { path: string, size: number, bytesRead: number }
}

export interface WatcherStatus {
  id: string
  filesPath: string
  enabled: boolean
  active: boolean
  isScanning: boolean
  fileCount: number
  lastScan?: string
  lastError?: { message: string, at: string }
  progress: WatcherProgress
  /** Absent from an older node. */
  fullHash?: FullHashStatus
}

export interface Status {
  status: string
  serviceName: string
  version: string
  nodeId: string
  uptimeSeconds: number
  fileCount: number
  eventStreams: number
  search: boolean
  watcher: WatcherStatus | null
}

export interface Stats {
  records: number
  redisMemory: number | null
  files: { count: number, totalSize: number } | null
  sweptAt: number | null
}

export interface MeshPeer {
  peerId: string
  /** The name it announced (its META_CORE_NODE_NAME); null until heard, absent from an older node. */
  name?: string | null
  /** direct: connected now or before (pulled from); gossip: known only as the signer of frames others relayed. Absent from an older node (taken as direct). */
  via?: 'direct' | 'gossip'
  addrs: string[]
  connected: boolean
  /** Our position in its change log (null: never synced). */
  cursor: string | null
  /** True until a pull from it reaches the head it reported. */
  behind: boolean
  /** A full resync from it is under way. */
  resyncing: boolean
  /** When a pull from it last applied a page (ISO 8601). */
  lastSyncAt: string | null
  /** When a pull from it last reached the head it reported (ISO 8601). */
  caughtUpAt: string | null
  /** Catch-up lag: 0 when the last pull reached its head, else ms since one last did (or since it was first seen). */
  lagMs: number
  /** The last evidence that it was up (ISO 8601): now while connected, else its connection dropping, a frame it signed, or its member entry. Absent from an older node. */
  lastSeenAt?: string | null
  /** When a frame it signed last reached the node, relayed or direct (ISO 8601). Absent from an older node. */
  lastHeardAt?: string | null
  /** When the node was last connected to it: now while connected, else when the connection dropped (ISO 8601; null: never). Absent from an older node. */
  lastConnectedAt?: string | null
  framesIn?: number
  framesRejected?: number
  driftRefusals?: number
  /** How its connection runs: direct, or relayed through another member (null: not connected). Absent from an older node. */
  route?: 'direct' | 'relayed' | null
  /** The peer id of the member relaying its connection. */
  relay?: string | null
  /** Found on the node's LAN by mDNS. */
  lan?: boolean
}

/** GET /api/mesh. A standalone node answers `enabled: false` (an older node 404, one built without it 503). */
export interface MeshStatus {
  enabled?: boolean
  /** Short id derived from the swarm key: the nodes of one mesh show the same. */
  meshId?: string | null
  self: { peerId: string, name?: string | null, addrs?: string[], hlc?: string }
  peers: MeshPeer[]
  /** The members whose addresses the node knows (absent from an older node). */
  members?: MeshMember[]
  /** The join under way or the last one since start (absent from an older node). */
  join?: MeshJoin
  /** How members reach the node and what it relays for them (absent from an older node). */
  reach?: MeshReach | null
}

/** `reach` in GET /api/mesh. */
export interface MeshReach {
  reachability: 'announced' | 'mapped' | 'public' | 'relayed-only' | 'lan-only'
  announced: string[]
  relayed: string[]
  relays: string[]
  mdns: boolean
  upnp: MeshPortMapping | null
  relayMode: 'auto' | 'on' | 'off'
  relay: MeshRelay | null
}

/** The router's port mapping (META_CORE_UPNP). */
export interface MeshPortMapping {
  state: 'searching' | 'mapped' | 'failed'
  mappings: MeshMapping[]
  problem: string | null
}

export interface MeshMapping {
  internal: string
  external: string
  protocol: string
}

/** What the node relays for members. */
export interface MeshRelay {
  serving: boolean
  limits: MeshRelayLimits
  reservations: number
  circuits: number
  bytesRelayed: number
  bytesPerSecond: number
  refusedCircuits: number
  peers: MeshRelayPeer[]
}

export interface MeshRelayLimits {
  maxCircuits: number
  maxCircuitsPerPeer: number
  bytesPerSecond: number
  bytesPerSecondPerPeer: number
}

export interface MeshRelayPeer {
  peerId: string
  reserved: boolean
  circuits: number
  bytesIn: number
  bytesOut: number
}

/** `join` in GET /api/mesh: a full resync on the bulk path (a fresh node copying a peer's records). */
export interface MeshJoin {
  /** True from its first page until its last page is applied. */
  active: boolean
  /** ISO 8601; null: none since the node started. */
  startedAt: string | null
  /** ISO 8601; null: under way, or none since start. */
  endedAt: string | null
  /** Whole records applied so far. */
  records: number
  recordsPerSecond: number
  /** The records the peer said it holds (null: it did not say). */
  expectedRecords: number | null
  /** At the rate so far (null: unknown; 0 once ended). */
  secondsLeft: number | null
}

/** A member in GET /api/mesh: a node this one knows the addresses of, connected or not. */
export interface MeshMember {
  peerId: string
  connected: boolean
  /** The last evidence that it was up (ISO 8601): now while connected, else its connection dropping, a peer naming it, or a frame it signed. */
  lastSeenAt: string
  /** When it was last connected to this node (ISO 8601): now while connected, else when the connection dropped; null: only heard of. */
  lastConnectedAt: string | null
}

/** A peer's entry in GET /api/mesh/digests. */
export interface PeerDigest { peerId: string, name: string | null, digest: string | null, keys: number | null, agrees: boolean | null, error?: string }

/** GET /api/mesh/digests: this node's digest beside each connected peer's, asked over the mesh. */
export interface MeshDigests { self: { peerId: string, digest: string, keys: number }, peers: PeerDigest[] }

/** GET /api/mesh/digest */
export interface MeshDigest { digest: string, keys: number }

/** One server-sent event as the page's stream reader parsed it. */
export interface StreamEvent { id?: string, event: string, data: Record<string, string> }
