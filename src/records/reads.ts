/**
 * Reads of records as people and the API see them: an address (root id or
 * any CID) resolves to its group's canonical root, and a group reads as one
 * document whose fields are the per-key last-writer-wins merge of its
 * members. Multi-statement reads run in one read transaction (one snapshot).
 */
import { canonicalCid } from '../cid/index.js'
import { prefixEnd, type KvStore, type SqlStatement } from '../kv/index.js'
import { cidMemberOf } from './field-path.js'
import { nest, type Nested } from './flatten.js'
import {
  CID, COUNT_ROOTS, DUP, FILE, GRP, LOC, ROOTS, VER, canonOf, fieldKey, isLive, membersOf,
  readCids, readDuplicates, readFields, readFieldsObject, recordRange, type Reader
} from './layout.js'
import { isRecordId, type RecordId } from './record-id.js'
import { SCHEMA_PREFIX, parseSchemaCounterKey } from './schema-type.js'
import type { FieldVersion, LibraryPage, SchemaCounter } from './surface.js'
import type { RecordDocument, RecordDocumentJson } from './types.js'
import { VersionMap, versionHlc, versionOrigin, type Version } from './versions.js'
import { groupLocation, isLocationField, readLocation, withLocation } from './local-location.js'

/** The JSON-text document of a root in no group, `canonical_cid` derived from its cids. */
function singleRootDocument (rid: RecordId, metadataJson: string, cids: string[], duplicates: string[]): RecordDocumentJson {
  const out: RecordDocumentJson = { rid, members: [rid], metadataJson, cids, duplicates }
  const canon = canonicalCid(cids)
  if (canon !== undefined) out.canonical_cid = canon
  return out
}

export class RecordReader {
  private docStmt: SqlStatement | undefined

  constructor (private readonly kv: KvStore) {}

  /**
   * The canonical root an address names: a root id (mapped to its group's
   * canonical root) or any registered CID. Undefined when nothing is live there.
   */
  resolveRoot (addr: string, r: Reader = this.kv): RecordId | undefined {
    if (isRecordId(addr)) {
      const c = canonOf(r, addr)
      return isLive(r, c) ? c : undefined
    }
    const owner = r.get(CID + addr)
    if (owner === undefined) return undefined
    const c = canonOf(r, owner)
    return isLive(r, c) ? c : undefined
  }

  /** The record's flat fields (the group merged), or undefined. */
  getFlat (addr: string): Record<string, string> | undefined {
    return this.kv.read(() => {
      const rid = this.resolveRoot(addr)
      return rid === undefined ? undefined : this.mergedFields(this.kv, rid)
    })
  }

  getProperty (addr: string, field: string): string | undefined {
    return this.kv.read(() => {
      const rid = this.resolveRoot(addr)
      if (rid === undefined) return undefined
      const members = membersOf(this.kv, rid)
      if (members.length > 1) return this.mergedFields(this.kv, rid)[field]
      return (isLocationField(field) ? readLocation(this.kv, rid)?.[field] : undefined) ?? this.kv.get(fieldKey(rid, field))
    })
  }

  /**
   * The document with its flat fields as JSON text (`metadataJson`), for
   * replies that are JSON anyway (`GET /api/meta/{cid}`): a single record's
   * fields are serialised by SQLite instead of being materialised and then
   * stringified. Same content as `getDocument`.
   */
  getDocumentJson (addr: string): RecordDocumentJson | undefined {
    if (!isRecordId(addr) && !this.kv.inTransaction) {
      this.kv.checkOpen()
      // The hot path (a CID of a root in no group): one statement reads the
      // owner, its group and liveness, the fields as JSON, the cids and the
      // duplicates. A single statement is its own snapshot, so no explicit
      // read transaction is needed, and the record's pages are visited once.
      const row = this.documentStatement().get(CID + addr) as [string, string | null, number | null, string, string, string] | undefined
      if (row === undefined) return undefined
      const [rid, grp, live, metadataJson, cidsJson, dupsJson] = row
      // The fields with this node's own location in place of the replicated one (local-location.ts), patched by SQLite.
      if (grp === null) {
        if (live === null) return undefined
        return singleRootDocument(rid as RecordId, metadataJson, JSON.parse(cidsJson) as string[], JSON.parse(dupsJson) as string[])
      }
      // A root in a group: the general path below merges the members.
    }
    return this.kv.read(() => {
      const rid = this.resolveRoot(addr)
      if (rid === undefined) return undefined
      const members = membersOf(this.kv, rid)
      if (members.length > 1) {
        const { metadata, ...rest } = this.readDocument(rid)!
        return { ...rest, metadataJson: JSON.stringify(metadata) }
      }
      const loc = readLocation(this.kv, rid)
      const json = this.kv.jsonObject(`${FILE}${rid}/`)
      return singleRootDocument(rid, loc === undefined ? json : JSON.stringify(withLocation(JSON.parse(json) as Record<string, string>, loc)),
        readCids(this.kv, rid), readDuplicates(this.kv, rid))
    })
  }

