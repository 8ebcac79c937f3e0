/**
 * What makes a root a record: the rule the mutation path applies to every
 * change (idx:roots, the count, the cid: index, groups and search follow it).
 */
import { HOLDERS_PREFIX } from './layout.js'
import type { VersionMap } from './versions.js'

/**
 * Whether a root's live fields and versions make it a record (replication.md,
 * "What is replicated"). A function of the merged state only, so every node
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
export function isRecord (cur: ReadonlyMap<string, string>, vm: VersionMap): boolean {
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
