/**
 * Groups and the `cid:` reverse index, kept by the mutation path inside its
 * transaction (mutation.ts): roots that share any CID are one record, the
 * smallest rid its canonical root, `cid:<cid>` pointing at it, the visible
 * record counter counting a group once. Derived locally from the cids/
 * members of live roots, so every node that holds the same roots derives
 * the same groups and nothing new is written into the mesh.
 */
import { prefixEnd, type Tx } from '../kv/index.js'
import { CID, COUNT_ROOTS, GRP, GRPM, canonOf, fieldKey, isLive, membersOf, readCids } from './layout.js'
import type { RecordIndexer } from './mutation.js'
import type { RecordId } from './record-id.js'

export class Groups {
  /** The mutator's indexers as they are to be told now (none inside a bulk apply): indexers added later are told too. */
  constructor (private readonly hooks: () => readonly RecordIndexer[]) {}

  aliasAdded (tx: Tx, rid: RecordId, cid: string): void {
    const canon = canonOf(tx, rid)
    const owner = tx.get(CID + cid)
    if (owner === undefined || !isLive(tx, owner)) {
      tx.putMany([[CID + cid, canon, owner]]) // the old value is known: no read before the write
      return
    }
    const ownerCanon = canonOf(tx, owner)
    if (ownerCanon === canon) {
      if (owner !== canon) tx.putMany([[CID + cid, canon, owner]])
      return
    }
    this.union(tx, canon, ownerCanon)
  }

  aliasRemoved (tx: Tx, rid: RecordId, cid: string): void {
    const members = membersOf(tx, canonOf(tx, rid))
    // Losing a CID may split the group.
    if (members.length > 1) this.regroup(tx, members)
    const owner = tx.get(CID + cid)
    if (owner === undefined) return
    // Every live holder of a CID is in one group; if one is left, the entry stays (pointing at its canonical root).
    const canon = canonOf(tx, owner)
    for (const m of membersOf(tx, canon)) {
      // A root that is no record keeps its cids/ rows (its holders released it) but is reached by none.
      if (tx.get(fieldKey(m, `cids/${cid}`)) !== undefined && isLive(tx, m)) {
        if (owner !== canon) tx.put(CID + cid, canon)
        return
      }
    }
    tx.delete(CID + cid)
  }

  /** Joins two groups (given by their canonical roots). */
  private union (tx: Tx, a: RecordId, b: RecordId): void {
    const members = [...new Set([...membersOf(tx, a), ...membersOf(tx, b)])].sort()
    this.adjustCount(tx, members, () => { this.writeGroup(tx, [a, b], [members]) })
    for (const ix of this.hooks()) ix.onGroupChanged?.(tx, members)
  }

  /**
   * Recomputes the groups among `roots` (a former group) from their cids/
   * members: connected components over shared CIDs, dead roots left out.
   */
  regroup (tx: Tx, roots: readonly RecordId[]): void {
    const live = roots.filter(r => isLive(tx, r)).sort()
    const parent = new Map<string, string>(live.map(r => [r, r]))
    const find = (x: string): string => {
      let p = parent.get(x)!
      while (p !== parent.get(p)) p = parent.get(p)!
      parent.set(x, p)
      return p
    }
    const firstHolder = new Map<string, string>()
    for (const r of live) {
      for (const c of readCids(tx, r)) {
        const h = firstHolder.get(c)
        if (h === undefined) firstHolder.set(c, r)
        else {
          const x = find(h)
          const y = find(r)
          if (x !== y) parent.set(x < y ? y : x, x < y ? x : y)
        }
      }
    }
    const comps = new Map<string, RecordId[]>()
    for (const r of live) {
      const p = find(r)
      let c = comps.get(p)
      if (c === undefined) { c = []; comps.set(p, c) }
      c.push(r)
    }
    const oldCanons = [...new Set(roots.map(r => canonOf(tx, r)))]
    this.adjustCount(tx, [...roots], () => {
      // Dead roots leave their group entirely.
      for (const r of roots) if (!live.includes(r)) tx.delete(GRP + r)
      this.writeGroup(tx, oldCanons, [...comps.values()])
    })
    for (const ix of this.hooks()) ix.onGroupChanged?.(tx, roots)
  }

  /**
   * Replaces the membership lists of `oldCanons` with `groups`, and points
   * each member CID at its group's canonical root. A CID whose entry points
   * outside the roots involved is one this same write has yet to register
   * (it links to another group); `aliasAdded` handles it next, so it is left
   * alone here.
   */
  private writeGroup (tx: Tx, oldCanons: readonly string[], groups: ReadonlyArray<readonly RecordId[]>): void {
    const involved = new Set<string>(oldCanons)
    for (const g of groups) for (const m of g) involved.add(m)
    for (const oc of oldCanons) {
      const lo = `${GRPM}${oc}/`
      for (const k of tx.keys(lo, prefixEnd(lo))) tx.delete(k)
    }
    for (const g of groups) {
      const sorted = [...g].sort()
      const canon = sorted[0]
      for (const m of sorted) {
        if (sorted.length > 1) {
          tx.put(GRP + m, canon)
          tx.put(`${GRPM}${canon}/${m}`, '')
        } else {
          tx.delete(GRP + m)
        }
        for (const c of readCids(tx, m)) {
          const cur = tx.get(CID + c)
          if (cur === undefined || involved.has(cur)) tx.put(CID + c, canon)
        }
      }
    }
  }

  /**
   * Runs `fn` and adds to `idx:count/roots` the change in the number of
   * visible records among `roots` (a root is visible when live and canonical).
   */
  adjustCount (tx: Tx, roots: readonly string[], fn: () => void): void {
    const visible = (r: string): number => (isLive(tx, r) && canonOf(tx, r) === r ? 1 : 0)
    let before = 0
    for (const r of roots) before += visible(r)
    fn()
    let after = 0
    for (const r of roots) after += visible(r)
    if (after !== before) tx.addCounter(COUNT_ROOTS, after - before)
  }
}
