/**
 * The two seams of the replication core: the runtime it acts through
 * (clock, timers, randomness, network) and the store it replicates
 * (`ReplicaStore`). The core has no I/O of its own: given the same inputs in
 * the same order, the same runtime answers and the same store, it makes the
 * same calls and sends the same bytes. libp2p (`src/mesh/libp2p/`) is one
 * runtime; the in-process virtual mesh (`src/mesh/testing/`) and the
 * simulator (`sim/`) are others.
 */
import type { ClockGate, RemoteEntry } from '../../records/index.js'
import type { GossipVerdict } from './gossip-intake.js'

export type { RemoteEntry }

/** A peer's id: the libp2p peer id string, which is also the origin of every version that node writes. */
export type PeerKey = string

/** An opaque position in a store's change log (the store issues and compares them; the core only stores and echoes them). */
export type Cursor = string

/**
 * What the core may ask of the world.
 *
 * Contract:
 * - `now`, `random`, `schedule` are the only sources of time and chance the
 *   core uses; a deterministic runtime (virtual clock, seeded generator)
 *   makes the core deterministic.
 * - `schedule` never runs `fn` synchronously inside the call; `fn` runs at
 *   most once; cancelling after it ran (or twice) is a no-op.
 * - `publish` is fire-and-forget and may drop the frame (no subscriber yet,
 *   loss): the core never relies on a frame arriving, pull repairs. It must
 *   not throw; the core catches and counts anyway.
 * - `request` delivers `body` to the peer's `handleRequest` and resolves with
 *   its reply bytes; it rejects when the peer is unreachable, the stream
 *   fails, the reply is over `MAX_MESSAGE_BYTES`, or `timeoutMs` passes.
 *   Its result is the only way a reply reaches the core.
 * - `now` is whole milliseconds; `monotonic` never goes back.
 * test/mesh/runtime.contract.test.ts holds the libp2p adapter, the virtual
 * mesh and the simulator's nodes to this.
 */
export interface MeshRuntime {
  /** Wall-clock milliseconds since 1970 (virtual in a simulation). */
  now: () => number
  /**
   * A clock that never steps (ms, any origin): what tells a step of the wall
   * clock from time passing (clock-guard.ts). Without it, `now` stands in and
   * a step shows only at the next pull from each peer.
   */
  monotonic?: () => number
  /** Uniform in [0, 1). */
  random: () => number
  /** Runs `fn` after `delayMs`; returns a cancel function. */
  schedule: (delayMs: number, fn: () => void) => () => void
  /** Publishes a push frame on the mesh's gossip topic. */
  publish: (frame: Uint8Array) => void
  /** Sends a pull request to a directly connected peer; resolves with its reply. */
  request: (peer: PeerKey, body: Uint8Array, opts: { timeoutMs: number }) => Promise<Uint8Array>
}

/**
 * What a runtime drives on the core (`MeshCore` is one): `request` reaches
 * the peer's `handleRequest`, a published frame its `onGossip`. What the
 * adapter guarantees about these inputs:
 * - `onGossip(signer, …)`: `signer` is authenticated (gossipsub StrictSign:
 *   the message's signature was verified against `signer`'s public key), so
 *   a frame whose origin is not `signer` is a forgery. `relay` (the peer it
 *   came from directly) is informational.
 * - `handleRequest(peer, …)`: `peer` is the authenticated remote end of the
 *   stream (noise handshake).
 * - `peerConnected`/`peerDisconnected` are called once per transition.
 * Inputs may arrive in any interleaving; the core tolerates duplicates.
 */
export interface MeshEndpoint {
  onGossip: (signer: PeerKey, bytes: Uint8Array, relay?: PeerKey) => GossipVerdict
  handleRequest: (peer: PeerKey, bytes: Uint8Array) => Promise<Uint8Array>
  peerConnected: (peer: PeerKey) => void
  peerDisconnected: (peer: PeerKey) => void
}

/**
 * A test's hold on a runtime: what the core is given (`runtime`: wrap or
 * capture it) and what the runtime drives on this node (`endpoint`: the
 * core by default). The libp2p adapter (`Libp2pMeshInit.probe`) and the
 * simulator's nodes take one, so one contract suite runs against every
 * runtime (test/mesh/runtime.contract.test.ts); a node sets none.
 */
export interface RuntimeProbe {
  runtime?: (rt: MeshRuntime) => MeshRuntime
  endpoint?: (core: MeshEndpoint) => MeshEndpoint
}

/** One page of a store's change log. */
export interface ChangePage {
  /** Each changed key once, with its current value (null: tombstone) and version; a root tombstone is the key `file:<rid>`. */
  changes: RemoteEntry[]
  /** The cursor to ask with next time (the last log position this page covers); null only when the log is empty. */
  next: Cursor | null
  /** The log's last position when the page was read. */
  head: Cursor | null
  /** The cursor cannot be served: entries after it were trimmed, or it is not from this log. */
  gap: boolean
}

/** One page of the whole replicated range, in root order. */
export interface RangePage {
  /** Live keys, tombstones and root tombstones with their versions. */
  entries: RemoteEntry[]
  /** The position to continue after; null when the range is done. */
  next: string | null
}

