/**
 * Which connections a mesh starts with, after the node's membership rule
 * (src/mesh/libp2p/membership.ts): each node dials members it is not
 * connected to, at random, until it holds `target` connections, inbound ones
 * counting. Nodes take their turn in index order; a node already at its
 * target dials nobody. The model and the real-stack mode use the same plan.
 *
 * Region-aware dialing (`--dial regions`, the node's
 * META_CORE_CROSS_REGION_PEERS, src/mesh/peer-distance.ts, which tells
 * regions apart by round trip; here the latency model's regions are known):
 * a node dials members of other regions until it holds `crossPeers`
 * connections across regions, then members of its own region for the rest;
 * when its region has too few, other regions' members make up the rest.
 * Most traffic then stays inside a region, and every node that dials holds
 * a link or two out of it, so no region is cut off from the others. The
 * plan is where the node's rule settles; the node gets there by trying
 * members and giving up far connections it has too many of.
 */
import { parseLatency, type Prng } from '../../src/mesh/testing/index.js'
import type { SimOptions } from '../scenario/options.js'

/** Region-aware dialing: each node's region, and the connections it keeps across regions. */
export interface RegionDialing {
  regionOf: (node: number) => string
  crossPeers: number
}

/** `--dial regions`: the latency model's regions and the connections each node keeps across them; undefined: random. */
export function regionDialing (o: Pick<SimOptions, 'latency' | 'jitter' | 'dial' | 'crossRegionPeers'>): RegionDialing | undefined {
  const regionOf = parseLatency(o.latency, o.jitter).regionOf
  return o.dial === 'regions' && regionOf !== undefined ? { regionOf, crossPeers: o.crossRegionPeers } : undefined
}

/**
 * The members `n` dials to get `need` more connections, among `candidates`
 * (members it is not connected to), given those it holds (`mine`).
 */
export function pickPeers (rng: Prng, n: number, candidates: readonly number[], need: number, mine: Iterable<number>, regions?: RegionDialing): number[] {
  if (regions === undefined) return rng.sample(candidates, need)
  const home = regions.regionOf(n)
  const far = candidates.filter(m => regions.regionOf(m) !== home)
  const near = candidates.filter(m => regions.regionOf(m) === home)
  const heldFar = [...mine].filter(m => regions.regionOf(m) !== home).length
  const picks = rng.sample(far, Math.max(0, Math.min(regions.crossPeers - heldFar, need)))
  picks.push(...rng.sample(near, need - picks.length))
  if (picks.length < need) picks.push(...rng.sample(far.filter(m => !picks.includes(m)), need - picks.length))
  return picks
}

/** Dials as [from, to] pairs: each unordered pair at most once. */
export function planConnections (rng: Prng, nodes: readonly number[], target: number, regions?: RegionDialing): Array<[number, number]> {
  const links = new Map<number, Set<number>>(nodes.map(n => [n, new Set<number>()]))
  const dials: Array<[number, number]> = []
  const want = Math.min(target, nodes.length - 1)
  for (const n of nodes) {
    const mine = links.get(n)!
    const need = want - mine.size
    if (need <= 0) continue
    for (const p of pickPeers(rng, n, nodes.filter(m => m !== n && !mine.has(m)), need, mine, regions)) {
      mine.add(p)
      links.get(p)!.add(n)
      dials.push([n, p])
    }
  }
  return dials
}

/** The regions' graph over these links: how many links join two regions, and whether every region reaches every other. */
export function regionLinks (links: ReadonlyArray<readonly [number, number]>, regionOf: (node: number) => string,
  nodes: readonly number[]): { inside: number, between: number, regionsConnected: boolean } {
  const regions = [...new Set(nodes.map(regionOf))].sort()
  const adj = new Map(regions.map(r => [r, new Set<string>()]))
  let between = 0
  for (const [a, b] of links) {
    const ra = regionOf(a)
    const rb = regionOf(b)
    if (ra === rb) continue
    between++
    adj.get(ra)?.add(rb)
    adj.get(rb)?.add(ra)
  }
  const seen = new Set<string>(regions.slice(0, 1))
  const todo = regions.slice(0, 1)
  while (todo.length > 0) for (const r of adj.get(todo.pop()!) ?? []) if (!seen.has(r)) { seen.add(r); todo.push(r) }
  return { inside: links.length - between, between, regionsConnected: seen.size === regions.length }
}
