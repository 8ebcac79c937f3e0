/**
 * What peers read from this node: the change log read back as each changed
 * key's current state (`changesSince`), and the whole replicated range for a
 * full resync (`exportRange`). Both read one snapshot and answer entries in
 * the shape `applyRemote` takes, so a page applied on a peer is a merge.
 *
 * A field key whose own version was dropped under a root tombstone (DeleteRoot
 * raised the root above it) is answered by that root tombstone, `file:<rid>`:
 * that is what `ver:` holds for it, and it is what makes the peer shadow the
 * key too. The root tombstone's row always follows the rows of the keys it
 * shadows in the log, so a reader never needs a row it has already passed.
 */
import {
  compareEventIds, parseEventId, prefixEnd, type EventId, type EventIdParts, type KvStore
} from '../kv/index.js'
import { META_EVENTS, decodeChange, type ChangeLogEntry } from './change-log.js'
import { FILE, VER, readFieldsObject, type Reader } from './layout.js'
import type { RecordId } from './record-id.js'
import type { RemoteEntry } from './remote-entry.js'
import { VersionMap, versionHlc, versionOrigin } from './versions.js'

/** A page of `changesSince`. */
export interface ChangePage {
  /** Each key changed in the page once, with its current value (null: tombstone) and current version. */
  changes: RemoteEntry[]
  /** The last change-log id consumed: the cursor for the next call (the given cursor when nothing was read). */
  next: EventId | undefined
  /** The change log's head when the page was read (undefined: the log never had an entry). */
  head: EventId | undefined
  /**
   * Changes after the cursor are no longer all in the log (a trim or clear
   * removed some), or the cursor is ahead of the head (this log never issued
   * it): the reader must resync with `exportRange`. A gap page has no changes.
   */
  gap: boolean
}

/** A page of `exportRange`. */
export interface ExportPage {
  /** Replicated entries in key order: live keys, tombstones and root tombstones, with versions. */
  entries: RemoteEntry[]
  /** The last key in the page, to pass as `after`; undefined once the range is exhausted. */
  next: string | undefined
  /** The change log's head, read in the same snapshot: after a full resync, pull `changesSince` from the first page's head. */
  head: EventId | undefined
}

export interface PageOptions {
  /** Most entries in the page (changesSince: changed keys; exportRange: entries). */
  limit: number
  /** Stop adding to the page once its entries pass this many bytes (`entryBytes`); a page always holds at least one. */
  maxBytes?: number
}

/** Change-log rows examined per call at most: a log of one hot key changed again and again must not make a page unbounded work. */
const MAX_ROWS_PER_PAGE = 50_000
const ROWS_CHUNK = 1_000
/**
 * Roots a range export reads at a time (their `ver:` rows with one range
 * read, their `file:` rows with another): few enough that a page ending
 * within them (a 1 MiB page holds about 140 records of 40 fields) reads
 * little it does not send, many enough that the reads cost what their rows
 * do. One point read and one range read per root took twice as long.
 */
const EXPORT_ROOTS = 32
const ZERO: EventIdParts = { ms: 0, seq: 0 }

/** Approximate JSON size of an entry on the wire (punctuation and field names included), for page bounds. */
function entryBytes (e: RemoteEntry): number {
  return 48 + Buffer.byteLength(e.key) + (e.value === null ? 4 : Buffer.byteLength(e.value)) + e.hlc.length + e.origin.length
}

/** The replicated state of one root in key order: its root tombstone first, then live keys and tombstones with their versions. */
export function rootEntries (r: Reader, rid: string): RemoteEntry[] {
  const fields = readFieldsObject(r, rid)
  return entriesOfRoot(rid, r.get(VER + rid), f => (Object.hasOwn(fields, f) ? fields[f] : undefined))
}

/** rootEntries without the values (each null), from the root's version map alone: what a reconciliation compares. */
export function rootVersions (r: Pick<Reader, 'get'>, rid: string): RemoteEntry[] {
  return entriesOfRoot(rid, r.get(VER + rid), () => undefined)
}

