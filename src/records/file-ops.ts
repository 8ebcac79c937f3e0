/**
 * The record side of files on this node's disk (the watcher, file routes):
 * duplicate paths, a copy going away, this node's holder member, and the
 * file tuples boot hydration reads. Duplicate paths (`dup:`) are per node
 * and never replicated; holders are replicated members (docs/design/data-model.md#holders-and-locations).
 */
import { prefixEnd, type SqlStatement, type Tx } from '../kv/index.js'
import { issueVersion, type RecordContext } from './context.js'
import { InvalidValueError, UnknownRecordError } from './errors.js'
import { validateFieldPath, validateValue } from './field-path.js'
import { checkAddress } from './input.js'
import { CACHED, DUP, FIELD_OF_FILE_KEY, HOLDERS_INDEX_WHERE, HOLDERS_PREFIX, LOC, LOCATIONS_DONE_KEY, fieldKey, isLive, membersOf, readCids, readDuplicates,
  type Reader } from './layout.js'
import { groupLocation, readLocation, type Location } from './local-location.js'
import type { RecordReader } from './reads.js'
import { isRecordId, type RecordId } from './record-id.js'
import type { FieldChange } from './mutation.js'
import type { CachedCopyResult, FileTuple, LocalCopy, RecordDocument, ReleaseResult, RemovePathResult } from './types.js'

/** Location rows written per transaction by the backfill. */
const BACKFILL_CHUNK = 10_000

export class FileOps {
  private fieldStmt: SqlStatement | undefined
  private holderStmt: SqlStatement | undefined

  constructor (private readonly ctx: RecordContext, private readonly reads: RecordReader) {}

  /**
   * The copy of the content at `path` on this node went away. Decided in one
   * transaction from the committed rows, not from what the caller believes:
   * - the path leaves the record: a duplicate row goes, or, when it was the
   *   `filePath`, a copy takes its place: one the caller knows (a duplicate
   *   row first, in path order), else the first duplicate row; with that
   *   copy's size and mtime when the caller knows them;
   * - every copy in `copies` (other paths on this node the caller knows to
   *   hold the content) that the record does not name becomes a duplicate:
   *   the record's paths are brought back in line with the disk;
   * - while any local copy remains (a duplicate row, `copies`, or the bytes
   *   in this node's cache: a `meta-core:cached/` row, see holdCachedCopy), the record
   *   and this node's `holders/<holderId>` member stay. Only when none does,
   *   this node stops being a holder (docs/design/mesh-rules.md#the-deletion-rule): its member goes, and
   *   nothing else. The record is no record any more (`deleted`) when no
   *   holder is left live: a function of the merged state, so a holder
   *   another node adds concurrently keeps it. A record that never had
   *   holders (written only through the API) is never deleted here.
   * A caller that counts one copy fewer than the record lists (a duplicate
   * whose record write committed without the caller's own bookkeeping) thus
   * never deletes a record whose content is still here; the `localPaths` it
   * gets back name every copy the record now lists, for it to confirm. A
   * holder a peer added a moment ago is always seen.
   */
  async releaseCopy (addr: string, path: string, holderId: string, opts: { copies?: readonly LocalCopy[] } = {}): Promise<ReleaseResult> {
    checkAddress(addr)
    const holder = `holders/${holderId}`
    validateFieldPath(holder)
    const copies = (opts.copies ?? []).filter(c => c.path !== path)
    for (const c of copies) checkCopy(c)
    return await this.ctx.write((tx): ReleaseResult => {
      const rid = this.reads.resolveRoot(addr, tx)
      if (rid === undefined) return { kind: 'not-found' }
      const removed = this.removePathTx(tx, rid, path, copies)
      const members = membersOf(tx, rid)
      for (const c of copies) {
        if (members.some(m => ownPath(tx, m) === c.path || tx.get(`${DUP}${m}/${c.path}`) !== undefined)) continue
        tx.put(`${DUP}${rid}/${c.path}`, '')
      }
      const dups = members.flatMap(m => readDuplicates(tx, m)).sort()
      if (dups.length > 0 || copies.length > 0 || removed.kind === 'promoted') {
        const promoted = removed.kind === 'promoted' ? removed.promoted : undefined
        return { kind: 'kept', rid, ...(promoted !== undefined ? { promoted } : {}), localPaths: promoted !== undefined ? [promoted, ...dups] : dups }
      }
      for (const m of members) tx.delete(LOC + m) // no library copy left here: this node shows the replicated location
      // The cache still keeps the bytes: this node stays a holder until the cache lets them go (releaseCachedCopy).
      if (members.some(m => tx.get(CACHED + m) !== undefined)) return { kind: 'kept', rid, localPaths: [] }
      return { kind: this.releaseHolderTx(tx, members, holder) ? 'released' : 'deleted', rid }
    })
  }

