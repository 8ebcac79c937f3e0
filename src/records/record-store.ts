import { silentLogger, type Logger } from '../common/index.js'
import { canonicalCid, isCid } from '../cid/index.js'
import { prefixEnd, type KvStore, type SqlStatement, type Tx } from '../kv/index.js'
import { ChangeLog, type ChangeListener, type ChangeLogEntry } from './change-log.js'
import {
  changesSince, exportRange, readChangeLog, rootEntries, type ChangePage, type ExportPage, type PageOptions
} from './change-feed.js'
import {
  InvalidAddressError, InvalidFieldError, InvalidValueError, SelfAliasError, UnknownRecordError
} from './errors.js'
import { checkWritableField, cidMemberOf, validateFieldPath, validateValue } from './field-path.js'
import { Hlc } from './hlc.js'
import { checkRemoteEntry, ORIGIN_RE, type RemoteEntry } from './remote-entry.js'
import {
  CID, COUNT_READY, COUNT_ROOTS, DUP, FILE, GRP, HLC_KEY, ROOTS, VER, canonOf, fieldKey, isLive, membersOf,
  readCids, readDuplicates, readFields, readFieldsObject, type Reader
} from './layout.js'
import { Mutator, type FieldChange, type RecordIndexer } from './mutation.js'
import { nest, type Nested } from './flatten.js'
import { RecordIdMinter, isRecordId, newRecordId, type RandomSource, type RecordId } from './record-id.js'
import { VersionMap, makeVersion, type Version } from './versions.js'

/** Fields the store itself owns: a replacing write (`setFlat`) keeps them. */
export const OWNED_FIELD_PREFIXES = ['filePath', 'sizeByte', 'mtimeNano', 'cids/', 'holders/']

export interface RecordStoreOptions {
  /** This node's id: the origin of every version it issues (its peer id in a mesh). */
  nodeId: string
  indexers?: RecordIndexer[]
  /** A remote version further ahead of local wall time than this is refused (default 10 s). */
  maxClockDriftMs?: number
  /** Wall clock in ms: the HLC and the time part of minted root ids (default Date.now). */
  now?: () => number
  /**
   * Uniform numbers in [0, 1) for the random part of minted root ids. With
   * it (and `now`), ids come from this store's own minter, so a simulator with
   * a virtual clock and a seed mints the same ids on every run. Default: OS
   * randomness, shared by every store in the process.
   */
  random?: RandomSource
  logger?: Logger
}

/** A record as readers see it: the group's fields merged, cids hoisted, canonical derived. */
export interface RecordDocument {
  /** The canonical root (internal: the public CID routes do not disclose it). */
  rid: RecordId
  /** Every root of the group, canonical first. */
  members: RecordId[]
  /** Flat fields, `cids/<cid>` members included. */
  metadata: Record<string, string>
  cids: string[]
  canonical_cid?: string
  duplicates: string[]
}

export interface ApplyResult {
  applied: number
  skipped: number
  /** Entries refused for clock drift. */
  refused: number
}

export interface WriteResult {
  rid: RecordId
  /** Fields whose value changed. */
  updated: number
  /** True when the write created the record (an unknown CID becomes a new record). */
  created: boolean
}

export type RemovePathResult =
  | { kind: 'duplicate-removed', rid: RecordId }
  | { kind: 'promoted', rid: RecordId, promoted: string }
  | { kind: 'last-copy', rid: RecordId }
  | { kind: 'not-found' }

export interface FileTuple { rid: RecordId, filePath: string, sizeByte: string, mtimeNano: string }


/**
 * The record layer: UUIDv7 roots, flat `file:<rid>/<field>` keys, the
 * `cid:` reverse index, duplicates, versions and merge. Every write is one
 * kv write function, so fields, aliases, versions, counters, search rows and
 * events commit together or not at all.
 */
/** The JSON-text document of a root in no group, `canonical_cid` derived from its cids. */
function singleRootDocument (rid: RecordId, metadataJson: string, cids: string[], duplicates: string[]): Omit<RecordDocument, 'metadata'> & { metadataJson: string } {
  const out: Omit<RecordDocument, 'metadata'> & { metadataJson: string } = { rid, members: [rid], metadataJson, cids, duplicates }
  const canon = canonicalCid(cids)
  if (canon !== undefined) out.canonical_cid = canon
  return out
}

