/**
 * The `ReplicaStore` the mesh core replicates, over the record layer.
 *
 * The change log is the store's `meta:events` stream: every committed
 * change of a `file:` key appends an entry there, remote applies included,
 * and a no-op apply appends nothing. A page of changes reads the entries
 * after the cursor and answers each key once with its current value and
 * version from `ver:<rid>`; a key whose own version was dropped under a root
 * tombstone is answered by that root tombstone (`file:<rid>`).
 *
 * Gap: a cursor before the oldest retained entry (the stream was trimmed
 * past it, or the log is younger than the cursor's), or after the head (a
 * cursor this log never issued). Tombstones are not compacted yet, so there
 * is no tombstone horizon; when compaction comes, a cursor older than the
 * horizon must answer `gap` here too.
 *
 * Node-local bookkeeping lives under `mesh:` (never replicated, refused by
 * the raw kv routes).
 */
import { createHash, randomBytes } from 'node:crypto'
import { compareEventIds, META_EVENTS, parseEventId, prefixEnd, type KvStore } from '../kv/index.js'
import {
  checkRemoteEntry, VersionMap, versionHlc, versionOrigin, type RecordId, type RecordStore, type RemoteEntry
} from '../records/index.js'
import { entryWeight } from './messages.js'
import type { ChangePage, Cursor, RangePage, ReplicaStore, StoreDigest } from './protocol/index.js'

const LOG_ID_KEY = 'mesh:log-id'
const EMPTY_LOG_HEAD = '0-0'
/** Change-log entries examined per page at most: a log of one hot key repeated must not make a page unbounded work. */
const MAX_EVENTS_PER_PAGE = 50_000
const EVENTS_CHUNK = 1_000
const ROOTS_CHUNK = 256

export interface RecordReplicaOptions {
  /** A fresh log id for a store that has none (injectable for deterministic runs). */
  newLogId?: () => string
}

export class RecordReplica implements ReplicaStore {
  private readonly kv: KvStore
  private readonly id: string

  constructor (private readonly records: RecordStore, opts: RecordReplicaOptions = {}) {
    this.kv = records.kv
    let id = this.kv.get(LOG_ID_KEY)
    if (id === undefined) {
      id = (opts.newLogId ?? (() => randomBytes(8).toString('hex')))()
      const fresh = id
      this.kv.writeSync(tx => { tx.put(LOG_ID_KEY, fresh) })
    }
    this.id = id
  }

  logId (): string {
    return this.id
  }

  /**
   * The last id of the log; `0-0` for a log that never had an entry, so a
   * peer that synced with an empty log still holds a cursor (and a trim
   * before its next pull shows as a gap).
   */
  head (): Cursor {
    return this.kv.streamHead(META_EVENTS) ?? EMPTY_LOG_HEAD
  }

  changesSince (cursor: Cursor | null, opts: { limit: number, maxBytes: number }): ChangePage {
    return this.kv.read(() => {
      const head = this.head()
      if (cursor !== null) {
        const c = parseEventId(cursor)
        const first = this.kv.streamFirst(META_EVENTS)
        const before = first !== undefined && compareEventIds(c, parseEventId(first)) < 0
        const after = compareEventIds(c, parseEventId(head)) > 0
        if (before || after) return { changes: [], next: cursor, head, gap: true }
      }
      const reader = new EntryReader(this.kv)
      const changes: RemoteEntry[] = []
      let bytes = 0
      let next = cursor
      let scanned = 0
      outer: for (;;) {
        const events = this.kv.readStream(META_EVENTS, next === null ? undefined : parseEventId(next), EVENTS_CHUNK)
        if (events.length === 0) break
        for (const ev of events) {
          if (changes.length >= opts.limit || (changes.length > 0 && bytes >= opts.maxBytes) || scanned >= MAX_EVENTS_PER_PAGE) break outer
          scanned++
          next = ev.id
          const e = reader.take(ev.fields.key)
          if (e === undefined) continue
          changes.push(e)
          bytes += entryWeight(e)
        }
      }
      return { changes, next, head, gap: false }
    })
  }

