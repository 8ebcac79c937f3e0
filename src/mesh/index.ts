/**
 * mesh: replication of the records between equal peers (docs/design/mesh-rules.md).
 *
 * - `protocol/`: the core, with no I/O of its own: cursors, batching, frame
 *   sequences, validation, timers, peer bookkeeping, driven through a
 *   `MeshRuntime` and a `ReplicaStore` (runtime.ts states both contracts).
 * - `messages.ts`: the versioned wire union and its one decode function.
 * - `replica-store.ts`: the `ReplicaStore` over the record layer's replication
 *   interface (`MeshRecords`: changesSince, onChanges, exportRange, the local store).
 * - `testing/`: a deterministic in-process runtime (virtual clock, seeded
 *   network) for tests and the simulator.
 *
 * Guarantees: nothing a peer sends touches the store before it is decoded
 * and validated; a bad frame is refused whole, counted against its signer,
 * and never crashes the node; pull alone converges the mesh, push makes it
 * fast.
 */
export * from './protocol/index.js'
export { decodeMessage, encodeMessage, WireError, WIRE_VERSION, MAX_MESSAGE_BYTES, FRAME_LIMITS } from './messages.js'
export type { Message } from './messages.js'
export { RecordReplica } from './replica-store.js'
export { StandaloneMesh } from './service.js'
export type { ByteSource, LocalFileOpener, ServableFile, RemoteRange, PeerByteFigures } from './bytes-service.js'
export type { MeshService, MeshView, MeshPeerView, MeshJoinView, MeshReachView } from './service.js'