  /**
   * `cid:<cid>` → [owner, its group entry, live marker, fields as a JSON
   * object, cids as a JSON array, duplicate paths as a JSON array].
   */
  private documentStatement (): SqlStatement {
    if (this.docStmt === undefined) {
      const f = `'${FILE}' || r.v || '/'`
      const d = `'${DUP}' || r.v || '/'`
      this.docStmt = this.kv.prepare(
        `SELECT rid, grp, live, CASE WHEN loc IS NULL THEN fields ELSE json_patch(fields, loc) END, cids, dups FROM (SELECT r.v AS rid,
        (SELECT v FROM kv WHERE k = '${GRP}' || r.v) AS grp,
        (SELECT 1 FROM kv WHERE k = '${ROOTS}' || r.v) AS live,
        (SELECT json_group_object(substr(k, length(${f}) + 1), v) FROM kv WHERE k >= ${f} AND k < '${FILE}' || r.v || '0') AS fields,
        (SELECT v FROM kv WHERE k = '${LOC}' || r.v) AS loc,
        (SELECT json_group_array(substr(k, length(${f}) + 6)) FROM kv WHERE k >= ${f} || 'cids/' AND k < ${f} || 'cids0') AS cids,
        (SELECT json_group_array(substr(k, length(${d}) + 1)) FROM kv WHERE k >= ${d} AND k < '${DUP}' || r.v || '0') AS dups
        FROM kv r WHERE r.k = ?)`).raw()
    }
    return this.docStmt
  }

  /** One snapshot read of the record at `addr`: every statement under one read lock. */
  getDocument (addr: string): RecordDocument | undefined {
    return this.kv.read(() => this.readDocument(addr))
  }

  private readDocument (addr: string): RecordDocument | undefined {
    const rid = this.resolveRoot(addr)
    if (rid === undefined) return undefined
    const members = membersOf(this.kv, rid)
    const metadata = this.mergedFields(this.kv, rid, members)
    const cids: string[] = []
    for (const f of Object.keys(metadata)) {
      const c = cidMemberOf(f)
      if (c !== undefined) cids.push(c)
    }
    const duplicates: string[] = []
    for (const m of members) duplicates.push(...readDuplicates(this.kv, m))
    const doc: RecordDocument = { rid, members: [rid, ...members.filter(m => m !== rid)], metadata, cids, duplicates }
    const canon = canonicalCid(cids)
    if (canon !== undefined) doc.canonical_cid = canon
    return doc
  }

  /**
   * The document nested for people (flatten/nest rules in flatten.ts): the
   * `cids/` key-set hoisted into the `cids` array, `canonical_cid` derived,
   * `duplicates` listed. Undefined when nothing is live at `addr`.
   */
  getNestedDocument (addr: string): Record<string, Nested> | undefined {
    const doc = this.getDocument(addr)
    if (doc === undefined) return undefined
    const fields: Record<string, string> = {}
    for (const [k, v] of Object.entries(doc.metadata)) if (cidMemberOf(k) === undefined) fields[k] = v
    const out: Record<string, Nested> = { ...nest(fields), cids: [...doc.cids].sort(), duplicates: doc.duplicates }
    if (doc.canonical_cid !== undefined) out.canonical_cid = doc.canonical_cid
    return out
  }

  /** Visible records (a group counts once). */
  countRecords (): number {
    return Number(this.kv.get(COUNT_ROOTS) ?? '0')
  }

  /** Canonical live roots in id order, after `after` (exclusive). */
  listRoots (opts: { after?: string, limit?: number } = {}): RecordId[] {
    const out: RecordId[] = []
    const limit = opts.limit ?? Infinity
    let lo = opts.after === undefined ? ROOTS : `${ROOTS}${opts.after}\u0000`
    const hi = prefixEnd(ROOTS)
    while (out.length < limit) {
      const page = this.kv.keys(lo, hi, 1000)
      if (page.length === 0) break
      for (const k of page) {
        const rid = k.slice(ROOTS.length) as RecordId
        if (canonOf(this.kv, rid) === rid) out.push(rid)
        if (out.length >= limit) break
      }
      lo = page[page.length - 1] + '\u0000'
    }
    return out
  }

  /** Every canonical root, lazily, in id order. */
  * iterateRoots (): IterableIterator<RecordId> {
    let after: string | undefined
    for (;;) {
      const page = this.listRoots({ after, limit: 1000 })
      if (page.length === 0) return
      yield * page
      after = page[page.length - 1]
    }
  }

