import { decodeCid, MH_MIDHASH256 } from '../cid/index.js'
import type { LocalTx, RecordId } from '../records/index.js'
import type { WatcherRecords } from './types.js'

/**
 * What this node's watcher last recorded for each library file, in memory
 * and in node-local rows `watch:f/<relPath>` = `<size>/<mtimeNs>/<midhash cid>`
 * (the record layer's local store).
 *
 * The rows are per node and never replicated (they are not under `file:`).
 * They are written in the same write function as the file's `file:events`
 * entry, so "the event was published" and "the row says so" never disagree.
 * They exist because the records alone cannot answer the boot question "did
 * this file change while we were down?": duplicate paths carry no size or
 * mtime, and `filePath`/`sizeByte`/`mtimeNano` are last-writer-wins fields a
 * peer may overwrite with its own copy's location.
 */
export const WATCH_STATE_PREFIX = 'watch:f/'

/** Where the library is mounted in stored `filePath` values (the original's container mount). */
export const FILES_MOUNT = '/files/'

export interface FileEntry {
  size: number
  /** Decimal ns, as stored in `mtimeNano`. */
  mtimeNs: string
  /** The midhash256 CID of the content last recorded at this path. */
  cid: string
  /**
   * Known from the records but never announced by this watcher (boot after a
   * crash between a record write and its event, or after a reset): the next
   * sight of the file hashes it again and announces it as `add`.
   */
  fresh: boolean
}

export interface HydrateResult {
  fromRows: number
  fromRecords: number
}

export class FileState {
  private readonly entries = new Map<string, FileEntry>()
  /** Known paths holding each content: the other local copies a removal hands to the record layer. */
  private readonly byCid = new Map<string, Set<string>>()
  /** Known files below each folder: tells a vanished folder from a vanished unknown file without a full pass. */
  private readonly dirCounts = new Map<string, number>()

  get size (): number {
    return this.entries.size
  }

  get (rel: string): FileEntry | undefined {
    return this.entries.get(rel)
  }

  set (rel: string, e: FileEntry): void {
    const old = this.entries.get(rel)
    if (old !== undefined) this.unlink(old.cid, rel)
    else this.countDirs(rel, 1)
    this.entries.set(rel, e)
    let set = this.byCid.get(e.cid)
    if (set === undefined) { set = new Set(); this.byCid.set(e.cid, set) }
    set.add(rel)
  }

  delete (rel: string): void {
    const old = this.entries.get(rel)
    if (old === undefined) return
    this.entries.delete(rel)
    this.unlink(old.cid, rel)
    this.countDirs(rel, -1)
  }

  /** Known files at or below `dir` (a folder path; `''` is everything). */
  pathsUnder (dir: string): string[] {
    if (dir !== '' && !this.dirCounts.has(dir)) return []
    const out: string[] = []
    const p = dir + '/'
    for (const rel of this.entries.keys()) if (dir === '' || rel.startsWith(p)) out.push(rel)
    return out
  }

  /** How many known paths hold this content. */
  copiesOf (cid: string): number {
    return this.byCid.get(cid)?.size ?? 0
  }

  /** The known paths holding this content. */
  pathsOf (cid: string): string[] {
    const set = this.byCid.get(cid)
    return set === undefined ? [] : [...set]
  }

  paths (): IterableIterator<string> {
    return this.entries.keys()
  }

  /** Every entry becomes fresh (reset): the next scan hashes and announces every file again. */
  markAllFresh (): void {
    for (const e of this.entries.values()) e.fresh = true
  }

  clear (): void {
    this.entries.clear()
    this.byCid.clear()
    this.dirCounts.clear()
  }

  private unlink (cid: string, rel: string): void {
    const set = this.byCid.get(cid)
    if (set === undefined) return
    set.delete(rel)
    if (set.size === 0) this.byCid.delete(cid)
  }

  private count (m: Map<string, number>, k: string, d: number): void {
    const n = (m.get(k) ?? 0) + d
    if (n <= 0) m.delete(k)
    else m.set(k, n)
  }

  private countDirs (rel: string, d: number): void {
    for (let i = rel.indexOf('/'); i >= 0; i = rel.indexOf('/', i + 1)) this.count(this.dirCounts, rel.slice(0, i), d)
  }

  static putRow (tx: LocalTx, rel: string, e: FileEntry): void {
    tx.put(WATCH_STATE_PREFIX + rel, `${e.size}/${e.mtimeNs}/${e.cid}`)
  }

