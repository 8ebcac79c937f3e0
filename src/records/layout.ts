/**
 * The key layout (docs/design/data-model.md, docs/storage.md#keys), in one place.
 *
 * | key                         | value            | replicated |
 * |-----------------------------|------------------|------------|
 * | file:<rid>/<field>          | field value      | yes        |
 * | ver:<rid>                   | version map      | yes (beside the values) |
 * | cid:<cid>                   | canonical rid    | no: derived from cids/ members |
 * | idx:roots/<rid>             | ""               | no: live roots |
 * | idx:count/roots             | integer          | no: visible records (a group counts once) |
 * | idx:count/ready             | "1"              | no |
 * | idx:schema/<f>\x1f…         | integer          | no |
 * | idx:grp/<rid>               | canonical rid    | no: only for roots in a group of two or more |
 * | idx:grpm/<canon>/<rid>      | ""               | no: members of that group |
 * | dup:<rid>/<path>            | ""               | no: paths on this node's disk |
 * | loc:<rid>                   | JSON location    | no: this node's own filePath, sizeByte, mtimeNano (local-location.ts) |
 * | meta-core:cached/<rid>      | ""               | no: this node's byte cache keeps the record's bytes (file-ops.ts) |
 * | meta-core:hlc               | last hlc issued  | no |
 * | meta-core:node-id           | standalone id    | no: this store's own origin without a mesh identity (open-store.ts) |
 * | meta-core:holder-id         | origin id        | no: the id this store's holder members are under (store-identity.ts) |
 * | meta-core:copied-from       | origin id        | no: the node a copied store came from |
 * | meta-core:locations         | "1"              | no: the location rows were filled in once (file-ops.ts) |
 */
import { prefixEnd, type Tx } from '../kv/index.js'
import type { RecordId } from './record-id.js'

export const FILE = 'file:'
export const VER = 'ver:'
export const CID = 'cid:'
export const ROOTS = 'idx:roots/'
export const COUNT_ROOTS = 'idx:count/roots'
export const COUNT_READY = 'idx:count/ready'
export const GRP = 'idx:grp/'
export const GRPM = 'idx:grpm/'
export const DUP = 'dup:'
export const LOC = 'loc:'
/** In the reserved `meta-core:` namespace, so neither the /api/kv door nor the local store can write one. */
export const CACHED = 'meta-core:cached/'
export const HLC_KEY = 'meta-core:hlc'
export const NODE_ID_KEY = 'meta-core:node-id'
export const HOLDER_ID_KEY = 'meta-core:holder-id'
export const COPIED_FROM_KEY = 'meta-core:copied-from'
/** Set once this store's location rows were filled in from the replicated fields (file-ops.ts backfillLocations). */
export const LOCATIONS_DONE_KEY = 'meta-core:locations'

/** The field of a `file:<rid>/<field>` key in SQL: roots are 26 characters, so the field starts at character 33. */
export const FIELD_OF_FILE_KEY = 'substr(k, 33)'
export const HOLDERS_PREFIX = 'holders/'
export const HOLDERS_INDEX_WHERE = "k >= 'file:' AND k < 'file;' AND substr(k, 33, 8) = 'holders/'"
/**
 * The records' one SQL index beside the kv table: the `holders/<node>`
 * fields, so a node finds the files it holds at boot without reading every
 * record. Partial, one entry per holder member, kept by SQLite in every write.
 */
export const HOLDERS_INDEX = `CREATE INDEX IF NOT EXISTS kv_holders ON kv(${FIELD_OF_FILE_KEY}) WHERE ${HOLDERS_INDEX_WHERE}`

/** What both a transaction and the store offer for reading. */
export type Reader = Pick<Tx, 'get' | 'range' | 'keys' | 'suffixes'>

export function fieldKey (rid: string, field: string): string {
  return `file:${rid}/${field}`
}

export function recordRange (rid: string): [string, string] {
  const lo = `file:${rid}/`
  return [lo, prefixEnd(lo)]
}

/** A record's live fields as a map, read with one range scan. */
export function readFields (r: Reader, rid: string): Map<string, string> {
  return new Map(Object.entries(r.suffixes(`file:${rid}/`)))
}

/** A record's live fields as a plain object (the read path: no intermediate map). */
export function readFieldsObject (r: Reader, rid: string): Record<string, string> {
  return r.suffixes(`file:${rid}/`)
}

export function readCids (r: Reader, rid: string): string[] {
  const lo = `file:${rid}/cids/`
  return r.keys(lo, prefixEnd(lo)).map(k => k.slice(lo.length))
}

export function isLive (r: Reader, rid: string): boolean {
  return r.get(ROOTS + rid) !== undefined
}

/** The canonical root of the group `rid` belongs to (itself when alone). */
export function canonOf (r: Reader, rid: string): RecordId {
  return (r.get(GRP + rid) ?? rid) as RecordId
}

/** Every root of the group whose canonical root is `canon` (just `[canon]` when alone). */
export function membersOf (r: Reader, canon: string): RecordId[] {
  // Most roots are in no group: one point read settles it without a range scan.
  if (r.get(GRP + canon) === undefined) return [canon as RecordId]
  const lo = `${GRPM}${canon}/`
  const ms = r.keys(lo, prefixEnd(lo)).map(k => k.slice(lo.length) as RecordId)
  return ms.length === 0 ? [canon as RecordId] : ms
}

export function readDuplicates (r: Reader, rid: string): string[] {
  const lo = `${DUP}${rid}/`
  return r.keys(lo, prefixEnd(lo)).map(k => k.slice(lo.length))
}
