/**
 * Entries a pull refuses never hold the pull back: one too far ahead of
 * our clock is kept aside (durably, with the cursor) and applied once our
 * clock reaches it; a malformed one is dropped and counted; one claiming
 * our own origin with a version we never issued is dropped and counted as
 * forged. A served page is crafted by a fake peer on the virtual mesh; the
 * puller is a real core over a real store.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { decodeMessage, encodeMessage, type PeerStatus } from '../../src/mesh/index.js'
import { formatHlc, type RemoteEntry } from '../../src/records/index.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const FAKE = 'peerFake'
const RIDS = ['01M8ME6YDNEBQ9WHRFBFD4HMGQ', '01M8ME6YDNEBQ9WHRFBFD4HMGR', '01M8ME6YDNEBQ9WHRFBFD4HMGS']

/** A peer whose change log is the pages given: page i is served for cursor String(i), the snapshot is empty. */
function fakePeer (c: VirtualCluster, pages: () => RemoteEntry[][]): void {
  c.mesh.attach(FAKE, {
    onGossip: () => 'ignore',
    handleRequest: async (_peer, bytes) => {
      const m = decodeMessage(bytes)
      const all = pages()
      const head = String(all.length)
      if (m.t === 'snap') return encodeMessage({ t: 'snapshot', log: 'fake', entries: [], next: null, head: '0', clock: c.mesh.now() })
      // Its range differs at the top (so a check pulls), and nothing of what we list differs (a reconciliation moves nothing, then pulls).
      if (m.t === 'recon') {
        const top = m.ranges.length === 1 && m.ranges[0].p === '' && 'fp' in m.ranges[0]
        return encodeMessage({ t: 'recond', log: 'fake', head: '0', ranges: top ? [{ p: '0', fp: 'f'.repeat(32), n: 1 }] : [], diff: [], taken: m.ranges.length,
          clock: c.mesh.now() })
      }
      if (m.t !== 'pull') throw new Error('unexpected request')
      const at = Number(m.cursor ?? '0')
      const entries = all[at] ?? []
      return encodeMessage({ t: 'changes', log: 'fake', entries, next: String(Math.min(at + 1, all.length)), head, gap: false, clock: c.mesh.now() })
    },
    peerConnected: () => {},
    peerDisconnected: () => {},
    busy: false
  })
}

function peerStatus (c: VirtualCluster, peer: string): PeerStatus {
  const p = c.nodes[0].core.status().peers.find(x => x.peerId === peer)
  if (p === undefined) throw new Error(`no status for ${peer}`)
  return p
}

const at = (c: VirtualCluster, rid: string, field: string, value: string, aheadMs = 0, origin = FAKE): RemoteEntry =>
  ({ key: `file:${rid}/${field}`, value, hlc: formatHlc({ ms: c.mesh.now() + aheadMs, counter: 0 }), origin })

describe('refused entries in pulled pages', () => {
  it('moves the cursor past a drifted and a malformed entry, keeps the drifted one aside durably, and applies it when the clock reaches it', async () => {
    const c = cluster = await virtualCluster(1, { seed: 41, mesh: { antiEntropyMs: 2_000 } })
    const a = c.nodes[0]
    let pages: RemoteEntry[][] = []
    fakePeer(c, () => pages)
    pages = [
      [at(c, RIDS[0], 'title', 'one'), at(c, RIDS[0], 'future', 'later', 30_000), at(c, RIDS[0], 'cid_sha256', 'deprecated')],
      [at(c, RIDS[1], 'title', 'two')],
      [at(c, RIDS[2], 'title', 'three')]
    ]
    c.mesh.connect(a.id, FAKE)
    await c.mesh.runFor(1_000)
    // Everything after the refused entries arrived: the pull did not stop at them.
    expect(a.store.records.getFlat(RIDS[1])).toEqual({ title: 'two' })
    expect(a.store.records.getFlat(RIDS[2])).toEqual({ title: 'three' })
    expect(a.store.records.getFlat(RIDS[0])).toEqual({ title: 'one' })
    expect(peerStatus(c, FAKE)).toMatchObject({ cursor: '3', behind: false, parked: 1, entriesDropped: 1, driftRefusals: 1 })

    // Kept aside with the cursor: a restart keeps it.
    await c.restart(0)
    c.mesh.connect(a.id, FAKE)
    await c.mesh.runFor(1_000)
    expect(peerStatus(c, FAKE)).toMatchObject({ parked: 1 })

    // Once our clock is within the drift of it, the next round applies it.
    await c.mesh.runFor(25_000)
    expect(a.store.records.getFlat(RIDS[0])).toEqual({ title: 'one', future: 'later' })
    expect(peerStatus(c, FAKE)).toMatchObject({ parked: 0 })
  })

  it('drops an entry claiming our own origin with a version we never issued, and counts it as forged', async () => {
    const c = cluster = await virtualCluster(1, { seed: 42, mesh: { antiEntropyMs: 2_000 } })
    const a = c.nodes[0]
    await a.store.records.mergeFlat(RIDS[0], { title: 'mine' })
    const mine = a.store.records.exportRoot(a.store.records.resolveRoot(RIDS[0])!)
    // Our own entry relayed back is fine; one of ours from 5 s ahead of both our clocks we never issued.
    const pages = [[...mine, at(c, RIDS[1], 'title', 'forged', 5_000, a.id), at(c, RIDS[2], 'title', 'honest')]]
    fakePeer(c, () => pages)
    c.mesh.connect(a.id, FAKE)
    await c.mesh.runFor(1_000)
    expect(a.store.records.getFlat(RIDS[2])).toEqual({ title: 'honest' })
    expect(a.store.records.getFlat(RIDS[1])).toBeUndefined()
    expect(a.store.records.getFlat(RIDS[0])).toEqual({ title: 'mine' })
    expect(peerStatus(c, FAKE)).toMatchObject({ forged: 1, parked: 0, behind: false })
  })
})
