/**
 * What the rest of a node sees of the mesh: a Startable with the figures of
 * `GET /api/mesh` and the digest of `GET /api/mesh/digest`. A standalone
 * node (no swarm key) has one too, with no peers and no p2p port, so the
 * routes answer the same way everywhere.
 */
import type { Startable } from '../common/index.js'
import type { MeshRecords } from './replica-store.js'
import type { PeerCounters, SelfStatus, StoreDigest } from './protocol/index.js'
import { RecordReplica } from './replica-store.js'

export interface MeshPeerView extends PeerCounters {
  peerId: string
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
}

export interface MeshView {
  /** False on a standalone node (no swarm key). */
  enabled: boolean
  /** A short id derived from the swarm key (not the key): nodes showing the same id are in the same mesh. */
  meshId: string | null
  self: SelfStatus & {
    /** Listening multiaddrs with the ports actually bound, each ending in /p2p/<peerId>. */
    addrs: string[]
  }
  peers: MeshPeerView[]
}

export interface MeshService extends Startable {
  readonly peerId: string
  status: () => MeshView
  digest: () => StoreDigest
}

/** A node alone measures nobody and writes as it always did. */
const ALONE = { inBound: true, measured: 0, outOfBound: 0, offsetMs: null, hlcAheadMs: 0, message: null }

/** The mesh of a node without a swarm key: nobody to talk to, but the same status and digest. */
export class StandaloneMesh implements MeshService {
  private readonly replica: RecordReplica

  constructor (private readonly records: MeshRecords) {
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
      self: { peerId: this.records.nodeId, addrs: [], hlc: this.replica.clock(), epoch: 0, seq: 0, framesOut: 0, bytesOut: 0, publishFailures: 0, clock: ALONE },
      peers: []
    }
  }

  digest (): StoreDigest {
    return this.replica.digest()
  }
}
