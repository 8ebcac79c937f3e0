/**
 * The query planner. SQL only builds candidate supersets; the matchers
 * decide. Parts are collected cheapest first; once the candidates are few,
 * the remaining parts are checked per candidate with point reads instead of
 * being collected. Counting never materialises documents: a root outside any
 * group that every collected part accepted is already a match, so `total`
 * costs the index reads alone; only the returned page is read in full.
 */
import type { Logger } from '../common/index.js'
import type { KvStore } from '../kv/index.js'
import type { RecordReads } from '../records/index.js'
import type { FieldIndex } from './field-index.js'
import type { FtsIndex } from './fts-index.js'
import { matchesCriteria, type Criteria, type Excluder } from './matchers.js'
import { normalizePaging, normalizeRequest, type Paging } from './normalize-request.js'
import { encodeCursor } from './cursor.js'
import { pageOf } from './paging.js'
import { filterPart, textPart, type Collected, type Part, type PartDeps } from './query-parts.js'
import { GroupResolver, ViewFactory, type GroupCache } from './record-views.js'
import { lookupHashId, toResponse } from './respond.js'
import type { RootIndex } from './root-index.js'
import type { TrigramStats } from './trigram-stats.js'
import type { ListItem, ListResponse, SearchRequest, SearchResponse } from './types.js'

/** Below this many candidates, checking the other parts per candidate is cheaper than collecting them. */
const VERIFY_BELOW = 256
/** Below this many matches a sort reads each match's value; above, the whole field in one index read. */
const SORT_POINT_READS_BELOW = 2000
const LIST_FIELDS = ['title', 'fileName', 'filePath', 'type', 'year'] as const

interface IndexedSearchDeps {
  kv: KvStore
  records: RecordReads
  fields: FieldIndex
  fts: FtsIndex
  roots: RootIndex
  trigrams: TrigramStats
  excluded: Excluder
  groups: GroupCache
  /** False while the structures are rebuilt: every part is then checked on every record's kv rows. */
  trusted: () => boolean
  /** Roots changed since they were indexed (pending-roots.ts). */
  pending: () => ReadonlySet<string>
  logger?: Logger
}

/** How a query was answered: which parts were collected, in what order, with how many candidates. */
export interface QueryPlan {
  parts: Array<{ name: string, cost: number, detail?: string, collected?: number }>
  candidates: number
  matches: number
}

export class IndexedSearch {
  private readonly views: ViewFactory

  constructor (private readonly d: IndexedSearchDeps) {
    this.views = new ViewFactory(d.kv, d.records, d.fields, d.excluded)
  }

  search (req: SearchRequest): SearchResponse {
    return this.run(req).response
  }

  /** search() plus the plan it used (tests, diagnostics). */
  explain (req: SearchRequest): { response: SearchResponse, plan?: QueryPlan } {
    return this.run(req)
  }

  private run (req: SearchRequest): { response: SearchResponse, plan?: QueryPlan } {
    const n = normalizeRequest(req)
    if (n.kind === 'hashId') return { response: lookupHashId(this.d.records, this.d.excluded, n.hashId, n.paging) }
    if (n.criteria.text === undefined && n.criteria.filters.length === 0) return { response: this.everything(n.paging) }
    const { matches, plan } = this.matchAll(n.criteria)
    const response = toResponse(pageOf(matches, n.paging, this.sortValue(n.paging, matches.length)),
      rid => this.views.visibleFields(rid, this.d.groups.canonOf(rid) !== undefined))
    return { response, plan }
  }

  /**
   * The visible value of the sort field of each canonical root (merged for a
   * group). Few matches: a point read each. Many: the field's values for
   * every record in one range read of the field index (a point read costs
   * about as much as 15 index rows), groups still read through their view.
   */
  private sortValue (paging: Paging, matches: number): ((rid: string) => string | undefined) | undefined {
    const field = paging.sort?.field
    if (field === undefined) return undefined
    if (this.d.excluded(field)) return () => undefined
    const read = (rid: string): string | undefined => (this.d.groups.canonOf(rid) !== undefined ? this.views.group(rid) : this.views.point(rid))?.get(field)
    if (matches <= SORT_POINT_READS_BELOW || !this.d.trusted()) return read
    const values = this.d.fields.valuesOfField(field)
    const pending = this.d.pending()
    return rid => (this.d.groups.canonOf(rid) !== undefined || pending.has(rid) ? read(rid) : values.get(rid))
  }

