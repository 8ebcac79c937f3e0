/**
 * mesh/libp2p: the libp2p runtime of the mesh core, the node's identity key
 * and swarm keys. The only module that imports libp2p; kept out of
 * `mesh/index.ts` so the core, the tests of it and the simulator load none
 * of it.
 */
import './polyfill.js'
export { Libp2pMesh, DEFAULT_TARGET_PEERS } from './libp2p-mesh.js'
export type { LinkControl } from './delayed-link.js'
export { prepareIdentity } from './identity.js'
export type { NodeIdentity } from './identity.js'
export { newSwarmKeyText, parseSwarmKey, readSwarmKey, writeNewSwarmKey } from './swarm-key.js'
export type { SwarmKey } from './swarm-key.js'
export { MeshKeyError } from './errors.js'
export { PULL_PROTOCOL } from './pull-protocol.js'
export { multiaddrProblem, isPeerId } from './addresses.js'