  static deleteRow (tx: LocalTx, rel: string): void {
    tx.delete(WATCH_STATE_PREFIX + rel)
  }

  /** Deletes every row (reset), in the caller's transaction. */
  static clearRows (tx: LocalTx): void {
    tx.deletePrefix(WATCH_STATE_PREFIX)
  }

  /**
   * Loads the rows, then adds as fresh the paths the records name on this
   * node that have no row: `dup:` paths (always local), and `filePath`s under
   * /files/ of roots carrying this node's holder member whose content no row
   * holds (a mint that committed without its event). The second rule leaves
   * out a `filePath` a peer wrote for content we hold elsewhere, or hold only
   * in the byte cache, which would otherwise be announced deleted on every
   * boot.
   */
  hydrate (records: WatcherRecords, holderId: string): HydrateResult {
    this.clear()
    let fromRows = 0
    for (const [k, v] of records.local.entries(WATCH_STATE_PREFIX)) {
      const e = decodeRow(v)
      if (e === undefined) continue // a row this version cannot read: the file is simply re-hashed
      this.set(k.slice(WATCH_STATE_PREFIX.length), e)
      fromRows++
    }
    const found: Array<[string, string]> = []
    // iterateDuplicates reads a live statement: collect the paths first, read their records after.
    const dups: Array<[RecordId, string]> = []
    for (const [rid, p] of records.iterateDuplicates()) {
      if (!p.startsWith(FILES_MOUNT)) continue
      const rel = p.slice(FILES_MOUNT.length)
      if (!this.entries.has(rel)) dups.push([rid, rel])
    }
    for (const [rid, rel] of dups) {
      const cid = midhashOf(records, rid)
      if (cid !== undefined) found.push([rel, cid])
    }
    // Only records this node holds can name a path of ours: found through the field index, not a walk of every record.
    // A record held through the byte cache alone (a `meta-core:cached/` row, no location here) names a peer's path, not ours.
    const cached = new Set<string>(records.cachedCopies())
    for (const t of records.fileTuplesWithField(`holders/${holderId}`)) {
      if (!t.filePath.startsWith(FILES_MOUNT)) continue
      if (cached.has(t.rid) && records.ownLocation(t.rid)?.filePath !== t.filePath) continue
      const rel = t.filePath.slice(FILES_MOUNT.length)
      if (this.entries.has(rel)) continue
      const cid = midhashOf(records, t.rid)
      if (cid === undefined || this.copiesOf(cid) > 0) continue
      found.push([rel, cid])
    }
    let fromRecords = 0
    for (const [rel, cid] of found) {
      if (this.entries.has(rel)) continue
      this.set(rel, { size: -1, mtimeNs: '', cid, fresh: true })
      fromRecords++
    }
    return { fromRows, fromRecords }
  }
}

/**
 * What this node's watcher last recorded for the library file `rel` (its
 * size, mtime and midhash when it was hashed), from its node-local row;
 * undefined when it recorded nothing there. For the byte protocol's serving
 * side: a file is served as a CID only while it is unchanged since then.
 */
export function recordedFile (local: { get: (key: string) => string | undefined }, rel: string): { size: number, mtimeNs: string, cid: string } | undefined {
  const v = local.get(WATCH_STATE_PREFIX + rel)
  const e = v === undefined ? undefined : decodeRow(v)
  return e === undefined ? undefined : { size: e.size, mtimeNs: e.mtimeNs, cid: e.cid }
}

function decodeRow (v: string): FileEntry | undefined {
  const a = v.indexOf('/')
  const b = v.indexOf('/', a + 1)
  if (a < 0 || b < 0) return undefined
  const size = Number(v.slice(0, a))
  const mtimeNs = v.slice(a + 1, b)
  const cid = v.slice(b + 1)
  if (!Number.isSafeInteger(size) || size < 0 || !/^\d+$/.test(mtimeNs) || !isMidhash(cid)) return undefined
  return { size, mtimeNs, cid, fresh: false }
}

export function isMidhash (cid: string): boolean {
  return decodeCid(cid)?.mhCode === MH_MIDHASH256
}

/** The midhash member of one root (not its group), if it has one. */
function midhashOf (records: WatcherRecords, rid: RecordId): string | undefined {
  return records.rootCids(rid).find(isMidhash)
}
