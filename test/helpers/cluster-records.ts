/** Helpers of the virtual-cluster tests of the pull: a peer's status on a node, and records made up as a peer's entries. */
import type { PeerStatus } from '../../src/mesh/index.js'
import { newRecordId, type RemoteEntry } from '../../src/records/index.js'
import type { VirtualCluster } from './virtual-cluster.js'

export function peerStatus (c: VirtualCluster, i: number, peer: string): PeerStatus {
  const p = c.nodes[i].core.status().peers.find(x => x.peerId === peer)
  if (p === undefined) throw new Error(`no status for ${peer}`)
  return p
}

/** `n` records of three fields (values of about `pad` + 10 characters), as entries of `origin` at `hlc`. */
export function records (n: number, hlc: string, origin: string, pad = 40): RemoteEntry[] {
  const out: RemoteEntry[] = []
  for (let i = 0; i < n; i++) {
    const rid = newRecordId()
    for (const f of ['title', 'year', 'note']) out.push({ key: `file:${rid}/${f}`, value: `${f} ${i} ${'x'.repeat(pad)}`, hlc, origin })
  }
  return out
}
