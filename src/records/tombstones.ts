/**
 * Tombstone compaction, and what a node does with values the mesh may have
 * deleted while it was away (docs/mesh.md, "Tombstones and the horizon").
 *
 * - `compactTombstones(before)`: every field tombstone (a version with no
 *   `file:` row) and every root tombstone whose clock is older than `before`
 *   is dropped from its version map, a few hundred roots per transaction,
 *   the range fingerprints moved in the same transaction. A root whose
 *   record-ness depends on a tombstone (a released holder, a removed
 *   `cids/` member: record-liveness.ts) keeps its tombstones. Nothing is
 *   logged: every node compacts on its own clock, and a peer's cursor older
 *   than the horizon reconciles instead (change-feed.ts).
 * - `retireKeys(keys)`: deletes these live keys with a fresh version of our
 *   own, as a local delete does (one transaction): how a node that was away
 *   longer than the horizon drops values its peers no longer hold, rather
 *   than bringing them back.
 */
import { prefixEnd } from '../kv/index.js'
import { issueVersion, type RecordContext } from './context.js'
import type { Fingerprints } from './fingerprints.js'
import { formatHlc } from './hlc.js'
import { VER, readFields } from './layout.js'
import type { RecordId } from './record-id.js'
import { isRecord } from './record-liveness.js'
import { VersionMap, versionHlc } from './versions.js'

/** Roots a compaction pass reads and rewrites per transaction. */
const COMPACT_ROOTS = 500

export interface CompactionResult {
  /** Roots whose version map lost tombstones, and the tombstones dropped (root tombstones included). */
  roots: number
  tombstones: number
}

/** The version map without the tombstones older than `before` (an HLC string), or undefined when there are none to drop. */
function compacted (vm: VersionMap, live: ReadonlyMap<string, string>, before: string): VersionMap | undefined {
  let dropped = false
  const fields = new Map<string, string>()
  for (const [f, v] of vm.fields) {
    if (!live.has(f) && versionHlc(v) < before) dropped = true
    else fields.set(f, v)
  }
  let root = vm.root
  if (root !== undefined && versionHlc(root) < before) {
    root = undefined
    dropped = true
  }
  return dropped ? new VersionMap(root, fields) : undefined
}

export async function compactTombstones (ctx: RecordContext, fingerprints: Fingerprints, beforeMs: number): Promise<CompactionResult> {
  const before = formatHlc({ ms: Math.max(0, Math.floor(beforeMs)), counter: 0 })
  const out: CompactionResult = { roots: 0, tombstones: 0 }
  let lo = VER
  for (;;) {
    const vers = ctx.kv.range(lo, prefixEnd(VER), COMPACT_ROOTS)
    if (vers.length === 0) return out
    lo = vers[vers.length - 1][0] + '\u0000'
    // A cheap look first, outside any write: most version maps hold no old tombstone.
    const candidates = vers.filter(([, v]) => {
      const vm = VersionMap.parse(v)
      if (vm.root !== undefined && versionHlc(vm.root) < before) return true
      for (const fv of vm.fields.values()) if (versionHlc(fv) < before) return true
      return false
    }).map(([k]) => k.slice(VER.length) as RecordId)
    if (candidates.length === 0) continue
    await ctx.write(tx => {
      for (const rid of candidates) {
        const raw = tx.get(VER + rid)
        if (raw === undefined) continue
        const vm = VersionMap.parse(raw)
        const cur = readFields(tx, rid)
        const next = compacted(vm, cur, before)
        if (next === undefined) continue
        // Tombstones that decide whether the root is a record stay (record-liveness.ts).
        if (isRecord(cur, vm) !== isRecord(cur, next)) continue
        const dropped = (vm.root !== undefined && next.root === undefined ? 1 : 0) + vm.fields.size - next.fields.size
        if (next.isEmpty) {
          tx.delete(VER + rid)
          fingerprints.update(tx, rid, next, undefined, cur)
        } else {
          const ser = next.serialize()
          tx.put(VER + rid, ser)
          fingerprints.update(tx, rid, next, ser, cur)
        }
        out.roots++
        out.tombstones += dropped
      }
    })
  }
}

/** Deletes the live keys among `keys` (`file:<rid>/<field>`) with one fresh version of our own; returns how many it deleted. */
export async function retireKeys (ctx: RecordContext, keys: readonly string[]): Promise<number> {
  const byRoot = new Map<RecordId, string[]>()
  for (const k of keys) {
    const slash = k.indexOf('/', 5)
    if (!k.startsWith('file:') || slash < 0) continue
    const rid = k.slice(5, slash) as RecordId
    const list = byRoot.get(rid)
    if (list === undefined) byRoot.set(rid, [k.slice(slash + 1)])
    else list.push(k.slice(slash + 1))
  }
  if (byRoot.size === 0) return 0
  return await ctx.write(tx => {
    const version = issueVersion(ctx, tx)
    let n = 0
    for (const [rid, fields] of byRoot) {
      const live = fields.filter(f => tx.get(`file:${rid}/${f}`) !== undefined)
      if (live.length === 0) continue
      n += ctx.mutator.mutate(tx, rid, live.map(field => ({ field, value: null, version }))).changed
    }
    return n
  })
}