/** rootEntries from rows already read: the root's `ver:` value and its live fields' values by name. */
function entriesOfRoot (rid: string, ver: string | undefined, valueOf: (field: string) => string | undefined): RemoteEntry[] {
  const vm = VersionMap.parse(ver)
  const out: RemoteEntry[] = []
  if (vm.root !== undefined) out.push({ key: `file:${rid}`, value: null, hlc: versionHlc(vm.root), origin: versionOrigin(vm.root) })
  const prefix = `file:${rid}/`
  // A record written in one go has one version: its clock and origin strings are cut once and shared.
  let version: string | undefined
  let hlc = ''
  let origin = ''
  for (const f of [...vm.fields.keys()].sort()) {
    const v = vm.fields.get(f)!
    if (v !== version) {
      version = v
      hlc = versionHlc(v)
      origin = versionOrigin(v)
    }
    out.push({ key: prefix + f, value: valueOf(f) ?? null, hlc, origin })
  }
  return out
}

/** The live fields of the roots from `first` to `last` (record ids, in key order), by root, with one range read. */
function fileRowsByRoot (r: Reader, first: string, last: string): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>()
  let rid = ''
  let fields = new Map<string, string>()
  for (const [k, v] of r.range(`${FILE}${first}/`, `${FILE}${last}0`)) {
    const slash = k.indexOf('/', FILE.length)
    if (slash < 0) continue
    // Rows come grouped by root: a new root starts where the key's root part changes.
    if (slash !== FILE.length + rid.length || !k.startsWith(rid, FILE.length)) {
      rid = k.slice(FILE.length, slash)
      fields = out.get(rid) ?? new Map<string, string>()
      out.set(rid, fields)
    }
    fields.set(k.slice(slash + 1), v)
  }
  return out
}

export function changesSince (kv: KvStore, cursor: string | undefined, opts: PageOptions): ChangePage {
  const limit = Math.max(1, Math.floor(opts.limit))
  const maxBytes = opts.maxBytes ?? Infinity
  return kv.read(() => {
    const head = kv.streamHead(META_EVENTS)
    const low = kv.streamTrimmedThrough(META_EVENTS)
    let after = cursor === undefined ? undefined : parseEventId(cursor)
    let next = cursor === undefined ? undefined : (cursor as EventId)
    const from = after ?? ZERO
    const lost = low !== undefined && compareEventIds(from, parseEventId(low)) < 0
    const neverIssued = compareEventIds(from, head === undefined ? ZERO : parseEventId(head)) > 0
    if (lost || neverIssued) return { changes: [], next, head, gap: true }
    const current = new CurrentState(kv)
    const changes: RemoteEntry[] = []
    let bytes = 0
    let scanned = 0
    for (;;) {
      const rows = kv.readStream(META_EVENTS, after, ROWS_CHUNK)
      if (rows.length === 0) break
      for (const row of rows) {
        if (changes.length >= limit || scanned >= MAX_ROWS_PER_PAGE) return { changes, next, head, gap: false }
        const c = decodeChange(row)
        const e = c === undefined ? undefined : current.take(c.key)
        if (e !== undefined) {
          const size = entryBytes(e)
          // Full: stop before this row, so the next call starts with it.
          if (changes.length > 0 && bytes + size > maxBytes) return { changes, next, head, gap: false }
          changes.push(e)
          bytes += size
        }
        scanned++
        next = row.id
      }
      after = parseEventId(rows[rows.length - 1].id)
    }
    return { changes, next, head, gap: false }
  })
}

export function readChangeLog (kv: KvStore, after: string | undefined, limit: number): ChangeLogEntry[] {
  const out: ChangeLogEntry[] = []
  for (const row of kv.readStream(META_EVENTS, after === undefined ? undefined : parseEventId(after), limit)) {
    const c = decodeChange(row)
    if (c !== undefined) out.push(c)
  }
  return out
}

/**
 * The roots whose replicated keys changed after change-log id `after`, read
 * in one snapshot up to the head: how an indexer attached later catches up
 * on writes it did not see. Undefined when the log no longer reaches back to
 * `after` (trimmed or cleared since) or more than `limit` roots changed: the
 * indexer then rebuilds from the rows instead.
 */
