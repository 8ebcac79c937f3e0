/**
 * Client writes and the location fields (`filePath`, `sizeByte`,
 * `mtimeNano`): a fact of one node's disk, written only by that node's
 * watcher (records' local-location.ts). A client's write of one is refused
 * with a 400 (`watcher_owned_field`), unless it repeats the value this node
 * shows (a client that reads a record and writes it back whole keeps
 * working: the repeated field is dropped, a no-op). A delete is always
 * refused.
 */
import { LocationFieldError, isLocationField, type RecordReads } from '../records/index.js'

/** `fields` without the location fields that repeat what `addr` shows; throws on one that differs. */
export function clientFields (records: Pick<RecordReads, 'getFlat'>, addr: string, fields: Record<string, string>): Record<string, string> {
  let shown: Record<string, string> | undefined
  let out: Record<string, string> | undefined
  for (const [f, v] of Object.entries(fields)) {
    if (!isLocationField(f)) continue
    shown ??= records.getFlat(addr) ?? {}
    if (shown[f] !== v) throw new LocationFieldError(f)
    out ??= { ...fields }
    delete out[f]
  }
  return out ?? fields
}

/** Refuses a client's delete of a location field, or a set-member add to one. */
export function refuseLocationField (field: string): void {
  if (isLocationField(field)) throw new LocationFieldError(field)
}
