/**
 * same-content-twice: the mesh starts cut in two halves; during the first
 * half of the load, for each of 50 pieces of content, one node on each side
 * writes a record addressed by the same CID (each side mints its own root),
 * with a side-specific field; then the halves meet. Every honest node must
 * then read each CID as one document: the same canonical root, the same
 * members, the same merged fields; and the merge itself must write nothing
 * replicated (every version in every store belongs to a client write).
 */
import { isLocationField } from '../../src/records/index.js'
import { randomCid } from '../workload.js'
import type { ScenarioContext } from './scenario.js'

const SHARED = 50

export function sameContentSetup (ctx: ScenarioContext): void {
  const { world, opts } = ctx
  const rng = world.rng.fork('same-content')
  const ids = Array.from({ length: ctx.honest }, (_, i) => i)
  const shuffled = rng.shuffle(ids.slice())
  const half = Math.floor(shuffled.length / 2)
  const sides = [shuffled.slice(0, half).sort((a, b) => a - b), shuffled.slice(half).sort((a, b) => a - b)]
  const cids = Array.from({ length: SHARED }, () => randomCid(rng))
  const healAt = ctx.loadStart + (opts.duration * 1000) / 2
  let sharedWrites = 0

  ctx.at(0, () => {
    world.net.partition(sides)
    world.metrics.event({ kind: 'partition', nodes: sides[0], detail: `${sides[0].length} | ${sides[1].length} (same content minted on both sides)` })
  })
  cids.forEach((cid, i) => {
    const at = ctx.loadStart + ((healAt - ctx.loadStart) * i) / SHARED
    sides.forEach((side, s) => {
      ctx.at(at + s, () => {
        const node = world.node(rng.pick(side))
        if (!node.up) return
        sharedWrites++
        world.clientWrite(async () => await node.records.mergeFlat(cid, { title: `shared ${i}`, [`side${s}`]: String(i) }))
          .catch((err: unknown) => { world.fail(err, 'same-content write') })
      })
    })
  })
  ctx.at(healAt, () => {
    world.net.heal()
    world.metrics.event({ kind: 'heal' })
  })

  ctx.check('sameContent', () => {
    const honest = world.nodes.filter(n => n.up && n.index < ctx.honest)
    let mismatched = 0
    let grouped = 0
    for (const cid of cids) {
      const docs = honest.map(n => {
        const d = n.records.getDocument(cid)
        // Each node shows its own copy's location (records' local-location.ts): compared without it.
        const metadata = Object.fromEntries(Object.entries(d?.metadata ?? {}).filter(([f]) => !isLocationField(f)))
        return d === undefined ? 'missing' : JSON.stringify({ rid: d.rid, members: d.members, metadata, cids: d.cids, canonical: d.canonical_cid })
      })
      if (docs.some(d => d !== docs[0]) || docs[0] === 'missing') mismatched++
      const d0 = honest[0]?.records.getDocument(cid)
      if (d0 !== undefined && d0.members.length > 1) grouped++
    }
    // Every version in a converged store must be one a client write issued: the group merge writes none.
    // The store's replicated range, through the records API: each entry carries its version (HLC and origin).
    const versions = new Set<string>()
    const records = honest[0]?.records
    for (let after: string | undefined, first = true; records !== undefined && (first || after !== undefined); first = false) {
      const page = records.exportRange(after, { limit: 10_000 })
      for (const e of page.entries) versions.add(`${e.hlc} ${e.origin}`)
      after = page.next
    }
    const clientWrites = world.metrics.writes.filter(w => w.acked).length + sharedWrites
    return { cids: SHARED, grouped, mismatched, versions: versions.size, clientWrites, mergeWrites: Math.max(0, versions.size - clientWrites) }
  })
}