export class RecordStore {
  readonly kv: KvStore
  readonly nodeId: string
  readonly hlc: Hlc
  private readonly mutator: Mutator
  private readonly maxDrift: number
  private readonly log: Logger
  private driftRefused = 0
  private fieldStmt: SqlStatement | undefined
  private readonly changeLog: ChangeLog
  private readonly now: () => number
  private readonly mintId: (now: number) => RecordId

  constructor (kv: KvStore, opts: RecordStoreOptions) {
    if (!ORIGIN_RE.test(opts.nodeId)) throw new InvalidValueError('node id must be 1-128 characters of [A-Za-z0-9._-]')
    this.kv = kv
    this.nodeId = opts.nodeId
    this.log = opts.logger ?? silentLogger
    this.now = opts.now ?? Date.now
    this.hlc = new Hlc(this.now, kv.get(HLC_KEY))
    if (opts.random === undefined) {
      this.mintId = newRecordId
    } else {
      const minter = new RecordIdMinter(opts.random)
      this.mintId = (now) => minter.next(now)
    }
    this.changeLog = new ChangeLog(kv, this.log)
    this.mutator = new Mutator(opts.indexers ?? [], this.changeLog)
    this.maxDrift = opts.maxClockDriftMs ?? 10_000
    if (kv.get(COUNT_READY) === undefined) this.rebuildCounters()
  }

  /** Adds an indexer (search) before any write runs. */
  addIndexer (ix: RecordIndexer): void {
    this.mutator.addIndexer(ix)
  }

