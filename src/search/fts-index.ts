/**
 * The FTS rows: one per record, written by the merger (merger.ts), and the
 * reads the planner makes of them.
 *
 * Invariant, for every live canonical root that is not staged (and whose
 * group has no staged member): its row, at the rowid of its document,
 * holds indexHaystack of its visible (group-merged) fields in `hay` and the
 * lower-cased ids of the group's roots in `ids`; no other document has a
 * row. Staged roots are checked on their kv rows instead (pending-roots.ts).
 */
import type { KvStore, SqlStatement } from '../kv/index.js'
import { recordRows, type RowReader } from '../records/index.js'
import { fold } from './fold.js'
import { HAY_FIELDS, type Excluder } from './matchers.js'

export type FtsRow = [rid: string, hay: string, ids: string]
/** Separates the ids in the `ids` column; a query with whitespace can never match across two. */
export const IDS_SEPARATOR = ' '

/**
 * The stored haystack: the folded haystack fields, one per line, leaving out
 * a field whose folded value is part of another kept one (an original title
 * equal to the title, a file name inside the path). Free-text tokens hold no
 * whitespace, so a token is part of buildHaystack's haystack exactly when it
 * is part of one field, and so exactly when it is part of this one.
 */
export function indexHaystack (get: (field: string) => string | undefined): string {
  const vals: string[] = []
  for (const f of HAY_FIELDS) {
    const v = get(f)
    if (v !== undefined) vals.push(fold(v))
  }
  // Of equal values the first is kept; a value inside a different one goes.
  return vals.filter((v, i) => !vals.some((w, j) => j !== i && w.includes(v) && (w !== v || j < i))).join('\n')
}

/**
 * The row of canonical root `c` from the kv rows: its own fields, or the
 * group's merged fields and member ids. A caller that has read them already
 * passes the group's `members`, and for a root alone its haystack fields
 * (`own`, excluded fields left out).
 */
export function ftsRowOf (
  r: RowReader, c: string, excluded: Excluder, members: readonly string[] = recordRows.membersOf(r, c), own?: (field: string) => string | undefined
): [hay: string, ids: string] {
  if (members.length === 1) {
    return [indexHaystack(own ?? (f => (excluded(f) ? undefined : recordRows.field(r, c, f)))), c.toLowerCase()]
  }
  const merged = recordRows.merged(r, c)
  const hay = indexHaystack(f => (excluded(f) || !Object.hasOwn(merged, f) ? undefined : merged[f]))
  return [hay, members.map(m => m.toLowerCase()).join(IDS_SEPARATOR)]
}

export class FtsIndex {
  private readonly st: Record<'match' | 'scan' | 'scanInstr' | 'count', SqlStatement>

  constructor (kv: KvStore) {
    const sel = 'SELECT doc.rid, f.hay, f.ids FROM search_fts f JOIN search_doc doc ON doc.d = f.rowid'
    this.st = {
      match: kv.prepare(`${sel} WHERE search_fts MATCH ?`).raw(),
      scan: kv.prepare(sel).raw(),
      scanInstr: kv.prepare(`${sel} WHERE instr(f.hay, ?) > 0`).raw(),
      count: kv.prepare('SELECT count(*) FROM search_fts').pluck()
    }
  }

  /** Rows matching an FTS5 query (see ftsQuery). */
  match (query: string): FtsRow[] {
    return this.st.match.all(query) as FtsRow[]
  }

  /** Every row, or the rows whose haystack contains `needle` (well-formed: instr then equals a JS substring test). */
  scan (needle?: string): FtsRow[] {
    return (needle === undefined ? this.st.scan.all() : this.st.scanInstr.all(needle)) as FtsRow[]
  }

  rowCount (): number {
    return this.st.count.get() as number
  }
}

const phrase = (t: string): string => `"${t.replaceAll('"', '""')}"`

/**
 * An FTS5 query for rows whose haystack holds every token, or (when `idFragment`
 * is given) whose ids hold the fragment. Each string is a quoted phrase,
 * which the trigram tokenizer matches as a substring.
 */
export function ftsQuery (tokens: readonly string[], idFragment?: string): string {
  const hay = tokens.length === 0 ? undefined : `hay : (${tokens.map(phrase).join(' AND ')})`
  const ids = idFragment === undefined ? undefined : `ids : ${phrase(idFragment)}`
  return hay === undefined ? ids ?? '' : ids === undefined ? hay : `(${hay}) OR (${ids})`
}
