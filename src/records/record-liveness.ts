/**
 * What makes a root a record: the rule the mutation path applies to every
 * change (idx:roots, the count, the cid: index, groups and search follow it).
 */
import { prefixEnd } from '../kv/index.js'
import type { RecordContext } from './context.js'
import { HOLDERS_PREFIX, ROOTS, VER, readFields } from './layout.js'
import type { RecordId } from './record-id.js'
import { VersionMap } from './versions.js'

/**
 * Whether a root's live fields and versions make it a record
 * (docs/design/data-model.md#the-record-rule). A function of the merged state only, so every node
 * that holds the same keys and versions decides the same:
 * - it has a live field;
 * - it has a live `cids/` member, unless it never had one and was never
 *   deleted (a root written by id alone: only the store's own callers can
 *   write one, the API creates records through a CID). So a field written
 *   concurrently with a record delete and newer than it leaves no record: the
 *   delete wins, and no counted record is unreachable by CID;
 * - it has a live `holders/` member, unless it never had one (a record
 *   written only through the API is deleted only through the API). The last
 *   holder's release removes only its own member: a holder added
 *   concurrently, on another key, is still live in the merged state and keeps
 *   the record, with every other field it had (add wins, as in an
 *   observed-remove set).
 */
export function isRecord (cur: { readonly size: number, keys: () => IterableIterator<string> }, vm: VersionMap): boolean {
  if (cur.size === 0) return false
  let cid = false
  let holder = false
  for (const f of cur.keys()) {
    if (!cid && f.startsWith('cids/')) cid = true
    else if (!holder && f.startsWith(HOLDERS_PREFIX)) holder = true
    if (cid && holder) return true
  }
  if (!cid && vm.root !== undefined) return false
  if (cid && holder) return true
  for (const f of vm.fields.keys()) {
    if (!cid && f.startsWith('cids/')) return false
    if (!holder && f.startsWith(HOLDERS_PREFIX)) return false
  }
  return true
}

/** Set once the roots a store indexed as records were checked against `isRecord` (sweepNonRecords). */
const RULE_CHECKED_KEY = 'meta-core:record-rule'
/** Roots read per snapshot by the sweep. */
const SWEEP_PAGE = 1000

/**
 * Once per store: a store written before `isRecord` counted roots with a
 * field but no `cids/` member (a delete that raced a later field write) or
 * with every holder released. Each such root is put through the mutation
 * path with no change, which takes it out of the count, the listings, the
 * `cid:` index, its group and search, and writes nothing replicated.
 * Returns how many roots it took out. Run once the indexers are attached.
 */
export async function sweepNonRecords (ctx: RecordContext): Promise<number> {
  const { kv } = ctx
  if (kv.get(RULE_CHECKED_KEY) !== undefined) return 0
  let n = 0
  let lo = ROOTS
  for (;;) {
    const keys = kv.keys(lo, prefixEnd(ROOTS), SWEEP_PAGE)
    if (keys.length === 0) break
    const none = kv.read(() => keys.map(k => k.slice(ROOTS.length)).filter(rid => !isRecord(readFields(kv, rid), VersionMap.parse(kv.get(VER + rid)))))
    if (none.length > 0) {
      n += await ctx.write(tx => {
        let out = 0
        for (const rid of none) if (!ctx.mutator.mutate(tx, rid as RecordId, []).live) out++
        return out
      })
    }
    lo = keys[keys.length - 1] + '\u0000'
  }
  if (n > 0) ctx.log.info('took out roots that are no records (no live cids/ member, or every holder released)', { roots: n })
  await ctx.write(tx => { tx.put(RULE_CHECKED_KEY, '1') })
  return n
}