  /** No criteria: every record, paged straight from the root index; the total is the maintained record count. */
  private everything (paging: Paging): SearchResponse {
    if (paging.sort !== undefined) {
      const all = this.d.roots.allCanonical()
      return toResponse(pageOf(all, paging, this.sortValue(paging, all.length)), rid => this.views.visibleFields(rid, this.d.groups.canonOf(rid) !== undefined))
    }
    const rids = this.d.roots.canonicalPage(paging.after, paging.offset, paging.limit + 1)
    const more = rids.length > paging.limit
    if (more) rids.pop()
    return toResponse({
      rids,
      total: this.d.records.countRecords(),
      ...(more && rids.length > 0 ? { nextCursor: encodeCursor(rids[rids.length - 1]) } : {})
    }, rid => this.views.visibleFields(rid, this.d.groups.canonOf(rid) !== undefined))
  }

  private matchAll (criteria: Criteria): { matches: string[], plan: QueryPlan } {
    const groups = new GroupResolver(this.d.kv, this.d.groups)
    const deps: PartDeps = {
      fields: this.d.fields,
      fts: this.d.fts,
      roots: this.d.roots,
      trigrams: this.d.trigrams,
      views: this.views,
      groups,
      records: this.d.records.countRecords(),
      trusted: this.d.trusted(),
      pending: this.d.pending(),
      logger: this.d.logger
    }
    const parts: Part[] = criteria.filters.map(f => filterPart(f, deps))
    if (criteria.text !== undefined) parts.push(textPart(criteria.text, deps))
    parts.sort((a, b) => a.cost - b.cost)

    const plan: QueryPlan = { parts: [], candidates: 0, matches: 0 }
    const collected = new Map<Part, Collected>()
    let cand: Set<string> | undefined
    for (const p of parts) {
      const step: QueryPlan['parts'][number] = { name: p.name, cost: p.cost }
      if (p.detail !== undefined) step.detail = p.detail
      plan.parts.push(step)
      if (cand !== undefined && (cand.size <= VERIFY_BELOW || p.cost > cand.size * 2)) continue
      const c = p.collect()
      collected.set(p, c)
      step.collected = c.set.size
      cand = cand === undefined ? c.set : intersect(cand, c.set)
    }

    const matches: string[] = []
    for (const rid of cand ?? []) {
      const c = groups.canon(rid)
      if (groups.grouped.has(c)) {
        const view = this.views.group(c)
        if (view !== undefined && matchesCriteria(criteria, view)) matches.push(c)
        continue
      }
      let view
      let ok = true
      for (const p of parts) {
        const col = collected.get(p)
        if (col !== undefined && !col.pending.has(rid)) continue
        view ??= this.views.point(rid)
        if (!p.verify(view)) { ok = false; break }
      }
      if (ok) matches.push(rid)
    }
    plan.candidates = cand?.size ?? 0
    plan.matches = matches.length
    return { matches, plan }
  }

  list (offset: number, limit: number): ListResponse {
    const paging = normalizePaging({ offset, limit })
    const rids = this.d.roots.canonicalPage(undefined, paging.offset, paging.limit)
    const items = rids.map(rid => this.listItem(rid))
    return { items, count: items.length, total: this.d.records.countRecords() }
  }

  private listItem (rid: string): ListItem {
    const fields = this.views.visibleFields(rid, this.d.groups.canonOf(rid) !== undefined)
    const item: ListItem = { hashId: rid }
    for (const f of LIST_FIELDS) if (Object.hasOwn(fields, f)) item[f] = fields[f]
    return item
  }
}

function intersect (a: Set<string>, b: Set<string>): Set<string> {
  const [small, big] = a.size <= b.size ? [a, b] : [b, a]
  const out = new Set<string>()
  for (const x of small) if (big.has(x)) out.add(x)
  return out
}
