/**
 * When the mesh is cut and healed (`--partition-every`), and into which
 * groups: the model (run.ts) and the real-stack mode (sim/real) draw the same
 * cuts from the same seeded stream, so both runs cut the same nodes apart at
 * the same moments of the load.
 */
import type { Prng } from '../../src/mesh/testing/index.js'
import type { SimOptions } from './options.js'

/** Cuts toggling every `partitionEvery` seconds during the load (`cut`: partition, else heal), healed when the load ends. */
export function partitionTimes (o: Pick<SimOptions, 'partitionEvery'>, loadStart: number, loadEnd: number): Array<{ at: number, cut: boolean }> {
  if (o.partitionEvery <= 0) return []
  const every = o.partitionEvery * 1000
  const out: Array<{ at: number, cut: boolean }> = []
  let on = false
  for (let t = loadStart + every; t < loadEnd; t += every) {
    on = !on
    out.push({ at: t, cut: on })
  }
  if (on) out.push({ at: loadEnd, cut: false })
  return out
}

/** The groups of one cut: two random halves, or one random honest node alone (`--partition-kind isolate`). */
export function cutGroups (rng: Prng, ids: readonly number[], kind: SimOptions['partitionKind'], bad: ReadonlySet<number>): [number[], number[]] {
  if (kind === 'isolate') {
    const alone = rng.pick(ids.filter(i => !bad.has(i)))
    return [[alone], ids.filter(i => i !== alone)]
  }
  const shuffled = rng.shuffle(ids.slice())
  const half = Math.floor(shuffled.length / 2)
  return [shuffled.slice(0, half).sort((a, b) => a - b), shuffled.slice(half).sort((a, b) => a - b)]
}
