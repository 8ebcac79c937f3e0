/**
 * RecordViews over the store for the indexed path, and the per-query
 * group bookkeeping. Every view hides the excluded fields, so matching never
 * sees them.
 */
import type { KvStore } from '../kv/index.js'
import { recordRows, type RecordReads } from '../records/index.js'
import type { FieldIndex, KvRow } from './field-index.js'
import { splitRecordKey } from './search-schema.js'
import { fold } from './fold.js'
import { EMPTY_HAY, buildHaystack, isStorableName, mapView, stripExcluded, type Excluder, type RecordView } from './matchers.js'

/**
 * Every root that is in a group, with its canonical root, held in memory:
 * groups are rare (the same content minted on two nodes), and a point read
 * per candidate row would cost more than the rest of a query. Dropped
 * whenever group membership may have changed (the record hook's
 * onGroupChanged, or roots written without search), reloaded on next use.
 */
export class GroupCache {
  private map: Map<string, string> | undefined

  constructor (private readonly kv: KvStore) {}

  invalidate (): void {
    this.map = undefined
  }

  /** The canonical root of a grouped root; undefined for a root in no group. */
  canonOf (rid: string): string | undefined {
    this.map ??= new Map(recordRows.groupedRoots(this.kv))
    return this.map.get(rid)
  }
}

/** Canonical roots of the candidates a query meets, and which of them are groups (those are always checked on the merged document). */
export class GroupResolver {
  readonly grouped = new Set<string>()

  constructor (private readonly kv: KvStore, private readonly cache: GroupCache) {}

  canon (rid: string): string {
    const c = this.cache.canonOf(rid)
    if (c === undefined) return rid
    this.grouped.add(c)
    return c
  }

  isLive (rid: string): boolean {
    return recordRows.isLive(this.kv, rid)
  }
}

export class ViewFactory {
  constructor (
    private readonly kv: KvStore,
    private readonly records: RecordReads,
    private readonly fields: FieldIndex,
    private readonly excluded: Excluder
  ) {}

  /** A root that is not in a group: point reads of its own rows. */
  point (rid: string): RecordView {
    const get = (f: string): string | undefined =>
      this.excluded(f) || !isStorableName(f) ? undefined : recordRows.field(this.kv, rid, f)
    let hay: string | undefined
    return {
      ids: () => [rid],
      hay: () => (hay ??= buildHaystack(get)),
      get,
      foldedValues: name => this.visibleFolded(this.fields.recordRowsByFoldedName(rid, name), name)
    }
  }

  /** What results show: the visible fields; one range read for a root outside any group. */
  visibleFields (rid: string, grouped: boolean): Record<string, string> {
    if (grouped) return stripExcluded(this.records.getFlat(rid) ?? {}, this.excluded)
    const out: Record<string, string> = {}
    for (const [f, v] of Object.entries(recordRows.fields(this.kv, rid))) if (!this.excluded(f)) out[f] = v
    return out
  }

  /** A group: the merged document, as every read shows it. */
  group (canon: string): RecordView | undefined {
    const merged = this.records.getFlat(canon)
    if (merged === undefined) return undefined
    return mapView(recordRows.membersOf(this.kv, canon), stripExcluded(merged, this.excluded))
  }

  /** A root seen through the index rows a filter fetched (all the rows that can make that filter match). */
  rows (rid: string, rows: ReadonlyMap<string, string>): RecordView {
    return {
      ids: () => [rid],
      hay: () => EMPTY_HAY,
      get: f => (this.excluded(f) || !isStorableName(f) ? undefined : rows.get(f)),
      foldedValues: name => {
        const out: string[] = []
        for (const [f, v] of rows) if (!this.excluded(f) && fold(f) === name) out.push(v)
        return out
      }
    }
  }

  /** A root seen through its FTS row: enough for the text criterion. */
  text (rid: string, hay: string, ids: readonly string[]): RecordView {
    return { ids: () => ids, hay: () => hay, get: () => undefined, foldedValues: () => [] }
  }

  private visibleFolded (rows: readonly KvRow[], name: string): string[] {
    const out: string[] = []
    for (const [k, v] of rows) {
      const f = splitRecordKey(k)[1]
      if (!this.excluded(f) && fold(f) === name) out.push(v)
    }
    return out
  }
}
