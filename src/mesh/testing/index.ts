/**
 * mesh/testing: the one engine for running mesh cores in virtual time: a
 * scheduler (the virtual clock), a seeded PRNG, and a link model (latency,
 * loss, bandwidth, order) with the latency specs it samples. The virtual
 * mesh (many cores in one process, every peer reachable through its
 * connected component) is built on it for the property tests; the simulator
 * (`sim/`) builds its network and gossipsub model on the same pieces. A run
 * on it is a pure function of its seed and its inputs.
 */
export { VirtualMesh } from './virtual-mesh.js'
export type { VirtualLinkOptions, MeshEndpoint } from './virtual-mesh.js'
export { Scheduler } from './scheduler.js'
export type { Cancel } from './scheduler.js'
export { Prng, prng } from './prng.js'
export { DEFAULT_LINK, LinkModel } from './link-model.js'
export type { Lane, LinkConfig, LinkMode, LossMode, Transit } from './link-model.js'
export { parseLatency, InvalidLatencySpecError } from './latency.js'
export type { LatencyModel } from './latency.js'
