/**
 * Where this node holds a record's bytes: `loc:<rid>`, a node-local row
 * (never replicated, like `dup:`), holding this node's own `filePath`,
 * `sizeByte` and `mtimeNano` as a JSON object. The replicated fields of the
 * same names stay last-writer-wins (the path some holder wrote last, which
 * the original clients read on a node without a copy); the row is what this
 * node shows in their place and the only path it serves bytes from. It
 * follows every local write of those fields (the watcher's: the API refuses
 * client writes to them), never a peer's, and goes with this node's last copy.
 */
import type { Tx } from '../kv/index.js'
import { LOC, type Reader } from './layout.js'
import type { FieldChange } from './mutation.js'

export const LOCATION_FIELDS = ['filePath', 'sizeByte', 'mtimeNano'] as const
type LocationField = typeof LOCATION_FIELDS[number]
export type Location = Partial<Record<LocationField, string>>

export function isLocationField (f: string): f is LocationField {
  return f === 'filePath' || f === 'sizeByte' || f === 'mtimeNano'
}

export function readLocation (r: Pick<Reader, 'get'>, rid: string): Location | undefined {
  const v = r.get(LOC + rid)
  return v === undefined ? undefined : JSON.parse(v) as Location
}

/** This node's location over a group: the first member (in id order) that has one. */
export function groupLocation (r: Pick<Reader, 'get'>, members: readonly string[]): Location | undefined {
  for (const m of members) {
    const loc = readLocation(r, m)
    if (loc !== undefined) return loc
  }
  return undefined
}

/** Fields with this node's own location in place of the replicated one (in place; returns `fields`). */
export function withLocation (fields: Record<string, string>, loc: Location | undefined): Record<string, string> {
  if (loc === undefined) return fields
  for (const f of LOCATION_FIELDS) {
    const v = loc[f]
    if (v !== undefined) fields[f] = v
  }
  return fields
}

/**
 * Inside a local write: the location row follows the write's location
 * fields (set or deleted), whether or not their replicated value changes.
 * `fresh`: the root held nothing, so there is no row to read first.
 */
export function mirrorLocation (tx: Tx, rid: string, changes: readonly FieldChange[], fresh: boolean): void {
  let loc: Location | undefined
  let row: string | undefined
  for (const ch of changes) {
    const f = ch.field
    if (!isLocationField(f)) continue
    if (loc === undefined) {
      row = fresh ? undefined : tx.get(LOC + rid)
      loc = row === undefined ? {} : JSON.parse(row) as Location
    }
    if (ch.value === null) delete loc[f]
    else loc[f] = ch.value
  }
  if (loc === undefined) return
  // Fixed key order, so the row's bytes depend only on its values.
  const out: Location = {}
  for (const f of LOCATION_FIELDS) if (loc[f] !== undefined) out[f] = loc[f]
  if (Object.keys(out).length === 0) {
    if (row !== undefined) tx.delete(LOC + rid)
  } else tx.putMany([[LOC + rid, JSON.stringify(out), row]]) // the row was read above (or the root is fresh): no read before the write
}