  /**
   * Only this node's own member goes, never a root tombstone: the record stops being one when no holder
   * is live in the merged state (mutation.ts isRecord), so a holder another node adds concurrently keeps it,
   * with all its fields, on every node whatever the order the two changes arrive in. True when the record
   * is still live after.
   */
  private releaseHolderTx (tx: Tx, members: readonly RecordId[], holder: string): boolean {
    const version = issueVersion(this.ctx, tx)
    let live = false
    for (const m of members) {
      if (tx.get(fieldKey(m, holder)) !== undefined) live = this.ctx.mutator.mutate(tx, m, [{ field: holder, value: null, version }]).live || live
      else live = isLive(tx, m) || live
    }
    return live
  }

  /**
   * This node's byte cache now keeps the bytes of the record at `addr` (a
   * whole transfer it checked): in one transaction, the node-local row
   * `meta-core:cached/<rid>` and, when no member carries it yet, this node's
   * `holders/<holderId>` member, so peers can fetch the bytes here. The row
   * is what keeps the member while the cache keeps the bytes: releaseCopy
   * (a library copy going) leaves the member to it. Returns the root, or
   * undefined when `addr` is no record (nothing is written).
   */
  async holdCachedCopy (addr: string, holderId: string): Promise<RecordId | undefined> {
    checkAddress(addr)
    const holder = `holders/${holderId}`
    validateFieldPath(holder)
    return await this.ctx.write((tx): RecordId | undefined => {
      const rid = this.reads.resolveRoot(addr, tx)
      if (rid === undefined) return undefined
      tx.put(CACHED + rid, '')
      const members = membersOf(tx, rid)
      if (!members.some(m => tx.get(fieldKey(m, holder)) !== undefined)) {
        this.ctx.mutator.mutate(tx, rid, [{ field: holder, value: 'true', version: issueVersion(this.ctx, tx) }])
      }
      return rid
    })
  }

  /**
   * The cache let the bytes of root `rid` go (evicted, removed, or the cache
   * is gone): its `meta-core:cached/` row goes and, unless a library copy of the
   * record remains on this node (a `loc:` or `dup:` row: the watcher's, which
   * then keeps the member), this node's holder member is released exactly as
   * releaseCopy releases a last library copy.
   */
  async releaseCachedCopy (rid: string, holderId: string): Promise<CachedCopyResult> {
    const holder = `holders/${holderId}`
    validateFieldPath(holder)
    if (!isRecordId(rid)) return { kind: 'not-found' }
    return await this.ctx.write((tx): CachedCopyResult => {
      const canon = this.reads.resolveRoot(rid, tx)
      const members = canon === undefined ? [rid] : [...new Set([rid, ...membersOf(tx, canon)])]
      const held = members.filter(m => tx.get(CACHED + m) !== undefined)
      for (const m of held) tx.delete(CACHED + m)
      // A member the cache never added is not its to release.
      if (canon === undefined || held.length === 0) return { kind: 'not-found' }
      if (members.some(m => tx.get(LOC + m) !== undefined || readDuplicates(tx, m).length > 0)) return { kind: 'kept', rid: canon }
      return { kind: this.releaseHolderTx(tx, members, holder) ? 'released' : 'deleted', rid: canon }
    })
  }

  /** Roots with a `meta-core:cached/` row: what this node's cache said it keeps. */
  cachedCopies (): RecordId[] {
    return this.ctx.kv.keys(CACHED, prefixEnd(CACHED)).map(k => k.slice(CACHED.length) as RecordId)
  }

