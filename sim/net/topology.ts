/**
 * Which connections a mesh starts with, after the node's membership rule
 * (src/mesh/libp2p/membership.ts): each node dials members it is not
 * connected to, at random, until it holds `target` connections, inbound ones
 * counting. Nodes take their turn in index order; a node already at its
 * target dials nobody. The model and the real-stack mode use the same plan.
 */
import type { Prng } from '../../src/mesh/testing/index.js'

/** Dials as [from, to] pairs: each unordered pair at most once. */
export function planConnections (rng: Prng, nodes: readonly number[], target: number): Array<[number, number]> {
  const links = new Map<number, Set<number>>(nodes.map(n => [n, new Set<number>()]))
  const dials: Array<[number, number]> = []
  const want = Math.min(target, nodes.length - 1)
  for (const n of nodes) {
    const mine = links.get(n)!
    const need = want - mine.size
    if (need <= 0) continue
    for (const p of rng.sample(nodes.filter(m => m !== n && !mine.has(m)), need)) {
      mine.add(p)
      links.get(p)!.add(n)
      dials.push([n, p])
    }
  }
  return dials
}