  exportRange (after: string | null, opts: { maxBytes: number }): RangePage {
    return this.kv.read(() => {
      const entries: RemoteEntry[] = []
      let bytes = 0
      // `after` is the last key sent: continue within its root, then with the next roots.
      let rid: string | undefined
      if (after !== null) {
        const rest = after.slice('file:'.length)
        const slash = rest.indexOf('/')
        rid = slash < 0 ? rest : rest.slice(0, slash)
      }
      let lo = rid === undefined ? 'ver:' : `ver:${rid}`
      const hi = prefixEnd('ver:')
      for (;;) {
        const ks = this.kv.keys(lo, hi, ROOTS_CHUNK)
        if (ks.length === 0) return { entries, next: null }
        for (const k of ks) {
          const root = this.records.exportRoot(k.slice(4) as RecordId).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
          for (const e of root) {
            if (after !== null && e.key <= after) continue
            if (entries.length > 0 && bytes + entryWeight(e) > opts.maxBytes) return { entries, next: entries[entries.length - 1].key }
            entries.push(e)
            bytes += entryWeight(e)
          }
        }
        lo = ks[ks.length - 1] + '\u0000'
      }
    })
  }

  checkEntry (e: RemoteEntry): string | undefined {
    try {
      checkRemoteEntry(e)
      return undefined
    } catch (err) {
      return (err as Error).message
    }
  }

  async apply (entries: readonly RemoteEntry[]): Promise<{ applied: number, refused: number }> {
    const r = await this.records.applyRemote(entries)
    return { applied: r.applied, refused: r.refused }
  }

  onChanges (listener: (changes: readonly RemoteEntry[]) => void): () => void {
    return this.kv.onCommit((events) => {
      const reader = new EntryReader(this.kv)
      const out: RemoteEntry[] = []
      for (const ev of events) {
        const e = ev.stream === META_EVENTS ? reader.take(ev.fields.key) : undefined
        if (e !== undefined) out.push(e)
      }
      if (out.length > 0) listener(out)
    })
  }

  /**
   * SHA-256 over every `file:` row and every `ver:` row, in key order. The
   * version maps are stored canonically (sorted), so two stores hold the
   * same rows exactly when they hold the same keys, values, tombstones and
   * versions; `cid:`, `idx:` and `dup:` rows are derived or local and left out.
   */
  digest (): StoreDigest {
    return this.kv.read(() => {
      const h = createHash('sha256')
      let keys = 0
      let buf = ''
      for (const prefix of ['file:', 'ver:']) {
        for (const [k, v] of this.kv.iterate(prefix, prefixEnd(prefix))) {
          buf += k + '\u0000' + v + '\u0000'
          if (buf.length > 65_536) { h.update(buf); buf = '' }
          if (prefix === 'ver:') {
            const vm = VersionMap.parse(v)
            keys += vm.fields.size + (vm.root === undefined ? 0 : 1)
          }
        }
        buf += '\u0001'
      }
      h.update(buf)
      return { digest: h.digest('hex'), keys }
    })
  }

  clock (): string {
    return this.records.hlc.last()
  }

  getLocal (key: string): string | undefined {
    return this.kv.get(key)
  }

  async setLocal (key: string, value: string | null): Promise<void> {
    await this.kv.write(tx => {
      if (value === null) tx.delete(key)
      else tx.put(key, value)
    })
  }
}

/**
 * Reads keys' current replicated state for one page or one commit, caching
 * each root's version map, and answers each key (and each root tombstone)
 * once.
 */
class EntryReader {
  private readonly maps = new Map<string, VersionMap>()
  private readonly seen = new Set<string>()
  private readonly sent = new Set<string>()

  constructor (private readonly kv: KvStore) {}

  /** The key's entry unless it (or the root tombstone answering for it) was already taken. */
  take (key: string | undefined): RemoteEntry | undefined {
    if (typeof key !== 'string' || this.seen.has(key)) return undefined
    this.seen.add(key)
    const e = this.current(key)
    if (e === undefined || this.sent.has(e.key)) return undefined
    this.sent.add(e.key)
    return e
  }

  /** The key's current entry (value or tombstone, version), its root tombstone when that shadows it, or undefined when unversioned. */
  private current (key: string): RemoteEntry | undefined {
    const rest = key.slice('file:'.length)
    const slash = rest.indexOf('/')
    if (slash < 0) return undefined
    const rid = rest.slice(0, slash)
    let vm = this.maps.get(rid)
    if (vm === undefined) {
      vm = VersionMap.parse(this.kv.get('ver:' + rid))
      this.maps.set(rid, vm)
    }
    const v = vm.fields.get(rest.slice(slash + 1))
    if (v !== undefined) return { key, value: this.kv.get(key) ?? null, hlc: versionHlc(v), origin: versionOrigin(v) }
    if (vm.root !== undefined) return { key: `file:${rid}`, value: null, hlc: versionHlc(vm.root), origin: versionOrigin(vm.root) }
    return undefined
  }
}
