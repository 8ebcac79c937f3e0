/**
 * A bulk transfer's roots that this store holds nothing of (no version map:
 * a join's range, arriving in key order) are inserted as they are: with
 * nothing held there is nothing to merge, so each root's rows are written
 * straight from its entries, in the page's one transaction, with what a
 * merge of them into nothing would leave (the newest version of each key,
 * the keys a root tombstone shadows left out, its tombstones kept as
 * versions). Such a root's `file:` and `ver:` rows, its `idx:roots` row when
 * it is a record, the record count and the schema counters are written with
 * it; its change-log entries are not (no peer holds a cursor into a log
 * for a range the store did not hold: its peers reconcile with it); what is
 * derived from many roots at once is built when the transfer ends
 * (bulk-derive.ts): the root rows of the range fingerprints, in position
 * order, and the `cid:` index (with the groups of roots sharing a CID), in
 * CID order, so each is written once, sequentially, not a random page per
 * root. Until then the roots' hashes and CIDs wait in the store, a row per
 * transaction (`idx:bulk/derive/<its first root>`), so a transfer killed
 * halfway loses none of them.
 *
 * A root that names a key twice is left to the merge path, which orders
 * the versions (mutation.ts).
 */
import type { Tx } from '../kv/index.js'
import { cidMemberOf } from './field-path.js'
import { rootHash, versionedKeys } from './fingerprints.js'
import { COUNT_ROOTS, ROOTS, VER } from './layout.js'
import { isRecord } from './record-liveness.js'
import type { RemoteEntry } from './remote-entry.js'
import { schemaCounterKey } from './schema-type.js'
import { VersionMap, makeVersion, type Version } from './versions.js'

/** The derived data of the roots one bulk transaction inserted, waiting for the transfer's end: a row per transaction. */
export const BULK_DERIVE_PREFIX = 'idx:bulk/derive/'

/** A root inserted in bulk, as its derived data waits: its id, hash and versioned keys (range fingerprints), and its CIDs when it is a record. */
export type Staged = [rid: string, hash: string, keys: number, cids: string[]]

type Row = readonly [string, string, undefined]

/**
 * A bulk transaction's rows, by the region of the table they go to. Written
 * region by region, each in key order (`writeFresh`), the inserts walk each
 * B-tree region forward: a root's `file:`, `idx:roots/` and `ver:` rows
 * interleaved made each multi-row statement seek between three places of
 * the table (measured: about 1.6× the SQLite time of the same rows in key
 * order).
 */
export class FreshRows {
  readonly file: Row[] = []
  readonly roots: Row[] = []
  readonly ver: Row[] = []
}

/**
 * Writes what `insertFresh` collected, in key order (`file:` < `idx:roots/` < `ver:`; the roots come in key order, and so do a root's
 * fields in a peer's page, so the sort only checks).
 */
export function writeFresh (tx: Tx, rows: FreshRows): void {
  if (rows.file.length + rows.ver.length === 0) return
  rows.file.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  tx.putMany(rows.file.concat(rows.roots, rows.ver))
}

/**
 * Inside a bulk transaction: `rid`'s rows from its entries (`at` their
 * places in `entries`, keys in any order; `root` its newest root
 * tombstone), appended to `rows` for one write in key order (`writeFresh`), and its counters.
 * Returns what the transfer's end derives from it, with how many keys it
 * versioned; undefined when the root names a key twice (nothing written).
 */
export function insertFresh (tx: Tx, rid: string, root: Version | undefined, entries: readonly RemoteEntry[], at: readonly number[],
  rows: FreshRows): { staged: Staged, versioned: number } | undefined {
  const vm = new VersionMap(root)
  const names: string[] = []
  const values: string[] = []
  const keys: string[] = []
  const fieldAt = 5 + rid.length + 1 // file:<rid>/<field>
  let hlc: string | undefined
  let origin: string | undefined
  let version = ''
  for (const i of at) {
    const e = entries[i]
    if (e.hlc !== hlc || e.origin !== origin) {
      hlc = e.hlc
      origin = e.origin
      version = makeVersion(hlc, origin)
    }
    // A key at or below the root tombstone is deleted with the record: a merge keeps nothing of it (folding).
    if (root !== undefined && version <= root) continue
    const field = e.key.slice(fieldAt)
    const known = vm.fields.size
    vm.fields.set(field, version)
    if (vm.fields.size === known) return undefined
    if (e.value === null) continue
    names.push(field)
    values.push(e.value)
    keys.push(e.key)
  }
  const ser = vm.serialize()
  for (let i = 0; i < names.length; i++) {
    rows.file.push([keys[i], values[i], undefined])
    tx.addCounter(schemaCounterKey(names[i], values[i]), 1)
  }
  rows.ver.push([VER + rid, ser, undefined])
  const record = names.length > 0 && isRecord({ size: names.length, keys: () => names.values() }, vm)
  const cids: string[] = []
  if (record) {
    rows.roots.push([ROOTS + rid, '', undefined])
    // Not in a group yet (it held nothing): canonical, so visible.
    tx.addCounter(COUNT_ROOTS, 1)
    for (const n of names) {
      const c = cidMemberOf(n)
      if (c !== undefined) cids.push(c)
    }
  }
  const staged: Staged = [rid, rootHash(rid, ser, { names, values }), versionedKeys(vm), cids]
  return { staged, versioned: vm.fields.size + (root === undefined ? 0 : 1) }
}

/** Keeps a transaction's staged roots until the transfer's end (its first root names the row; a page taken again adds to it). */
export function stage (tx: Tx, staged: readonly Staged[]): void {
  if (staged.length === 0) return
  const key = BULK_DERIVE_PREFIX + staged[0][0]
  const had = tx.get(key)
  const all = had === undefined ? staged : [...JSON.parse(had) as Staged[], ...staged]
  tx.putMany([[key, JSON.stringify(all), had]])
}
