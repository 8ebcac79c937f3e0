import { prefixEnd } from '../../src/kv/index.js'
import type { NodeStore } from '../../src/records/index.js'

/**
 * Recomputes the derived group state from the rows (connected components of
 * live roots over shared CIDs) and returns what disagrees with the stored
 * `cid:`, `idx:grp/` and `idx:count/roots`.
 */
export function groupInvariantErrors (s: NodeStore): string[] {
  const errs: string[] = []
  const live = s.kv.keys('idx:roots/', prefixEnd('idx:roots/')).map(k => k.slice(10)).sort()
  const parent = new Map(live.map(r => [r, r]))
  const find = (x: string): string => { while (parent.get(x) !== x) x = parent.get(x)!; return x }
  const holder = new Map<string, string>()
  const cidsOf = new Map<string, string[]>()
  for (const r of live) {
    const lo = `file:${r}/cids/`
    const cs = s.kv.keys(lo, prefixEnd(lo)).map(k => k.slice(lo.length))
    cidsOf.set(r, cs)
    for (const c of cs) {
      const h = holder.get(c)
      if (h === undefined) holder.set(c, r)
      else { const x = find(h); const y = find(r); if (x !== y) parent.set(x < y ? y : x, x < y ? x : y) }
    }
  }
  const comps = new Map<string, string[]>()
  for (const r of live) { const p = find(r); comps.set(p, [...(comps.get(p) ?? []), r]) }
  const canonOf = new Map<string, string>()
  for (const ms of comps.values()) { const c = [...ms].sort()[0]; for (const m of ms) canonOf.set(m, c) }
  for (const r of live) {
    const stored = s.kv.get(`idx:grp/${r}`) ?? r
    if (stored !== canonOf.get(r)) errs.push(`grp ${r}: stored ${stored}, expected ${canonOf.get(r)}`)
  }
  for (const [c, h] of holder) {
    const stored = s.kv.get(`cid:${c}`)
    if (stored !== canonOf.get(h)) errs.push(`cid ${c}: stored ${stored}, expected ${canonOf.get(h)}`)
  }
  for (const [k, v] of s.kv.prefix('cid:')) if (!holder.has(k.slice(4))) errs.push(`stale ${k} -> ${v}`)
  const count = Number(s.kv.get('idx:count/roots') ?? '0')
  if (count !== comps.size) errs.push(`count ${count}, expected ${comps.size}`)
  return errs
}
