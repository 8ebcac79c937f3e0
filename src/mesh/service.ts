/**
 * What the rest of a node sees of the mesh: a Startable with the figures of
 * `GET /api/mesh` and the digest of `GET /api/mesh/digest`. A standalone
 * node (no swarm key) has one too, with no peers and no p2p port, so the
 * routes answer the same way everywhere.
 */
import type { Startable } from '../common/index.js'
import type { BulkProgress } from '../records/index.js'
import type { MeshRecords } from './replica-store.js'
import type { CopyStatus, PeerCounters, SelfStatus, StoreDigest } from './protocol/index.js'
import { RecordReplica } from './replica-store.js'
import type { ByteSource } from './bytes-service.js'

export interface MeshPeerView extends PeerCounters {
  peerId: string
  /** The name the peer announced (META_CORE_NODE_NAME), or null (not heard yet, or an older version). */
  name: string | null
  /**
   * `direct`: a peer this node is or was connected to (it pulls from it);
   * `gossip`: one known only as the signer of frames relayed by others (no
   * cursor, no connection, nothing to catch up with).
   */
  via: 'direct' | 'gossip'
  /** Addresses of its open connections (empty when not connected). */
  addrs: string[]
  connected: boolean
  /** Our position in its change log (null: never synced). */
  cursor: string | null
  /** True until a pull from it reaches the head it reported. */
  behind: boolean
  resyncing: boolean
  /** When a pull from it last applied a page (ISO 8601), or null. */
  lastSyncAt: string | null
  /** When a pull from it last reached the head it reported (ISO 8601), or null. */
  caughtUpAt: string | null
  /** Catch-up lag in ms: 0 when the last pull reached its head, else how long since one last did (or since it was first seen). */
  lagMs: number
  /** Its entries refused for clock drift and kept aside, retried every round. */
  parked: number
  /**
   * The last evidence that it was up (ISO 8601): now while connected; else
   * the latest of its connection to this node dropping, a frame it signed
   * reaching this node, and its member entry (a connected peer naming it,
   * a run before). Null: none known.
   */
  lastSeenAt: string | null
  /** When a frame it signed last reached this node, relayed or direct (ISO 8601, since this node started), or null. */
  lastHeardAt: string | null
  /** When this node was last connected to it (ISO 8601): now while connected, else when the connection dropped; null: never. */
  lastConnectedAt: string | null
  /** How its connection runs: `direct`, `relayed` (through another member), or null when not connected. */
  route: 'direct' | 'relayed' | null
  /** The relay's peer id, for a relayed connection. */
  relay: string | null
  /** Found on this node's LAN by mDNS. */
  lan: boolean
}

/** A member of the mesh this node knows the addresses of (kept across restarts, node-local). */
export interface MeshMemberView {
  peerId: string
  /** The addresses it announced (identify) or a peer told us (member exchange). */
  addrs: string[]
  connected: boolean
  /**
   * The last evidence that it was up (ISO 8601): now while connected to this node; else when that connection dropped, a connected peer last
   * named it, or a frame it signed last reached this node.
   */
  lastSeenAt: string
  /** When it was last connected to this node (ISO 8601): now while connected, else when the connection dropped; null: only heard of. */
  lastConnectedAt: string | null
  /** Failed dials in a row (0 when the last one worked or none was needed). */
  dialFailures: number
}

export interface MeshView {
  /** False on a standalone node (no swarm key). */
  enabled: boolean
  /** A short id derived from the swarm key (not the key): nodes showing the same id are in the same mesh. */
  meshId: string | null
  self: SelfStatus & {
    /** This node's name (META_CORE_NODE_NAME), or null when none was given. */
    name: string | null
    /** Listening multiaddrs with the ports actually bound, each ending in /p2p/<peerId>. */
    addrs: string[]
  }
  peers: MeshPeerView[]
  /** Connections this node dials members up to (0: only its bootstrap list). */
  targetPeers: number
  /** The members it knows, connected or not, by peer id. */
  members: MeshMemberView[]
  /** The bulk transfer (a join) under way or last ended since start: keys and records received, rate, time left. */
  join: MeshJoinView
  /** The node's copy of the range (a join) since start: what it is doing, why it started, why it stopped. */
  copy?: MeshCopyView
  /** How members reach this node (announced, mapped, relayed addresses), and what it relays for them; null standalone. */
  reach: MeshReachView | null
}

/** The range copy as `GET /api/mesh` shows it (range-copy.ts `CopyStatus`, times in ISO 8601). */
export interface MeshCopyView extends Omit<CopyStatus, 'startedAt' | 'endedAt'> {
  startedAt: string | null
  endedAt: string | null
}

/**
 * How members reach this node, and what it relays for others
 * (mesh/libp2p/reach.ts): `GET /api/mesh` `reach`.
 */
