/**
 * The `ReplicaStore` the mesh core replicates, over the record layer.
 *
 * The change log is the record layer's (`records.changesSince`,
 * `records.onChanges`, `records.exportRange`): every committed change of a
 * `file:` key, remote applies and root tombstones included, and a no-op
 * apply appends nothing. A page answers each key once with its current value
 * and version; a key whose own version was dropped under a root tombstone is
 * answered by that root tombstone (`file:<rid>`).
 *
 * Gap: retention removed entries after the cursor, or the cursor is ahead of
 * the head (this log never issued it). Tombstones are not compacted yet, so
 * there is no tombstone horizon; when compaction comes, a cursor older than
 * the horizon must answer `gap` here too.
 *
 * Node-local bookkeeping lives under `mesh:` (never replicated, refused by
 * the raw kv routes).
 */
import { createHash, randomBytes } from 'node:crypto'
import { prefixEnd, type KvStore, type SqlStatement } from '../kv/index.js'
import {
  checkRemoteEntry, META_EVENTS, VER, VersionMap, type CommittedChange, type RecordStore, type RemoteEntry
} from '../records/index.js'
import type { ChangePage, Cursor, RangePage, ReplicaStore, StoreDigest } from './protocol/index.js'

const LOG_ID_KEY = 'mesh:log-id'
/** Roots whose rows the digest has SQLite concatenate at once: big strings, but never the whole store in one. */
const DIGEST_ROOTS = 500
const EMPTY_LOG_HEAD = '0-0'

export interface RecordReplicaOptions {
  /** A fresh log id for a store that has none (injectable for deterministic runs). */
  newLogId?: () => string
}

export class RecordReplica implements ReplicaStore {
  private readonly kv: KvStore
  private readonly id: string
  private digestStmt: SqlStatement | undefined
  private countStmt: SqlStatement | undefined

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
    const page = this.records.changesSince(cursor ?? undefined, opts)
    return { changes: page.changes, next: page.next ?? cursor, head: page.head ?? EMPTY_LOG_HEAD, gap: page.gap }
  }

  exportRange (after: string | null, opts: { maxBytes: number }): RangePage {
    const page = this.records.exportRange(after ?? undefined, { limit: Infinity, maxBytes: opts.maxBytes })
    return { entries: page.entries, next: page.next ?? null }
  }

  /**
   * The entries that win over what the store holds, by root, read in one
   * snapshot outside any write. Most of an anti-entropy page is already
   * known (it came by push, or from another peer): those entries never
   * reach the write path. A version never goes back, so an entry that does
   * not win now cannot win when the write runs.
   */
  private winners (entries: readonly RemoteEntry[]): Map<string, RemoteEntry[]> {
    return this.kv.read(() => {
      const maps = new Map<string, VersionMap>()
      const byRoot = new Map<string, RemoteEntry[]>()
      for (const e of entries) {
        const slash = e.key.indexOf('/', 5)
        const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
        let vm = maps.get(rid)
        if (vm === undefined) {
          vm = VersionMap.parse(this.kv.get(VER + rid))
          maps.set(rid, vm)
        }
        const v = e.hlc + e.origin
        const wins = slash < 0 ? vm.root === undefined || v > vm.root : vm.wins(e.key.slice(slash + 1), v)
        if (!wins) continue
        const list = byRoot.get(rid)
        if (list === undefined) byRoot.set(rid, [e])
        else list.push(e)
      }
      return byRoot
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

  /**
   * One `applyRemote` per root, all issued in the same turn of the event
   * loop, so kv's group commit runs them in one transaction (a page holds a
   * few hundred roots, under the 2,000 write functions a group commit
   * takes). Not one `applyRemote` for the whole page: a single write
   * function of hundreds of records runs about ten times slower per record
   * with search's field index than the same rows in per-record write
   * functions (SQLite savepoint cost; measured in bench/mesh.ts's resync).
   */
  async apply (entries: readonly RemoteEntry[]): Promise<{ applied: number, refused: number }> {
    const byRoot = this.winners(entries)
    if (byRoot.size === 0) return { applied: 0, refused: 0 }
    const results = await Promise.allSettled([...byRoot.values()].map(async (list) => await this.records.applyRemote(list)))
    let applied = 0
    let refused = 0
    for (const r of results) {
      if (r.status === 'rejected') throw r.reason
      applied += r.value.applied
      refused += r.value.refused
    }
    return { applied, refused }
  }

  onChanges (listener: (changes: readonly RemoteEntry[]) => void): () => void {
    return this.records.onChanges((committed) => { listener(withoutShadowed(committed)) })
  }

  /**
   * SHA-256 over every `file:` row and every `ver:` row, in key order, each
   * row written `<length>:<key><length>:<value>` (unambiguous whatever the
   * values hold). The version maps are stored canonically (sorted), so two
   * stores hold the same rows exactly when they hold the same keys, values,
   * tombstones and versions; `cid:`, `idx:` and `dup:` rows are derived or
   * local and left out. SQLite concatenates the rows of a few hundred roots
   * at a time, so JavaScript never makes a string per row: about 0.4 s for
   * 20,000 records of 40 fields.
   */
  digest (): StoreDigest {
    this.digestStmt ??= this.kv.prepare(
      "SELECT group_concat(length(k) || ':' || k || length(v) || ':' || v, '') FROM (SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k)").pluck()
    this.countStmt ??= this.kv.prepare(
      `SELECT coalesce(sum((SELECT coalesce(sum(json_array_length(value)), 0) FROM json_each(v, '$.g')) + (json_extract(v, '$.r') IS NOT NULL)), 0)
       FROM kv WHERE k >= '${VER}' AND k < '${prefixEnd(VER)}'`).pluck()
    const concat = this.digestStmt
    const count = this.countStmt
    return this.kv.read(() => {
      const h = createHash('sha256')
      const roots = this.kv.keys(VER, prefixEnd(VER))
      let lo = 'file:'
      for (let i = DIGEST_ROOTS; ; i += DIGEST_ROOTS) {
        const hi = i < roots.length ? 'file:' + roots[i].slice(VER.length) : prefixEnd('file:')
        h.update((concat.get(lo, hi) as string | null) ?? '')
        if (i >= roots.length) break
        lo = hi
      }
      h.update('\u0001')
      for (let i = 0; i < roots.length; i += DIGEST_ROOTS) {
        const hi = i + DIGEST_ROOTS < roots.length ? roots[i + DIGEST_ROOTS] : prefixEnd(VER)
        h.update((concat.get(roots[i], hi) as string | null) ?? '')
      }
      return { digest: h.digest('hex'), keys: count.get() as number }
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
 * The committed changes as entries, without the per-key tombstones a root
 * tombstone of the same commit already implies (DeleteRoot logs one per
 * removed key): a peer applying the root tombstone drops those keys anyway.
 */
function withoutShadowed (committed: readonly CommittedChange[]): RemoteEntry[] {
  const roots = new Map<string, string>()
  for (const c of committed) if (c.value === null && c.key.indexOf('/', 5) < 0) roots.set(c.key, c.hlc + c.origin)
  const out: RemoteEntry[] = []
  for (const { key, value, hlc, origin } of committed) {
    if (value === null && roots.size > 0) {
      const slash = key.indexOf('/', 5)
      if (slash > 0 && roots.get(key.slice(0, slash)) === hlc + origin) continue
    }
    out.push({ key, value, hlc, origin })
  }
  return out
}
