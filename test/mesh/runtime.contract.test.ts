/**
 * One MeshRuntime contract (runtime.contract.ts) run against the three
 * runtimes the mesh core is driven through: the libp2p adapter on the
 * in-memory transport, the virtual mesh of the property tests, and the
 * simulator's nodes. A runtime that drifts from the others fails here.
 */
import { describe } from 'vitest'
import { libp2pRig, simRig, virtualRig } from '../helpers/runtime-rigs.js'
import { runtimeContract } from './runtime.contract.js'

describe('MeshRuntime contract: libp2p adapter (in-memory transport, real time)', () => {
  runtimeContract(libp2pRig)
})

describe('MeshRuntime contract: virtual mesh (src/mesh/testing)', () => {
  runtimeContract(virtualRig)
})

describe('MeshRuntime contract: simulator node (sim/node/sim-node.ts)', () => {
  runtimeContract(simRig)
})