export function changedRootsSince (kv: KvStore, after: string, limit: number): Set<RecordId> | undefined {
  return kv.read(() => {
    const roots = new Set<RecordId>()
    const head = kv.streamHead(META_EVENTS)
    const low = kv.streamTrimmedThrough(META_EVENTS)
    let from = parseEventId(after)
    if (low !== undefined && compareEventIds(from, parseEventId(low)) < 0) return undefined
    if (head === undefined || compareEventIds(from, parseEventId(head)) >= 0) return roots
    for (;;) {
      const rows = kv.readStream(META_EVENTS, from, ROWS_CHUNK)
      if (rows.length === 0) return roots
      for (const row of rows) {
        const c = decodeChange(row)
        if (c === undefined) continue
        const slash = c.key.indexOf('/', FILE.length)
        roots.add((slash < 0 ? c.key.slice(FILE.length) : c.key.slice(FILE.length, slash)) as RecordId)
        if (roots.size > limit) return undefined
      }
      from = parseEventId(rows[rows.length - 1].id)
    }
  })
}

/**
 * Every root that has a version map (fully tombstoned roots, known only by
 * their root tombstone, included), in key order after the key `after`.
 */
export function exportRange (kv: KvStore, after: string | undefined, opts: PageOptions): ExportPage {
  const limit = Math.max(1, Math.floor(opts.limit))
  const maxBytes = opts.maxBytes ?? Infinity
  return kv.read(() => {
    const head = kv.streamHead(META_EVENTS)
    const entries: RemoteEntry[] = []
    let bytes = 0
    // Continue within the root of the last key sent, then with the roots after it.
    let lo = VER
    if (after !== undefined) {
      const rest = after.startsWith('file:') ? after.slice(5) : after
      const slash = rest.indexOf('/')
      lo = VER + (slash < 0 ? rest : rest.slice(0, slash))
    }
    const hi = prefixEnd(VER)
    for (;;) {
      // A few dozen roots at a time, each class of rows with one range read: a query per root cost as much as its rows.
      const vers = kv.range(lo, hi, EXPORT_ROOTS)
      if (vers.length === 0) return { entries, next: undefined, head }
      const fieldsOf = fileRowsByRoot(kv, vers[0][0].slice(VER.length), vers[vers.length - 1][0].slice(VER.length))
      for (const [k, v] of vers) {
        const rid = k.slice(VER.length)
        const fields = fieldsOf.get(rid)
        for (const e of entriesOfRoot(rid, v, f => fields?.get(f))) {
          if (after !== undefined && e.key <= after) continue
          const size = entryBytes(e)
          if (entries.length >= limit || (entries.length > 0 && bytes + size > maxBytes)) {
            return { entries, next: entries[entries.length - 1].key, head }
          }
          entries.push(e)
          bytes += size
        }
      }
      lo = vers[vers.length - 1][0] + '\u0000'
    }
  })
}

/** Reads keys' current state for one page, each root's version map once, and answers each entry key once. */
class CurrentState {
  private readonly maps = new Map<string, VersionMap>()
  private readonly seen = new Set<string>()
  private readonly sent = new Set<string>()

  constructor (private readonly kv: KvStore) {}

  /** The entry answering for `key`, unless it was already taken in this page. */
  take (key: string): RemoteEntry | undefined {
    if (this.seen.has(key)) return undefined
    this.seen.add(key)
    const e = this.current(key)
    if (e === undefined || this.sent.has(e.key)) return undefined
    this.sent.add(e.key)
    return e
  }

  /** The key's value and version, the root tombstone when that shadows it, or undefined when it has no version. */
  private current (key: string): RemoteEntry | undefined {
    const slash = key.indexOf('/', 5)
    const rid = slash < 0 ? key.slice(5) : key.slice(5, slash)
    let vm = this.maps.get(rid)
    if (vm === undefined) {
      vm = VersionMap.parse(this.kv.get(VER + rid))
      this.maps.set(rid, vm)
    }
    const v = slash < 0 ? undefined : vm.fields.get(key.slice(slash + 1))
    if (v !== undefined) return { key, value: this.kv.get(key) ?? null, hlc: versionHlc(v), origin: versionOrigin(v) }
    if (vm.root !== undefined) return { key: `file:${rid}`, value: null, hlc: versionHlc(vm.root), origin: versionOrigin(vm.root) }
    return undefined
  }
}