  /** Records another path on this node's disk with the same content. */
  async addDuplicatePath (addr: string, path: string): Promise<RecordId> {
    validateValue(path)
    if (path.length === 0) throw new InvalidValueError('path is empty')
    checkAddress(addr)
    return await this.ctx.write(tx => {
      const rid = this.reads.resolveRoot(addr, tx)
      if (rid === undefined) throw new UnknownRecordError(addr)
      for (const m of membersOf(tx, rid)) if (ownPath(tx, m) === path) return rid
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
    checkAddress(addr)
    return await this.ctx.write((tx): RemovePathResult => {
      const rid = this.reads.resolveRoot(addr, tx)
      return rid === undefined ? { kind: 'not-found' } : this.removePathTx(tx, rid, path)
    })
  }

  /**
   * Takes `path` out of the record: a duplicate row, or the `filePath`, which
   * a copy replaces when there is one (see releaseCopy for the order); the
   * promoted copy's size and mtime come from `copies` when it is there.
   * Without `copies`, the first duplicate row in path order.
   */
  private removePathTx (tx: Tx, rid: RecordId, path: string, copies: readonly LocalCopy[] = []): RemovePathResult {
    const members = membersOf(tx, rid)
    for (const m of members) {
      if (tx.get(`${DUP}${m}/${path}`) !== undefined) {
        tx.delete(`${DUP}${m}/${path}`)
        return { kind: 'duplicate-removed', rid }
      }
    }
    for (const m of members) {
      if (ownPath(tx, m) !== path) continue
      const known = new Map(copies.map(c => [c.path, c]))
      const dups = members.flatMap(x => readDuplicates(tx, x).map(p => [x, p] as const)).sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
      const row = dups.find(([, p]) => known.has(p)) ?? (copies.length === 0 ? dups[0] : undefined)
      let promoted: string
      if (row !== undefined) {
        tx.delete(`${DUP}${row[0]}/${row[1]}`)
        promoted = row[1]
      } else if (copies.length > 0) {
        promoted = copies[0].path
      } else {
        return { kind: 'last-copy', rid }
      }
      const version = issueVersion(this.ctx, tx)
      const changes: FieldChange[] = [{ field: 'filePath', value: promoted, version }]
      const c = known.get(promoted)
      if (c?.sizeByte !== undefined && c.mtimeNano !== undefined) {
        changes.push({ field: 'sizeByte', value: c.sizeByte, version }, { field: 'mtimeNano', value: c.mtimeNano, version })
      }
      this.ctx.mutator.mutate(tx, m, changes)
      return { kind: 'promoted', rid, promoted }
    }
    return { kind: 'not-found' }
  }

  /** `path` is one of the record's duplicate paths on this node. */
  isDuplicatePath (addr: string, path: string): boolean {
    const kv = this.ctx.kv
    return kv.read(() => {
      const rid = this.reads.resolveRoot(addr)
      return rid !== undefined && membersOf(kv, rid).some(m => kv.get(`${DUP}${m}/${path}`) !== undefined)
    })
  }

  /**
   * Where this node holds the record's bytes, from its own knowledge only,
   * in order: each root's own location on this node (local-location.ts; the
   * canonical root first), then this node's duplicate paths. Never the
   * replicated filePath: that may be another node's path.
   */
  copyPaths (doc: RecordDocument): string[] {
    const out: string[] = []
    const add = (p: string | undefined): void => { if (p !== undefined && !out.includes(p)) out.push(p) }
    for (const m of doc.members) add(ownPath(this.ctx.kv, m))
    for (const d of doc.duplicates) add(d)
    return out
  }

  /** This node's own location of the record at `addr` (its filePath, size and mtime here), or undefined when it has none. */
  ownLocation (addr: string): Location | undefined {
    const kv = this.ctx.kv
    return kv.read(() => {
      const rid = this.reads.resolveRoot(addr)
      return rid === undefined ? undefined : groupLocation(kv, membersOf(kv, rid))
    })
  }

  /** The CIDs one root (not its group) holds as `cids/` members. */
  rootCids (rid: RecordId): string[] {
    return readCids(this.ctx.kv, rid)
  }

  /** Roots carrying filePath, sizeByte and mtimeNano (the watcher's boot hydration, `/api/files/tuples`). */
  * iterateFileTuples (): IterableIterator<FileTuple> {
    const kv = this.ctx.kv
    for (const rid of this.reads.iterateRoots()) {
      for (const m of membersOf(kv, rid)) {
        const t = this.tupleOf(m)
        if (t !== undefined) yield t
      }
    }
  }

  /**
   * File tuples of the roots that hold `field` (this node's `holders/<id>`,
   * the watcher's boot hydration), without walking every record: a
   * `holders/` field is found through the partial index `kv_holders`
   * (layout.ts); another field by a scan of the `file:` range (same answer,
   * slower).
   */
  fileTuplesWithField (field: string): FileTuple[] {
    const kv = this.ctx.kv
    const holders = field.startsWith(HOLDERS_PREFIX)
    const st = holders
      ? (this.holderStmt ??= kv.prepare(`SELECT k FROM kv WHERE ${HOLDERS_INDEX_WHERE} AND ${FIELD_OF_FILE_KEY} = ?`).pluck())
      : (this.fieldStmt ??= kv.prepare(`SELECT k FROM kv WHERE k >= 'file:' AND k < 'file;' AND ${FIELD_OF_FILE_KEY} = ?`).pluck())
    return kv.read(() => {
      const out: FileTuple[] = []
      for (const k of st.all(field) as string[]) {
        const t = this.tupleOf(k.slice(5, k.indexOf('/', 5)) as RecordId)
        if (t !== undefined) out.push(t)
      }
      return out
    })
  }

  /** The root's location as this node shows it: its own, else the replicated one. */
  private tupleOf (rid: RecordId): FileTuple | undefined {
    const kv = this.ctx.kv
    const loc = readLocation(kv, rid)
    const filePath = loc?.filePath ?? kv.get(fieldKey(rid, 'filePath'))
    const sizeByte = loc?.sizeByte ?? kv.get(fieldKey(rid, 'sizeByte'))
    const mtimeNano = loc?.mtimeNano ?? kv.get(fieldKey(rid, 'mtimeNano'))
    return filePath !== undefined && sizeByte !== undefined && mtimeNano !== undefined ? { rid, filePath, sizeByte, mtimeNano } : undefined
  }

  /**
   * Drops every node-local path row (duplicates, locations, cache rows): for a store
   * copied from another node, whose rows name that node's disk. The
   * replicated fields are left as they are.
   */
  async forgetLocalPaths (): Promise<number> {
    const keys = [...this.ctx.kv.keys(DUP, prefixEnd(DUP)), ...this.ctx.kv.keys(LOC, prefixEnd(LOC)), ...this.ctx.kv.keys(CACHED, prefixEnd(CACHED))]
    await this.ctx.write(tx => { for (const k of keys) tx.delete(k) })
    return keys.length
  }

  /**
   * Once per store: a store written before location rows existed kept this
   * node's paths in the replicated fields only. Each record this node holds
   * (`holders/<holderId>`) with no location row takes those as its own.
   * Returns how many rows it wrote.
   */
  async backfillLocations (holderId: string): Promise<number> {
    const kv = this.ctx.kv
    if (kv.get(LOCATIONS_DONE_KEY) !== undefined) return 0
    const tuples = this.fileTuplesWithField(`${HOLDERS_PREFIX}${holderId}`)
    let n = 0
    for (let i = 0; i === 0 || i < tuples.length; i += BACKFILL_CHUNK) {
      const chunk = tuples.slice(i, i + BACKFILL_CHUNK)
      n += await this.ctx.write(tx => {
        let wrote = 0
        for (const t of chunk) {
          if (tx.get(LOC + t.rid) !== undefined) continue
          tx.put(LOC + t.rid, JSON.stringify({ filePath: t.filePath, sizeByte: t.sizeByte, mtimeNano: t.mtimeNano }))
          wrote++
        }
        if (i + BACKFILL_CHUNK >= tuples.length) tx.put(LOCATIONS_DONE_KEY, '1')
        return wrote
      })
    }
    return n
  }

  /** Every duplicate path on this node, as [rid, path]. */
  * iterateDuplicates (): IterableIterator<[RecordId, string]> {
    for (const [k] of this.ctx.kv.iterate(DUP, prefixEnd(DUP))) {
      const slash = k.indexOf('/', DUP.length)
      yield [k.slice(DUP.length, slash) as RecordId, k.slice(slash + 1)]
    }
  }
}

/** The path this node holds root `rid`'s bytes at as its filePath (its own location), if any. */
function ownPath (r: Pick<Reader, 'get'>, rid: string): string | undefined {
  return readLocation(r, rid)?.filePath
}

function checkCopy (c: LocalCopy): void {
  validateValue(c.path)
  if (c.path.length === 0) throw new InvalidValueError('path is empty')
  if (c.sizeByte !== undefined && !/^\d{1,20}$/.test(c.sizeByte)) throw new InvalidValueError('sizeByte must be a decimal integer')
  if (c.mtimeNano !== undefined && !/^\d{1,30}$/.test(c.mtimeNano)) throw new InvalidValueError('mtimeNano must be a decimal integer')
}
