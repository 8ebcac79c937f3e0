/**
 * Reads of a record's rows for a structure derived inside the write
 * transaction (search's FTS rows and field index): liveness, groups and
 * fields, through any reader (the store between transactions, or a write
 * function's `tx` so the write's own changes are seen). Only the record
 * layer knows which keys hold them; callers get answers, never keys.
 */
import { prefixEnd } from '../kv/index.js'
import { COUNT_ROOTS, GRP, ROOTS, canonOf, fieldKey, isLive, membersOf, readFieldsObject, type Reader } from './layout.js'
import type { RecordId } from './record-id.js'
import { mergedFields } from './reads.js'

export type RowReader = Reader

export const recordRows = {
  /** The root has at least one live field. */
  isLive: (r: RowReader, rid: string): boolean => isLive(r, rid),
  /** The canonical root of the root's group (itself when it is in none). */
  canonOf: (r: RowReader, rid: string): RecordId => canonOf(r, rid),
  /** The roots of the group whose canonical root is `canon` (`[canon]` when alone). */
  membersOf: (r: RowReader, canon: string): RecordId[] => membersOf(r, canon),
  /** The root is in a group of two or more. */
  inGroup: (r: RowReader, rid: string): boolean => r.get(GRP + rid) !== undefined,
  /** The canonical root of the root's group, undefined when it is in none (one read for both of the above). */
  groupOf: (r: RowReader, rid: string): RecordId | undefined => r.get(GRP + rid) as RecordId | undefined,
  /** One field of one root (not the group's merge). */
  field: (r: RowReader, rid: string, field: string): string | undefined => r.get(fieldKey(rid, field)),
  /** The document of the group whose canonical root is `canon`: its members' fields merged (its own fields when alone). */
  merged: (r: RowReader, canon: string): Record<string, string> => mergedFields(r, canon as RecordId),
  /** Every live field of one root (not the group's merge). */
  fields: (r: RowReader, rid: string): Record<string, string> => readFieldsObject(r, rid),
  /** Every root in a group of two or more, with its canonical root. */
  groupedRoots: (r: RowReader): Array<[RecordId, RecordId]> =>
    r.range(GRP, prefixEnd(GRP)).map(([k, v]) => [k.slice(GRP.length) as RecordId, v as RecordId]),
  /** Live roots (canonical or not) after `after`, up to `upTo` included when given, in id order. */
  liveRoots: (r: RowReader, after: string | undefined, limit: number, upTo?: string): RecordId[] =>
    r.keys(after === undefined ? ROOTS : `${ROOTS}${after}\u0000`, upTo === undefined ? prefixEnd(ROOTS) : `${ROOTS}${upTo}\u0000`, limit)
      .map(k => k.slice(ROOTS.length) as RecordId),
  /** Visible records (a group counts once), as the counter holds it. */
  visibleCount: (r: RowReader): number => Number(r.get(COUNT_ROOTS) ?? '0')
}

/** Live roots, canonical or not: one count over the root index (search sizes a rebuild by it). */
export function countLiveRoots (r: { count: (lo: string, hi: string) => number }): number {
  return r.count(ROOTS, prefixEnd(ROOTS))
}
