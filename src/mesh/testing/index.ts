/**
 * mesh/testing: a deterministic in-process runtime for the mesh core
 * (virtual clock, seeded network with latency, loss, duplication and links
 * that come and go). Tests use it; the simulator may build on it.
 */
export { VirtualMesh } from './virtual-mesh.js'
export type { LinkModel } from './virtual-mesh.js'
export { VirtualClock } from './virtual-clock.js'
export { prng } from './prng.js'