  // ================================================================ reads

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
      if (members.length === 1) return this.kv.get(fieldKey(rid, field))
      return this.mergedFields(this.kv, rid)[field]
    })
  }

  /**
   * The document with its flat fields as JSON text (`metadataJson`), for
   * replies that are JSON anyway (`GET /api/meta/{cid}`): a single record's
   * fields are serialised by SQLite instead of being materialised and then
   * stringified. Same content as `getDocument`.
   */
  getDocumentJson (addr: string): (Omit<RecordDocument, 'metadata'> & { metadataJson: string }) | undefined {
    if (!isRecordId(addr) && !this.kv.inTransaction) {
      this.kv.checkOpen()
      // The hot path (a CID of a root in no group): one statement reads the
      // owner, its group and liveness, the fields as JSON, the cids and the
      // duplicates. A single statement is its own snapshot, so no explicit
      // read transaction is needed, and the record's pages are visited once.
      const row = this.documentStatement().get(CID + addr) as [string, string | null, number | null, string, string, string] | undefined
      if (row === undefined) return undefined
      const [rid, grp, live, metadataJson, cidsJson, dupsJson] = row
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
      return singleRootDocument(rid, this.kv.jsonObject(`${FILE}${rid}/`), readCids(this.kv, rid), readDuplicates(this.kv, rid))
    })
  }

  private docStmt: SqlStatement | undefined

  /**
   * `cid:<cid>` → [owner, its group entry, live marker, fields as a JSON
   * object, cids as a JSON array, duplicate paths as a JSON array].
   */
  private documentStatement (): SqlStatement {
    if (this.docStmt === undefined) {
      const f = `'${FILE}' || r.v || '/'`
      this.docStmt = this.kv.prepare(`SELECT r.v,
        (SELECT v FROM kv WHERE k = '${GRP}' || r.v),
        (SELECT 1 FROM kv WHERE k = '${ROOTS}' || r.v),
        (SELECT json_group_object(substr(k, length(${f}) + 1), v) FROM kv WHERE k >= ${f} AND k < '${FILE}' || r.v || '0'),
        (SELECT json_group_array(substr(k, length(${f}) + 6)) FROM kv WHERE k >= ${f} || 'cids/' AND k < ${f} || 'cids0'),
        (SELECT json_group_array(substr(k, length('${DUP}' || r.v || '/') + 1)) FROM kv WHERE k >= '${DUP}' || r.v || '/' AND k < '${DUP}' || r.v || '0')
        FROM kv r WHERE r.k = ?`).raw()
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

  /** Roots carrying filePath, sizeByte and mtimeNano (the watcher's boot hydration, `/api/files/tuples`). */
  * iterateFileTuples (): IterableIterator<FileTuple> {
    for (const rid of this.iterateRoots()) {
      for (const m of membersOf(this.kv, rid)) {
        const filePath = this.kv.get(fieldKey(m, 'filePath'))
        const sizeByte = this.kv.get(fieldKey(m, 'sizeByte'))
        const mtimeNano = this.kv.get(fieldKey(m, 'mtimeNano'))
        if (filePath !== undefined && sizeByte !== undefined && mtimeNano !== undefined) yield { rid: m, filePath, sizeByte, mtimeNano }
      }
    }
  }

  /**
   * File tuples of the roots that hold `field` (e.g. this node's
   * `holders/<id>`), without walking every record: the query repeats the
   * field-index expression of the storage layout, so SQLite answers it from
   * `kv_field_v` when search has created it, and by a scan of the `file:`
   * range otherwise (same answer, slower).
   */
  fileTuplesWithField (field: string): FileTuple[] {
    this.fieldStmt ??= this.kv.prepare(
      "SELECT k FROM kv WHERE k>='file:' AND k<'file;' AND instr(k,'/')>0 AND lower(substr(k,instr(k,'/')+1)) = ?").pluck()
    return this.kv.read(() => {
      const out: FileTuple[] = []
      for (const k of this.fieldStmt!.all(field.toLowerCase()) as string[]) {
        const slash = k.indexOf('/')
        if (k.slice(slash + 1) !== field) continue
        const rid = k.slice(5, slash) as RecordId
        const filePath = this.kv.get(fieldKey(rid, 'filePath'))
        const sizeByte = this.kv.get(fieldKey(rid, 'sizeByte'))
        const mtimeNano = this.kv.get(fieldKey(rid, 'mtimeNano'))
        if (filePath !== undefined && sizeByte !== undefined && mtimeNano !== undefined) out.push({ rid, filePath, sizeByte, mtimeNano })
      }
      return out
    })
  }

  /** Every duplicate path on this node, as [rid, path]. */
  * iterateDuplicates (): IterableIterator<[RecordId, string]> {
    for (const [k] of this.kv.iterate(DUP, prefixEnd(DUP))) {
      const slash = k.indexOf('/', DUP.length)
      yield [k.slice(DUP.length, slash) as RecordId, k.slice(slash + 1)]
    }
  }

  duplicatesOf (addr: string): string[] {
    const rid = this.resolveRoot(addr)
    if (rid === undefined) return []
    return membersOf(this.kv, rid).flatMap(m => readDuplicates(this.kv, m))
  }

  /** The replicated state of one root in key order: the root tombstone, live keys and tombstones, with their versions. */
  exportRoot (rid: RecordId, r: Reader = this.kv): RemoteEntry[] {
    return rootEntries(r, rid)
  }

  // ================================================================ change log

  /**
   * The changes after `cursor` (undefined or `0`: from the start): each
   * changed key once with its current value and version, read in one
   * snapshot. See change-feed.ts for paging and gaps.
   */
  changesSince (cursor: string | undefined, opts: PageOptions): ChangePage {
    return changesSince(this.kv, cursor, opts)
  }

  /** Change-log rows after `after` as stored (id, set/del, key, version), for tests and tools. */
  readChangeLog (after: string | undefined, limit: number): ChangeLogEntry[] {
    return readChangeLog(this.kv, after, limit)
  }

  /**
   * Hears every commit's change-log entries after COMMIT, in log order, with
   * the value and version each change wrote: what a mesh pushes without
   * re-reading. Local and remote changes both; tell them apart by `origin`.
   * Returns the unsubscribe function.
   */
  onChanges (listener: ChangeListener): () => void {
    return this.changeLog.onChanges(listener)
  }

  /** The whole replicated range for a full resync, in key order after `after`; see change-feed.ts. */
  exportRange (after: string | undefined, opts: PageOptions): ExportPage {
    return exportRange(this.kv, after, opts)
  }

  /** Remote versions refused for clock drift since start. */
  get driftRefusedCount (): number {
    return this.driftRefused
  }

  // ================================================================ writes

  /** Mints a new root for a file on this node's disk. */
  async mint (filePath: string, sizeByte: number | string, mtimeNano: number | bigint | string, extra: Record<string, string> = {}): Promise<RecordId> {
    validateValue(filePath)
    const fields: Record<string, string> = { ...extra, filePath, sizeByte: String(sizeByte), mtimeNano: String(mtimeNano) }
    const changes = this.checkFields(fields, false)
    return await this.kv.write(tx => {
      const rid = this.mintId(this.now())
      this.mutator.mutate(tx, rid, this.stamp(tx, changes))
      return rid
    })
  }

  /** Writes the given fields, leaving the others (PATCH). An unknown CID address creates a record with that CID as a member. */
  async mergeFlat (addr: string, fields: Record<string, string>): Promise<WriteResult> {
    this.checkAddress(addr)
    const changes = this.checkFields(fields, true)
    return await this.kv.write(tx => this.writeTx(tx, addr, changes, false))
  }

  /**
   * Replaces the record's fields with `fields`, keeping the fields the store
   * owns (filePath, sizeByte, mtimeNano, cids/, holders/).
   */
  async setFlat (addr: string, fields: Record<string, string>): Promise<WriteResult> {
    this.checkAddress(addr)
    const changes = this.checkFields(fields, true)
    return await this.kv.write(tx => this.writeTx(tx, addr, changes, true))
  }

  async setProperty (addr: string, field: string, value: string): Promise<WriteResult> {
    return await this.mergeFlat(addr, { [field]: value })
  }

  /** Deletes one field (on every root of the group that holds it). */
  async deleteProperty (addr: string, field: string): Promise<{ rid: RecordId | undefined, deleted: boolean }> {
    validateFieldPath(field)
    this.checkAddress(addr)
    return await this.kv.write(tx => {
      const rid = this.resolveRoot(addr, tx)
      if (rid === undefined) return { rid, deleted: false }
      const version = this.version(tx)
      let deleted = false
      for (const m of membersOf(tx, rid)) {
        if (tx.get(fieldKey(m, field)) === undefined) continue
        this.mutator.mutate(tx, m, [{ field, value: null, version }])
        deleted = true
      }
      return { rid, deleted }
    })
  }

  /**
   * Adds `member` to a pipe-delimited set field (`a|b|c`), as the original's
   * `_add` route did; a member already present is a no-op.
   */
  async addToSet (addr: string, field: string, member: string): Promise<WriteResult & { added: boolean }> {
    checkWritableField(field)
    validateValue(member)
    if (member.includes('|')) throw new InvalidValueError('a set member cannot contain "|"')
    this.checkAddress(addr)
    return await this.kv.write(tx => {
      const rid = this.resolveRoot(addr, tx)
      const cur = rid === undefined ? undefined : this.mergedFields(tx, rid)[field]
      const members = cur === undefined || cur === '' ? [] : cur.split('|')
      if (members.includes(member)) return { rid: rid!, updated: 0, created: false, added: false }
      members.push(member)
      const value = members.join('|')
      validateValue(value)
      const r = this.writeTx(tx, addr, [[field, value]], false)
      return { ...r, added: true }
    })
  }

  /** Registers `cid` as an alias of the record at `addr` (the `cids/<cid>` member and the reverse index). */
  async addAlias (addr: string, cid: string): Promise<WriteResult> {
    if (cid === addr && isRecordId(addr)) throw new SelfAliasError()
    return await this.mergeFlat(addr, { [`cids/${cid}`]: 'true' })
  }

  /**
   * Deletes the record: every key of every root of its group, its aliases,
   * duplicates and index entries, leaving a root tombstone. Idempotent.
   */
  async deleteRoot (addr: string): Promise<{ rid: RecordId | undefined, deleted: number }> {
    this.checkAddress(addr)
    return await this.kv.write(tx => {
      const rid = this.resolveRoot(addr, tx)
      return { rid, deleted: rid === undefined ? 0 : this.deleteRootTx(tx, rid) }
    })
  }

  /**
   * This node's last local copy of the content at `path` went away
   * (replication.md, holders): in one transaction, the path leaves the record
   * and this node's `holders/<holderId>` member goes; when that leaves no
   * holder at all, the record is deleted. A record that never had holders
   * (written only through the API) is not deleted. Deciding inside the write
   * means a holder a peer added a moment ago is always seen.
   */
  async releaseCopy (addr: string, path: string, holderId: string): Promise<{ kind: 'deleted' | 'released' | 'not-found', rid?: RecordId }> {
    this.checkAddress(addr)
    const holder = `holders/${holderId}`
    validateFieldPath(holder)
    return await this.kv.write(tx => {
      const rid = this.resolveRoot(addr, tx)
      if (rid === undefined) return { kind: 'not-found' as const }
      const fields = this.mergedFields(tx, rid)
      const mine = fields[holder] !== undefined
      const others = Object.keys(fields).some(f => f.startsWith('holders/') && f !== holder)
      if (mine && !others) {
        this.deleteRootTx(tx, rid)
        return { kind: 'deleted' as const, rid }
      }
      this.removePathTx(tx, rid, path)
      if (mine) {
        const version = this.version(tx)
        for (const m of membersOf(tx, rid)) {
          if (tx.get(fieldKey(m, holder)) !== undefined) this.mutator.mutate(tx, m, [{ field: holder, value: null, version }])
        }
      }
      return { kind: 'released' as const, rid }
    })
  }

  private deleteRootTx (tx: Tx, rid: RecordId): number {
    const version = this.version(tx)
    let deleted = 0
    for (const m of membersOf(tx, rid)) {
      deleted += this.mutator.mutate(tx, m, [], { rootTombstone: version }).changed
    }
    return deleted
  }

  /** Records another path on this node's disk with the same content. */
  async addDuplicatePath (addr: string, path: string): Promise<RecordId> {
    validateValue(path)
    if (path.length === 0) throw new InvalidValueError('path is empty')
    this.checkAddress(addr)
    return await this.kv.write(tx => {
      const rid = this.resolveRoot(addr, tx)
      if (rid === undefined) throw new UnknownRecordError(addr)
      for (const m of membersOf(tx, rid)) if (tx.get(fieldKey(m, 'filePath')) === path) return rid
      tx.put(`${DUP}${rid}/${path}`, '')
      return rid
    })
  }

  /**
   * A copy at `path` went away: drops it from the duplicates, or promotes a
   * duplicate to `filePath` when it was the main path. `last-copy` means no
   * copy is left on this node; the caller decides what that means (holders).
   */
  async removeFilePath (addr: string, path: string): Promise<RemovePathResult> {
    this.checkAddress(addr)
    return await this.kv.write((tx): RemovePathResult => {
      const rid = this.resolveRoot(addr, tx)
      return rid === undefined ? { kind: 'not-found' } : this.removePathTx(tx, rid, path)
    })
  }

  private removePathTx (tx: Tx, rid: RecordId, path: string): RemovePathResult {
    const members = membersOf(tx, rid)
    for (const m of members) {
      if (tx.get(`${DUP}${m}/${path}`) !== undefined) {
        tx.delete(`${DUP}${m}/${path}`)
        return { kind: 'duplicate-removed', rid }
      }
    }
    for (const m of members) {
      if (tx.get(fieldKey(m, 'filePath')) !== path) continue
      const dups = members.flatMap(x => readDuplicates(tx, x).map(p => [x, p] as const)).sort((a, b) => (a[1] < b[1] ? -1 : 1))
      if (dups.length === 0) return { kind: 'last-copy', rid }
      const [owner, promoted] = dups[0]
      tx.delete(`${DUP}${owner}/${promoted}`)
      this.mutator.mutate(tx, m, [{ field: 'filePath', value: promoted, version: this.version(tx) }])
      return { kind: 'promoted', rid, promoted }
    }
    return { kind: 'not-found' }
  }

  /**
   * Merges entries from a peer in one transaction: each key takes the entry
   * iff its (hlc, origin) is greater than what is held (root tombstones
   * shadow older keys). Malformed entries refuse the whole batch (nothing is
   * applied); entries too far ahead of local time are refused and counted.
   */
  async applyRemote (entries: readonly RemoteEntry[]): Promise<ApplyResult> {
    const byRoot = new Map<RecordId, { root?: Version, changes: FieldChange[] }>()
    let refused = 0
    let maxHlc: string | undefined
    for (const e of entries) {
      const parsed = checkRemoteEntry(e)
      if (this.hlc.aheadOfWall(e.hlc) > this.maxDrift) { refused++; continue }
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
    this.driftRefused += refused
    if (refused > 0) this.log.warn('refused remote versions ahead of local clock', { refused, maxDriftMs: this.maxDrift })
    const total = entries.length - refused
    return await this.kv.write(tx => {
      let applied = 0
      for (const [rid, slot] of byRoot) {
        // Within one batch the newest version of a key decides, whatever the order it came in.
        slot.changes.sort((a, b) => (a.version < b.version ? -1 : a.version > b.version ? 1 : 0))
        applied += this.mutator.mutate(tx, rid, slot.changes, { remote: true, rootTombstone: slot.root }).touched
      }
      if (maxHlc !== undefined) this.hlc.observe(maxHlc)
      this.persistHlc(tx)
      return { applied, skipped: total - Math.min(applied, total), refused }
    })
  }

  // ================================================================ internals

  private writeTx (tx: Tx, addr: string, changes: ReadonlyArray<[string, string]>, replace: boolean): WriteResult {
    let rid = this.resolveRoot(addr, tx)
    let created = false
    const list = [...changes]
    if (rid === undefined) {
      if (isRecordId(addr)) {
        rid = addr // writing to a deleted root revives it (the new version beats its tombstone)
      } else {
        // An unknown CID: a new record, addressed by that CID from now on.
        rid = this.mintId(this.now())
        list.push([`cids/${addr}`, 'true'])
        created = true
      }
    }
    const version = this.version(tx)
    const stamped = list.map(([field, value]) => ({ field, value, version }) as FieldChange)
    if (replace) {
      const given = new Set(list.map(([f]) => f))
      for (const m of membersOf(tx, rid)) {
        const drop: FieldChange[] = []
        for (const f of readFields(tx, m).keys()) {
          if (given.has(f) || OWNED_FIELD_PREFIXES.some(p => f === p || (p.endsWith('/') && f.startsWith(p)))) continue
          drop.push({ field: f, value: null, version })
        }
        if (drop.length > 0 && m !== rid) this.mutator.mutate(tx, m, drop)
        else if (drop.length > 0) stamped.push(...drop)
      }
    }
    const r = this.mutator.mutate(tx, rid, stamped)
    return { rid, updated: r.changed, created }
  }

  /** Validates client-supplied fields; returns them as [field, value] pairs. */
  private checkFields (fields: Record<string, string>, client: boolean): Array<[string, string]> {
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) throw new InvalidValueError('fields must be an object of strings')
    const out: Array<[string, string]> = []
    for (const [f, v] of Object.entries(fields)) {
      if (client) checkWritableField(f)
      else validateFieldPath(f)
      validateValue(v)
      const c = cidMemberOf(f)
      if (c !== undefined && !isCid(c)) throw new InvalidFieldError(`cids member ${JSON.stringify(c.slice(0, 80))} is not a valid cid (CIDv1, base32 lower-case)`)
      out.push([f, v])
    }
    return out
  }

  private checkAddress (addr: string): void {
    if (typeof addr !== 'string' || (!isRecordId(addr) && !isCid(addr))) throw new InvalidAddressError(String(addr))
  }

  private stamp (tx: Tx, changes: ReadonlyArray<[string, string]>): FieldChange[] {
    const version = this.version(tx)
    return changes.map(([field, value]) => ({ field, value, version }))
  }

  /** Issues a version for a local write and persists the clock in the same transaction, so a restart never goes back. */
  private version (tx: Tx): Version {
    const v = makeVersion(this.hlc.now(), this.nodeId)
    this.persistHlc(tx)
    return v
  }

  private persistHlc (tx: Tx): void {
    tx.put(HLC_KEY, this.hlc.last())
  }

  /** Per-key last-writer-wins over the group's roots, by their original versions. */
  private mergedFields (r: Reader, rid: RecordId, members: RecordId[] = membersOf(r, rid)): Record<string, string> {
    if (members.length === 1) return readFieldsObject(r, members[0])
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
    return out
  }

  /** Rebuilds the visible-record counter from the rows (a store whose counters were never built). */
  private rebuildCounters (): void {
    this.kv.writeSync(tx => {
      let n = 0
      for (const k of tx.keys(ROOTS, prefixEnd(ROOTS))) {
        const rid = k.slice(ROOTS.length)
        if (canonOf(tx, rid) === rid) n++
      }
      if (n === 0) tx.delete(COUNT_ROOTS)
      else tx.put(COUNT_ROOTS, String(n))
      tx.put(COUNT_READY, '1')
    })
  }
}