export interface ApplyOutcome {
  /** Keys whose version changed. */
  applied: number
  /** Entries the store refused for clock drift (the core checks drift first, so normally 0). */
  refused: number
}

/** What a page of a bulk transfer says about the transfer (ReplicaStore.applyBulk). */
export interface BulkPage {
  /** The transfer's last page. */
  done?: boolean
  /** The records the peer holds, when it said (for time left). */
  expectedRecords?: number
}

export interface StoreDigest {
  /** Hex digest of the whole replicated range: keys, values or tombstones, versions. Equal exactly when the ranges are equal. */
  digest: string
  /** Versioned keys in the range (live keys, tombstones and root tombstones). */
  keys: number
}

/**
 * The store as the core sees it.
 *
 * Contract:
 * - Reads (`logId`, `head`, `changesSince`, `exportRange`, `checkEntries`,
 *   `digest`, `clock`, `getLocal`) are synchronous and see committed state.
 * - `apply` and `setLocal` are the only asynchronous calls; each is atomic
 *   (one transaction) and resolves after commit. `apply` is idempotent and
 *   commutative: entries merge last-writer-wins by (hlc, origin), a tie by
 *   the value (a tombstone above any value, then the greater bytes).
 * - `apply` appends to the store's own change log only what changed a key's
 *   version (a no-op apply appends nothing); its listeners hear remote
 *   changes too.
 * - `onChanges` listeners run after commit, in commit order, with every
 *   changed key (local writes and remote applies).
 * - Node-local keys (`getLocal`/`setLocal`) are never replicated and never
 *   appear in the change log or the digest.
 */
export interface ReplicaStore {
  /** Identifies the change log: a cursor is only meaningful against the log that issued it. Stable for the life of the store file. */
  logId: () => string
  head: () => Cursor | null
  /** The changes after `cursor` (null: from the start of the log), at most `limit` keys and about `maxBytes` of keys and values (never fewer than one key). */
  changesSince: (cursor: Cursor | null, opts: { limit: number, maxBytes: number }) => ChangePage
  /** The replicated range after position `after` (null: from the start), about `maxBytes` per page (never fewer than one entry). */
  exportRange: (after: string | null, opts: { maxBytes: number }) => RangePage
  /**
   * Why the store would refuse these entries (root id, field grammar: the
   * first malformed entry's reason), or undefined when all are acceptable.
   * One call per frame or page, so what repeats across entries (a record's
   * root, clock and origin) is checked once.
   */
  checkEntries: (entries: readonly RemoteEntry[]) => string | undefined
  /**
   * Entries the core screened first (`checkEntries` found nothing wrong with them): a store need not check them again.
   * An entry at the version the store holds is the same write again and may be left out unread, unless `ties`
   * (a reconciliation's entries): then a tie is decided by the values, as a merge decides it (records' versions.ts).
   */
  apply: (entries: readonly RemoteEntry[], opts?: { ties?: boolean }) => Promise<ApplyOutcome>
  /**
   * A page of a bulk transfer (the pages of a full resync): the same merge
   * as `apply`, which a store may run on a bulk path (large transactions,
   * derived work deferred until the page with `done`, a page's last root
   * held back until the next page so no record is half applied). Without
   * it, pages go through `apply`.
   */
  applyBulk?: (entries: readonly RemoteEntry[], page: BulkPage) => Promise<ApplyOutcome>
  /** A bulk transfer is unfinished (entries of its last root held back, or its end still to build) though no copy runs: it is ended at start. */
  bulkPending?: () => boolean
  /** The records this store holds (sent with a resync's first page); absent: not sent. */
  recordCount?: () => number
  /** Subscribes to committed changes; returns the unsubscribe function. */
  onChanges: (listener: (changes: readonly RemoteEntry[]) => void) => () => void
  digest: () => StoreDigest
  /** The fingerprint of the roots whose position starts with hex `prefix` (0–8 digits): sum of their hashes (32 hex) and their count. */
  rangeFingerprint: (prefix: string) => { fp: string, roots: number }
  /** The roots whose position starts with `prefix`, in position order, with their hashes (32 hex); at most `limit`. */
  rangeRoots: (prefix: string, limit: number) => Array<{ rid: string, hash: string }>
  /** The replicated state of these roots (root tombstone, live keys, tombstones, with versions), root after root, read in one snapshot. */
  exportRoots: (rids: readonly string[]) => RemoteEntry[]
  /** The same as `exportRoots` with every value left out (null): the roots' versions, read from their version maps alone. */
  exportVersions: (rids: readonly string[]) => RemoteEntry[]
  /** The store's hybrid logical clock: the last value issued or observed. */
  clock: () => string
  getLocal: (key: string) => string | undefined
  /** Writes (or with null deletes) a node-local key. */
  setLocal: (key: string, value: string | null) => Promise<void>
  /** Installs (undefined: removes) the check each local write passes before it is issued a version: the core's clock bound. */
  setClockGate?: (gate: ClockGate | undefined) => void
}