  duplicatesOf (addr: string): string[] {
    const rid = this.resolveRoot(addr)
    if (rid === undefined) return []
    return membersOf(this.kv, rid).flatMap(m => readDuplicates(this.kv, m))
  }

  /** Per field, the newest version across the document's roots (the one its merged value shows), tombstones included. */
  fieldVersions (doc: RecordDocument): FieldVersion[] {
    const best = new Map<string, FieldVersion>()
    for (const rid of doc.members) {
      const vm = VersionMap.parse(this.kv.get(VER + rid))
      const live = readFields(this.kv, rid)
      for (const [field, v] of vm.fields) {
        const cur = best.get(field)
        const hlc = versionHlc(v)
        const origin = versionOrigin(v)
        // Version strings order as (hlc, origin): the greater pair decided the merged value.
        if (cur !== undefined && (cur.hlc > hlc || (cur.hlc === hlc && cur.origin >= origin))) continue
        best.set(field, { field, hlc, origin, root: rid, deleted: !live.has(field) })
      }
    }
    return [...best.values()].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0))
  }

  /** The value-type counters the mutation path keeps in every write (`/api/schema`). */
  schemaCounters (): SchemaCounter[] {
    const out: SchemaCounter[] = []
    for (const [k, v] of this.kv.range(SCHEMA_PREFIX, prefixEnd(SCHEMA_PREFIX))) {
      const t = parseSchemaCounterKey(k)
      const n = Number(v)
      if (t !== undefined && Number.isFinite(n) && n > 0) out.push({ ...t, count: n })
    }
    return out
  }

  /**
   * Library figures over up to `limit` live roots after `after`: field keys,
   * the roots this node holds a copy of and their total size (from its own
   * location rows: a record replicated from a peer carries that peer's
   * filePath, which names no file here). Roots are contiguous in key order,
   * so one count covers the page's field keys.
   */
  libraryPage (after: RecordId | undefined, limit: number): LibraryPage {
    const kv = this.kv
    const keys = kv.keys(after === undefined ? ROOTS : `${ROOTS}${after}\u0000`, prefixEnd(ROOTS), limit)
    const page: LibraryPage = { fieldKeys: 0, fileCount: 0, totalSize: 0n, next: undefined }
    if (keys.length === 0) return page
    const rids = keys.map(k => k.slice(ROOTS.length) as RecordId)
    page.fieldKeys = kv.count(recordRange(rids[0])[0], recordRange(rids[rids.length - 1])[1])
    for (const rid of rids) {
      const loc = readLocation(kv, rid)
      const size = loc?.sizeByte
      if (size === undefined || loc?.filePath === undefined || loc.mtimeNano === undefined) continue
      page.fileCount++
      if (/^\d{1,30}$/.test(size)) page.totalSize += BigInt(size)
    }
    if (keys.length === limit) page.next = rids[rids.length - 1]
    return page
  }

  /** False once the store is closed or a read fails: what `/health` reports as degraded. */
  available (): boolean {
    if (this.kv.isClosed) return false
    try {
      this.kv.get(COUNT_ROOTS)
      return true
    } catch {
      return false // a failing read is exactly what "degraded" reports
    }
  }

  /** Per-key last-writer-wins over the group's roots, by their original versions. */
  mergedFields (r: Reader, rid: RecordId, members: RecordId[] = membersOf(r, rid)): Record<string, string> {
    return mergedFields(r, rid, members)
  }
}

/** A group's document: per-key last-writer-wins over its roots, by their original versions (a root alone: its own fields). */
export function mergedFields (r: Reader, rid: RecordId, members: RecordId[] = membersOf(r, rid)): Record<string, string> {
  // This node's own location shows in place of the replicated one (local-location.ts).
  if (members.length === 1) return withLocation(readFieldsObject(r, members[0]), readLocation(r, members[0]))
  const best = new Map<string, { v: Version | undefined, value: string | undefined }>()
  for (const m of members) {
    const vm = VersionMap.parse(r.get(VER + m))
    const fields = readFields(r, m)
    const names = new Set([...vm.fields.keys(), ...fields.keys()])
    for (const f of names) {
      const v = vm.effective(f)
      const cur = best.get(f)
      if (cur === undefined || (v !== undefined && (cur.v === undefined || v > cur.v))) best.set(f, { v, value: fields.get(f) })
    }
  }
  const out: Record<string, string> = {}
  for (const [f, { value }] of [...best].sort((a, b) => (a[0] < b[0] ? -1 : 1))) if (value !== undefined) out[f] = value
  return withLocation(out, groupLocation(r, members))
}
