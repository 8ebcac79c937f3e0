/**
 * The parts of a query (one per filter, one for the free text), each able to
 * collect its candidate roots from an index and to check one record.
 *
 * A collected set holds canonical roots. For a root outside any group it is
 * exact: the part has already been decided with the matchers, on the index
 * rows (a filter) or the stored haystack (the text). Roots listed in
 * `pending`, and every group, still need the matcher on the record itself.
 */
import { silentLogger, type Logger } from '../common/index.js'
import type { FieldIndex } from './field-index.js'
import { codePointLength, fold, isWellFormed } from './fold.js'
import { IDS_SEPARATOR, ftsQuery, type FtsIndex, type FtsRow } from './fts-index.js'
import { matchesFilter, matchesText, type FilterCriterion, type RecordView, type TextCriterion } from './matchers.js'
import type { GroupResolver, ViewFactory } from './record-views.js'
import type { RootIndex } from './root-index.js'
import type { TrigramStats } from './trigram-stats.js'

export interface Collected {
  set: Set<string>
  pending: Set<string>
}

export interface Part {
  name: string
  /** What the part asks of the index (the FTS query), for plans. */
  detail?: string
  /** Rough number of index entries collecting costs; parts are collected cheapest first. */
  cost: number
  collect: () => Collected
  verify: (view: RecordView) => boolean
}

/** Entries counted when estimating a field's size: enough to rank it, bounded in cost. */
const COUNT_CAP = 5000
/** A token joins the FTS query when its estimate is within this factor of the rarest token's... */
const AND_WITHIN = 8
/** ...or below this many rows anyway. */
const AND_ALWAYS_BELOW = 200
/** More staged roots than this in one query: read every record rather than check them one by one. */
const MAX_PENDING = 10_000
/** Letters of a lower-cased root id: a query with any other character cannot be part of one. */
const RID_FRAGMENT_RE = /^[0-9a-hjkmnp-tv-z]{1,26}$/

export interface PartDeps {
  fields: FieldIndex
  fts: FtsIndex
  views: ViewFactory
  groups: GroupResolver
  /** Number of records, for the cost of reading them all. */
  records: number
  roots: RootIndex
  trigrams: TrigramStats
  /** False while the structures are rebuilt: every part then reads every record. */
  trusted: boolean
  /** Roots changed since they were indexed: their entries are ignored and they are checked on their kv rows. */
  pending: ReadonlySet<string>
  logger?: Logger
}

/**
 * The staged roots as candidates of a part: each live one's canonical root,
 * to be checked on the record (a group always is). Their index entries were
 * skipped, so this adds back exactly what the index may have missed.
 */
function addPending (d: PartDeps, set: Set<string>, pending: Set<string>): void {
  for (const r of d.pending) {
    if (!d.groups.isLive(r)) continue
    const c = d.groups.canon(r)
    set.add(c)
    pending.add(c)
  }
}

export function filterPart (f: FilterCriterion, d: PartDeps): Part {
  const verify = (view: RecordView): boolean => matchesFilter(f, view)
  if (!d.trusted || d.pending.size > MAX_PENDING) {
    return { name: `filter:${f.property}`, detail: 'read-all', cost: d.records * 8, verify, collect: () => everything(d) }
  }
  const count = f.exact ? d.fields.multiCount(f.property, COUNT_CAP) : d.fields.fieldCount(f.property, COUNT_CAP)
  return {
    name: `filter:${f.property}`,
    cost: (count >= COUNT_CAP ? Math.max(count, d.records) : count) + f.values.length + d.pending.size,
    verify,
    collect () {
      const rows = new Map<string, Map<string, string>>()
      const add = (rid: string, field: string, v: string, want: (field: string) => boolean): void => {
        if (!want(field) || d.pending.has(rid)) return
        let m = rows.get(rid)
        if (m === undefined) { m = new Map(); rows.set(rid, m) }
        m.set(field, v)
      }
      f.values.forEach((value, i) => {
        const keySet = fold(`${f.property}/${value}`)
        for (const [rid, field, v] of d.fields.rowsByFoldedName(keySet)) add(rid, field, v, field => fold(field) === keySet)
        const flat = f.exact ? d.fields.exactValueRows(f.property, f.folded[i]) : d.fields.substringValueRows(f.property, f.folded[i])
        for (const [rid, field, v] of flat) add(rid, field, v, field => field === f.property)
      })
      const set = new Set<string>()
      for (const [rid, fields] of rows) {
        const c = d.groups.canon(rid)
        if (d.groups.grouped.has(c)) set.add(c)
        else if (matchesFilter(f, d.views.rows(rid, fields))) set.add(rid)
      }
      const pending = new Set<string>()
      addPending(d, set, pending)
      return { set, pending }
    }
  }
}

export function textPart (t: TextCriterion, d: PartDeps): Part {
  const usable = t.tokens.filter(tok => isWellFormed(tok) && !tok.includes('\u0000'))
  const long = usable.filter(tok => codePointLength(tok) >= 3)
  // The whole query can only be part of a root id if it is made of root-id letters.
  const idFragment = RID_FRAGMENT_RE.test(t.whole) ? t.whole : undefined
  const idByFts = idFragment !== undefined && idFragment.length >= 3
  const verify = (view: RecordView): boolean => matchesText(t, view)
  if (!d.trusted || d.pending.size > MAX_PENDING) {
    return { name: 'text:read-all', cost: d.records * 8, verify, collect: () => everything(d) }
  }
  // The rarest token always goes to the FTS; the others only when their doclists are of the same order.
  const ranked = long.map(tok => ({ tok, est: d.trigrams.estimate(tok) })).sort((a, b) => a.est - b.est)
  const best = ranked[0]?.est ?? d.records
  const chosen = ranked.filter(r => r.est <= best * AND_WITHIN + AND_ALWAYS_BELOW).map(r => r.tok)
  return {
    name: long.length > 0 ? 'text:fts' : 'text:scan',
    cost: best,
    detail: chosen.length > 0 ? ftsQuery(chosen, idByFts ? idFragment : undefined) : undefined,
    verify,
    collect () {
      let rows: FtsRow[]
      try {
        if (chosen.length > 0) {
          rows = d.fts.match(ftsQuery(chosen, idByFts ? idFragment : undefined))
        } else {
          rows = d.fts.scan(usable.sort((a, b) => b.length - a.length)[0])
          if (idByFts) rows = rows.concat(d.fts.match(ftsQuery([], idFragment)))
        }
      } catch (err) {
        // The FTS could not take this query: reading every record gives the same answer, only slower.
        ;(d.logger ?? silentLogger).warn('fts query failed; checking every record instead', { err })
        return everything(d)
      }
      const set = new Set<string>()
      const pending = new Set<string>()
      // Staged roots: their rows may be stale, so they are checked on the kv rows.
      addPending(d, set, pending)
      for (const [rid, hay, ids] of rows) {
        if (d.pending.has(rid)) continue
        const c = d.groups.canon(rid)
        if (c !== rid) {
          set.add(c)
          pending.add(c)
        } else if (d.groups.grouped.has(c)) {
          set.add(c)
        } else if (matchesText(t, d.views.text(rid, hay, ids.split(IDS_SEPARATOR)))) {
          set.add(rid)
        }
      }
      // A fragment under 3 characters: the FTS cannot look it up, the root index is scanned.
      if (idFragment !== undefined && !idByFts) for (const rid of d.roots.containing(idFragment)) set.add(d.groups.canon(rid))
      return { set, pending }
    }
  }
}

function everything (d: PartDeps): Collected {
  const set = new Set(d.roots.allCanonical())
  return { set, pending: set }
}
