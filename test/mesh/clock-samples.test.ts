/**
 * Clock samples come from established members only (docs/mesh.md,
 * "Clocks"): a member is measured on the valid replies it delivers, never on
 * a refusal, so identities made to answer `busy` with a clock an hour off
 * cannot make honest nodes refuse their own writes; and a refusal says the
 * clocks disagree and by how much without blaming this node's clock when
 * it cannot know. Real cores over real stores on the virtual mesh; the
 * throwaway identities are fake endpoints on the mesh (the network edge).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { WIRE_VERSION, type MeshEndpoint } from '../../src/mesh/index.js'
import { ClockOutOfBoundError } from '../../src/records/index.js'
import { testCid } from '../helpers/record-ops.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const HOUR = 3_600_000

/** A refusal as bytes, carrying a wall clock (`w`) of the sender's choosing, as a reply that gave a clock sample once did. */
function busyWithClock (clock: number): Uint8Array {
  const body = Buffer.from(JSON.stringify({ t: 'error', c: 'busy', m: 'busy', r: 5_000, w: clock }))
  return new Uint8Array([WIRE_VERSION, 0, ...body])
}

describe('clock samples', () => {
  it('two identities that only answer busy with a clock an hour off do not stop two honest nodes writing', async () => {
    const c = cluster = await virtualCluster(2, { seed: 571, mesh: { antiEntropyMs: 2_000 } })
    const [a, b] = c.nodes
    const throwaways = ['peerX1', 'peerX2']
    for (const x of throwaways) {
      const endpoint: MeshEndpoint = {
        onGossip: () => 'ignore',
        handleRequest: async () => busyWithClock(c.mesh.now() + HOUR),
        peerConnected: () => {},
        peerDisconnected: () => {}
      }
      c.mesh.attach(x, endpoint)
    }
    c.mesh.connect(a.id, b.id)
    for (const x of throwaways) for (const n of c.nodes) c.mesh.connect(n.id, x)
    await c.mesh.runFor(10_000)
    for (const n of c.nodes) {
      expect(n.core.status().self.clock, n.id).toMatchObject({ inBound: true, measured: 1, outOfBound: 0 })
      const r = await n.store.records.mergeFlat(testCid(n.id.length + n.id.charCodeAt(4)), { title: n.id })
      expect(r.rid).toBeDefined()
    }
  })

  it('against one peer, the refusal says the two clocks disagree and by how much, not which one is off', async () => {
    const skew: Record<string, number> = {}
    const c = cluster = await virtualCluster(2, { seed: 572, mesh: { antiEntropyMs: 2_000 }, skewMs: (id) => skew[id] ?? 0 })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(3_000)
    skew[a.id] = HOUR
    // A sees its step at once (its monotonic clock did not move); B at its next pull from A.
    await c.mesh.runFor(3_000)
    for (const [n, m] of [[a, 0], [b, 1]] as const) {
      await expect(n.store.records.mergeFlat(testCid(m), { title: 'x' })).rejects.toBeInstanceOf(ClockOutOfBoundError)
      await expect(n.store.records.mergeFlat(testCid(m), { title: 'x' }))
        .rejects.toThrow(/^this node's clock and its peer's disagree by about 3[56]\d{5} ms \(bound ±5000 ms; which clock is off cannot be told from here\)/)
    }
  })
})
