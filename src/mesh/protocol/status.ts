/**
 * What the core counts, per peer and for itself: the figures behind
 * `GET /api/mesh`. Counters only grow while the node runs; they start at 0
 * on every start.
 */
import type { ClockStatus } from './clock-guard.js'
import type { CopyStatus } from './range-copy.js'
import type { Cursor, PeerKey } from './runtime.js'

export interface PeerCounters {
  /** Gossip frames signed by this peer that reached us (accepted or not), and their bytes. */
  framesIn: number
  frameBytesIn: number
  /** Frames and replies from this peer refused as bad (malformed, oversized, non-`file:`, forged, replayed, far-future). */
  framesRejected: number
  /** Entries from this peer refused for being too far ahead of our clock. */
  driftRefusals: number
  /** Frames this peer relayed to us, signed by a signer we hold no state for, that we refused (gossipsub scores the relay down for them). */
  relayedRejected: number
  /** Frames whose entries named another origin than their signer, and pulled entries claiming our origin with a version we never issued. */
  forged: number
  /** Pulled entries dropped: malformed (they can never be accepted), or past what is kept aside for retry. */
  entriesDropped: number
  /** Frames whose sequence we had already seen. */
  replays: number
  /** Frames dropped because too many of this peer's frames were waiting to be applied. */
  framesDropped: number
  /** Pages pulled from this peer, and their bytes on the wire. */
  pagesIn: number
  bytesIn: number
  /** Pull requests that failed (timeout, stream error, refusal). */
  pullFailures: number
  /** Full resyncs started from this peer (a fresh store copying the range). */
  resyncs: number
  /** Reconciliations with this peer that found differences, and rounds of the anti-entropy check that found the ranges equal. */
  reconciles: number
  reconcilesEqual: number
  /** Keys a reconciliation moved: taken from this peer, and given to it (either side's initiative). */
  reconKeysIn: number
  reconKeysOut: number
  /** Pages served to this peer, their bytes, and requests refused for its rate limit. */
  pagesServed: number
  bytesServed: number
  busyRefusals: number
}

export interface PeerStatus extends PeerCounters {
  peerId: PeerKey
  connected: boolean
  /** Our position in this peer's change log (null: never synced). */
  cursor: Cursor | null
  /** True until a pull from this peer reaches the head it reported. */
  behind: boolean
  /** True while a full resync from this peer is under way (or will start: never synced, and our store holds nothing). */
  resyncing: boolean
  /** True while a reconciliation with this peer runs. */
  reconciling: boolean
  /** When a pull from this peer last applied a page (runtime ms), or null. */
  lastSyncAt: number | null
  /** When a pull from this peer last reached the head it reported (runtime ms), or null. */
  caughtUpAt: number | null
  /** Catch-up lag: 0 when the last pull reached its head, else ms since one last did (or since the peer was first seen). */
  lagMs: number
  /** Entries from this peer refused for clock drift and kept aside, retried every round. */
  parked: number
}

export interface SelfStatus {
  peerId: PeerKey
  /** The store's clock: last HLC issued or observed. */
  hlc: string
  /** Our frame sequence: epoch of this start and the last seq published. */
  epoch: number
  seq: number
  framesOut: number
  bytesOut: number
  /** Frames the runtime failed to publish (no peer subscribed yet, transport error). */
  publishFailures: number
  /** Our clock against the peers we measure: local writes are refused while out of bound. */
  clock: ClockStatus
}

export interface MeshStatus {
  self: SelfStatus
  /** Peers connected now or heard from since start, by peer id. */
  peers: PeerStatus[]
  /** The node's copy of the range (a join): what it is doing, why it started and why it stopped. */
  copy: CopyStatus
}

export function emptyCounters (): PeerCounters {
  return {
    framesIn: 0,
    frameBytesIn: 0,
    framesRejected: 0,
    driftRefusals: 0,
    relayedRejected: 0,
    forged: 0,
    entriesDropped: 0,
    replays: 0,
    framesDropped: 0,
    pagesIn: 0,
    bytesIn: 0,
    pullFailures: 0,
    resyncs: 0,
    reconciles: 0,
    reconcilesEqual: 0,
    reconKeysIn: 0,
    reconKeysOut: 0,
    pagesServed: 0,
    bytesServed: 0,
    busyRefusals: 0
  }
}