export interface MeshReachView {
  /**
   * `announced`: at addresses its operator gave (META_CORE_ANNOUNCE);
   * `mapped`: at a port its router maps for it (UPnP); `public`: at a public
   * address of its own; `relayed-only`: only through relays it holds
   * reservations on; `lan-only`: none of these (members outside its LAN, and
   * not behind the same VPN, cannot reach it).
   */
  reachability: 'announced' | 'mapped' | 'public' | 'relayed-only' | 'lan-only'
  announced: string[]
  /** Its relayed addresses (…/p2p/<relay>/p2p-circuit/p2p/<self>). */
  relayed: string[]
  /** The relays it holds reservations on. */
  relays: string[]
  mdns: boolean
  /** The router's port mapping (META_CORE_UPNP), or null when not asked for. */
  upnp: MeshPortMappingView | null
  relayMode: 'auto' | 'on' | 'off'
  /** What it relays for members, when it runs the relay (null: it does not). */
  relay: MeshRelayView | null
}

/** The router's port mapping (mesh/libp2p/port-mapping.ts). */
export interface MeshPortMappingView {
  /** `searching`: no router found yet; `mapped`: a mapping is held; `failed`: see `problem`. */
  state: 'searching' | 'mapped' | 'failed'
  mappings: Array<{ internal: string, external: string, protocol: string, renewedAt: string, expiresAt: string }>
  /** What went wrong and what to do about it (null: nothing). */
  problem: string | null
}

/** What a relay relays for members (mesh/libp2p/relay-server.ts). */
export interface MeshRelayView {
  /** Reservations are taken now. */
  serving: boolean
  limits: {
    /** Relayed connections at once, in all (also the reservations held at once). */
    maxCircuits: number
    /** Relayed connections at once that one member is an end of. */
    maxCircuitsPerPeer: number
    /** Bytes per second the relay takes in for relaying, in all. */
    bytesPerSecond: number
    /** Bytes per second the relay takes in from one member for relaying. */
    bytesPerSecondPerPeer: number
  }
  reservations: number
  circuits: number
  /** Bytes relayed since start (each byte once), and per second over the last few seconds. */
  bytesRelayed: number
  bytesPerSecond: number
  /** Reservations and circuits refused (not serving, or a limit reached), since start. */
  refusedReservations: number
  refusedCircuits: number
  /** Times a member's stream was paused for its byte rate or the relay's, since start. */
  throttled: number
  /** Per member: whether it holds a reservation, its relayed connections now, the bytes taken in from it and sent to it, its rate. */
  peers: Array<{ peerId: string, reserved: boolean, circuits: number, bytesIn: number, bytesOut: number, bytesInPerSecond: number }>
}

/** A join as `GET /api/mesh` shows it (times in ISO 8601). */
export interface MeshJoinView {
  /** True from the first page taken on the bulk path until the transfer's last page is applied. */
  active: boolean
  startedAt: string | null
  endedAt: string | null
  /** Entries (keys and tombstones) received in its pages. */
  keys: number
  /** Records (roots) applied whole. */
  records: number
  recordsPerSecond: number
  /** The records the peer said it holds (null: it did not say). */
  expectedRecords: number | null
  /** At the rate so far (null: unknown; 0 once ended). */
  secondsLeft: number | null
}

const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()

export function joinView (p: BulkProgress): MeshJoinView {
  return { ...p, startedAt: iso(p.startedAt), endedAt: iso(p.endedAt) }
}

/** No copy since start (or no core). */
const NO_COPY: CopyStatus = { state: 'none', why: null, peers: [], startedAt: null, endedAt: null, stopped: null }

export function copyView (c: CopyStatus | undefined): MeshCopyView {
  const v = c ?? NO_COPY
  return { ...v, startedAt: iso(v.startedAt), endedAt: iso(v.endedAt) }
}

export interface MeshService extends Startable {
  readonly peerId: string
  status: () => MeshView
  digest: () => StoreDigest
  /** Each connected peer's digest (or why it gave none), asked over the mesh; absent on a standalone node. */
  peerDigests?: () => Promise<Map<string, StoreDigest | { error: string }>>
  /** Bytes of files that peers hold (absent on a standalone node). */
  readonly bytes?: ByteSource
}

/** A node alone measures nobody and writes as it always did. */
const ALONE = { inBound: true, measured: 0, outOfBound: 0, offsetMs: null, hlcAheadMs: 0, message: null }

/** The mesh of a node without a swarm key: nobody to talk to, but the same status and digest. */
export class StandaloneMesh implements MeshService {
  private readonly replica: RecordReplica

  constructor (private readonly records: MeshRecords, private readonly nodeName?: string) {
    this.replica = new RecordReplica(records)
  }

  get peerId (): string {
    return this.records.nodeId
  }

  async start (): Promise<void> {}
  async stop (): Promise<void> {}

  status (): MeshView {
    return {
      enabled: false,
      meshId: null,
      self: { peerId: this.records.nodeId, name: this.nodeName ?? null, addrs: [], hlc: this.replica.clock(), epoch: 0, seq: 0, framesOut: 0, bytesOut: 0,
        publishFailures: 0, clock: ALONE },
      peers: [],
      targetPeers: 0,
      members: [],
      join: joinView(this.replica.bulkProgress()),
      copy: copyView(undefined),
      reach: null
    }
  }

  digest (): StoreDigest {
    return this.replica.digest()
  }
}
