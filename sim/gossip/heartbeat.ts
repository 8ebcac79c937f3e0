/**
 * The router's heartbeat decisions, after @libp2p/gossipsub 17.1.1
 * (`heartbeat()` in `src/gossipsub.ts`): the topic mesh's maintenance
 * (graft to D below Dlo, prune to D above Dhi keeping Dout outbound peers,
 * graft outbound peers while fewer than Dout) and the choice of the peers
 * that get IHAVE gossip. The random draws are made in the real router's
 * order, so a run stays deterministic for its seed.
 */
import type { Prng } from '../../src/mesh/testing/index.js'
import type { MessageCache } from './caches.js'
import type { GossipConfig } from './config.js'

/** What the heartbeat reads of the router's state; `mesh` is changed in place. */
export interface MeshState {
  cfg: GossipConfig
  rng: Prng
  /** Known subscribers per topic. */
  topics: ReadonlyMap<string, ReadonlySet<number>>
  mesh: Map<string, Set<number>>
  isOutbound: (peer: number) => boolean
  backedOff: (topic: string, peer: number) => boolean
  /** Backs a pruned peer off the topic. */
  addBackoff: (topic: string, peer: number) => void
}

interface MeshChanges {
  /** Topics to send GRAFT and PRUNE for, per peer. */
  tograft: Map<number, string[]>
  toprune: Map<number, string[]>
  /** Per topic, the subscribed peers outside the mesh: the candidates for IHAVE gossip. */
  gossipTo: Map<string, Set<number>>
}

/** Maintains every topic's mesh; returns the GRAFT and PRUNE to send and the gossip candidates. */
export function maintainMeshes (s: MeshState): MeshChanges {
  const { D, Dlo, Dhi, Dscore, Dout } = s.cfg
  const tograft = new Map<number, string[]>()
  const toprune = new Map<number, string[]>()
  const gossipTo = new Map<string, Set<number>>()
  const rng = s.rng
  for (const [topic, peers] of s.mesh) {
    const candidates: number[] = []
    const toGossip = new Set<number>()
    gossipTo.set(topic, toGossip)
    for (const id of rng.shuffle([...(s.topics.get(topic) ?? [])])) {
      if (peers.has(id)) continue
      if (!s.backedOff(topic, id)) candidates.push(id)
      toGossip.add(id)
    }
    const graft = (id: number): void => {
      peers.add(id)
      toGossip.delete(id)
      pushTo(tograft, id, topic)
    }
    const prunePeer = (id: number): void => {
      s.addBackoff(topic, id)
      peers.delete(id)
      toGossip.add(id)
      pushTo(toprune, id, topic)
    }
    if (peers.size < Dlo) {
      for (const id of candidates.splice(0, D - peers.size)) graft(id)
    }
    if (peers.size > Dhi) {
      // Scores are all equal: the stable sort keeps insertion order for the first Dscore, the rest shuffled.
      let arr = [...peers]
      arr = arr.slice(0, Dscore).concat(rng.shuffle(arr.slice(Dscore)))
      let outbound = arr.slice(0, D).filter(s.isOutbound).length
      if (outbound < Dout) {
        const rotate = (i: number): void => {
          const p = arr[i]
          for (let j = i; j > 0; j--) arr[j] = arr[j - 1]
          arr[0] = p
        }
        if (outbound > 0) {
          let have = outbound
          for (let i = 1; i < D && have > 0; i++) if (s.isOutbound(arr[i])) { rotate(i); have-- }
        }
        let need = D - outbound
        for (let i = D; i < arr.length && need > 0; i++) if (s.isOutbound(arr[i])) { rotate(i); need--; outbound++ }
      }
      for (const p of arr.slice(D)) prunePeer(p)
    }
    if (peers.size >= Dlo) {
      const outbound = [...peers].filter(s.isOutbound).length
      if (outbound < Dout) {
        let need = Dout - outbound
        for (let i = 0; i < candidates.length && need > 0;) {
          if (s.isOutbound(candidates[i])) {
            graft(candidates.splice(i, 1)[0])
            need--
          } else i++
        }
      }
    }
  }
  return { tograft, toprune, gossipTo }
}

/**
 * Chooses, per topic, max(Dlazy, gossipFactor × candidates) peers to get
 * IHAVE for the ids of the cache's gossip windows (at most maxIHaveLength
 * each), added to `pending` (sent with the peer's next RPC).
 */
export function chooseGossip (cfg: GossipConfig, rng: Prng, mcache: MessageCache, gossipTo: Map<string, Set<number>>,
  pending: Map<number, Array<{ topic: string, ids: number[] }>>): void {
  for (const [topic, candidates] of gossipTo) {
    const ids = mcache.gossipIds(topic)
    if (ids.length === 0 || candidates.size === 0) continue
    rng.shuffle(ids)
    let target = Math.max(cfg.Dlazy, cfg.gossipFactor * candidates.size)
    let chosen = [...candidates]
    if (target > chosen.length) target = chosen.length
    else chosen = rng.shuffle(chosen).slice(0, target)
    for (const id of chosen) {
      const peerIds = ids.length > cfg.maxIHaveLength ? rng.shuffle(ids.slice()).slice(0, cfg.maxIHaveLength) : ids
      pushTo(pending, id, { topic, ids: peerIds })
    }
  }
}

function pushTo<K, V> (m: Map<K, V[]>, k: K, v: V): void {
  const a = m.get(k)
  if (a === undefined) m.set(k, [v])
  else a.push(v)
}
