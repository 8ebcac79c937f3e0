/**
 * Entries from peers: merged last-writer-wins by (hlc, origin) in one
 * transaction, through the same mutation path as local writes, so both keep
 * exactly the same derived state. A batch with a malformed entry is refused
 * whole; entries more than `maxClockDriftMs` ahead of local wall time are
 * refused, counted, and never advance the clock.
 */
import { persistHlc, type RecordContext } from './context.js'
import type { FieldChange } from './mutation.js'
import type { RecordId } from './record-id.js'
import { checkRemoteEntry, type RemoteEntry } from './remote-entry.js'
import type { ApplyResult } from './types.js'
import { VER } from './layout.js'
import { VersionMap, makeVersion, type Version } from './versions.js'

export class RemoteApplier {
  private refusedTotal = 0

  constructor (private readonly ctx: RecordContext, private readonly maxDrift: number) {}

  /** Remote versions refused for clock drift since start. */
  get driftRefused (): number {
    return this.refusedTotal
  }

  /**
   * The entries that win over what the store holds now, by root, read in
   * one snapshot outside any write. A version never goes back, so an entry
   * that does not win now cannot win when a write runs: a caller may skip
   * the rest without changing the outcome. Entries are not validated here.
   */
  newerByRoot (entries: readonly RemoteEntry[]): Map<string, RemoteEntry[]> {
    const kv = this.ctx.kv
    return kv.read(() => {
      const maps = new Map<string, VersionMap>()
      const byRoot = new Map<string, RemoteEntry[]>()
      for (const e of entries) {
        const slash = e.key.indexOf('/', 5)
        const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
        let vm = maps.get(rid)
        if (vm === undefined) {
          vm = VersionMap.parse(kv.get(VER + rid))
          maps.set(rid, vm)
        }
        const v = makeVersion(e.hlc, e.origin)
        const wins = slash < 0 ? vm.root === undefined || v > vm.root : vm.wins(e.key.slice(slash + 1), v)
        if (!wins) continue
        const list = byRoot.get(rid)
        if (list === undefined) byRoot.set(rid, [e])
        else list.push(e)
      }
      return byRoot
    })
  }

  /**
   * Each key takes the entry iff its (hlc, origin) is greater than what is
   * held (root tombstones shadow older keys).
   */
  async applyRemote (entries: readonly RemoteEntry[]): Promise<ApplyResult> {
    const { ctx } = this
    const byRoot = new Map<RecordId, { root?: Version, changes: FieldChange[] }>()
    let refused = 0
    let maxHlc: string | undefined
    for (const e of entries) {
      const parsed = checkRemoteEntry(e)
      if (ctx.hlc.aheadOfWall(e.hlc) > this.maxDrift) { refused++; continue }
      const version = makeVersion(e.hlc, e.origin)
      if (maxHlc === undefined || e.hlc > maxHlc) maxHlc = e.hlc
      let slot = byRoot.get(parsed.rid)
      if (slot === undefined) { slot = { changes: [] }; byRoot.set(parsed.rid, slot) }
      if (parsed.field === undefined) {
        if (slot.root === undefined || version > slot.root) slot.root = version
      } else {
        slot.changes.push({ field: parsed.field, value: e.value, version })
      }
    }
    this.refusedTotal += refused
    if (refused > 0) ctx.log.warn('refused remote versions ahead of local clock', { refused, maxDriftMs: this.maxDrift })
    const total = entries.length - refused
    return await ctx.kv.write(tx => {
      let applied = 0
      for (const [rid, slot] of byRoot) {
        // Within one batch the newest version of a key decides, whatever the order it came in.
        slot.changes.sort((a, b) => (a.version < b.version ? -1 : a.version > b.version ? 1 : 0))
        applied += ctx.mutator.mutate(tx, rid, slot.changes, { remote: true, rootTombstone: slot.root }).touched
      }
      if (maxHlc !== undefined) ctx.hlc.observe(maxHlc)
      persistHlc(ctx, tx)
      return { applied, skipped: total - Math.min(applied, total), refused }
    })
  }
}
