/**
 * The core's tunables, with their defaults and why. Every duration is in
 * milliseconds of the runtime's clock.
 */
import { MAX_MESSAGE_BYTES } from '../messages.js'

export interface MeshOptions {
  /** Push frames leave at most this long after the first change they carry (issue: 50 ms). */
  flushMs: number
  /** …or as soon as this many bytes of changes are waiting. */
  flushBytes: number
  /** Pull from every connected peer about this often (jittered ±25 %): pull alone converges the mesh. */
  antiEntropyMs: number
  /** Pages asked for and served stay under this many bytes on the wire (at most 1 MiB: larger messages stall libp2p streams). */
  pageBytes: number
  /** Keys per change page at most (bounds the work of one request on the serving side). */
  pageKeys: number
  /** Deadline of one pull request. */
  requestTimeoutMs: number
  /** Remote versions further ahead of our clock than this are refused (docs/design/mesh-rules.md#clocks: 10 s). */
  maxClockDriftMs: number
  /**
   * Our clock may be this far off our peers' (measured on pulls); out of
   * bound against most of them, local writes are refused (clock-guard.ts).
   * Default: half the drift limit, so versions of two in-bound nodes stay
   * within what each accepts of the other.
   */
  maxClockOffsetMs: number
  /** Refused entries kept aside per peer, to retry (their bytes, about); past it the oldest are dropped and counted. */
  maxParkedBytes: number
  /** Frames from one signer waiting to be applied; past this, new ones are dropped (pull repairs). */
  maxQueuedFrames: number
  /**
   * Bytes of entries (`entryWeight`) waiting to be applied, all signers
   * together; past this, new frames are dropped (pull repairs). Signers are
   * cheap to mint, so a per-signer bound alone bounds nothing.
   */
  maxQueuedBytes: number
  /**
   * Signers we keep counters and frame sequences for besides the connected
   * peers, least recently heard from evicted first. Only a signer of a valid
   * frame gets an entry, so junk from fresh keys takes none.
   */
  maxSigners: number
  /** Pull pages served to one peer per second, sustained… */
  servePagesPerSecond: number
  /** …and in a burst. */
  servePageBurst: number
  /** Frame sequence numbers remembered per origin, to refuse replays; older ones are refused as replays too. */
  sequenceWindow: number
  /** Pages pulled from one peer in one round at most, so one round cannot run forever. */
  maxPagesPerRound: number
  /** Peers whose frames, requests and connections are refused. */
  blockedPeers: readonly string[]
  /**
   * A copy of the range (range-copy.ts) that no peer has served a page of
   * for this long, and that none serves now (its peers left, or refused its
   * pages), is abandoned for reconciliation, keeping what arrived.
   */
  copyStallMs: number
}

export const DEFAULT_MESH_OPTIONS: Readonly<MeshOptions> = {
  flushMs: 50,
  flushBytes: 64 * 1024,
  antiEntropyMs: 15_000,
  pageBytes: MAX_MESSAGE_BYTES,
  pageKeys: 20_000,
  requestTimeoutMs: 15_000,
  maxClockDriftMs: 10_000,
  maxClockOffsetMs: 5_000,
  maxParkedBytes: MAX_MESSAGE_BYTES,
  maxQueuedFrames: 256,
  maxQueuedBytes: 64 * 1024 * 1024,
  maxSigners: 1024,
  servePagesPerSecond: 50,
  servePageBurst: 200,
  sequenceWindow: 4096,
  maxPagesPerRound: 100_000,
  blockedPeers: [],
  copyStallMs: 30_000
}

export function meshOptions (o: Partial<MeshOptions> = {}): MeshOptions {
  const out = { ...DEFAULT_MESH_OPTIONS, ...o }
  if (o.maxClockOffsetMs === undefined) out.maxClockOffsetMs = out.maxClockDriftMs / 2
  out.pageBytes = Math.min(out.pageBytes, MAX_MESSAGE_BYTES)
  return out
}
