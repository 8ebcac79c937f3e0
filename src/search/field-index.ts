/**
 * Candidate rows from the field index (`search_field`, see search-schema.ts).
 * Every method returns a superset of the rows that can make a filter match,
 * as [root, raw field, raw value]; the caller decides with the matchers.
 * The supersets rest on the fold invariant (fold.ts): an ASCII position of
 * a folded string equals SQLite's `lower()` of the raw string there, and a
 * non-ASCII position stays non-ASCII, so it can be left to a LIKE `_`.
 * Keys hold a value cut to VALUE_KEY_CHARS characters when the raw value is
 * stored beside it, so probes are cut the same way and LIKE tests the raw
 * value (LIKE ignores ASCII case, as `lower()` does).
 *
 * Rows come back for indexed documents only (the join on `search_doc`
 * drops entries of re-indexed ones); staged roots are the caller's to check.
 */
import type { KvStore, SqlStatement } from '../kv/index.js'
import { asciiLower, codePointPrefixEnd, isAscii, isWellFormed, rawVariants } from './fold.js'
import { DEFAULT_BUCKET_SHIFT, RAW_FIELD, RAW_VALUE, VALUE_KEY_CHARS, multiCond, recordKey } from './search-schema.js'

/** A field index row: root, raw field name, raw value. */
export type FieldRow = [rid: string, field: string, value: string]
/** A kv row of a record: `file:<rid>/<field>` and its value. */
export type KvRow = [k: string, v: string]

/** How to find the raw strings whose fold equals a target: one equality, or prefix ranges with a LIKE. */
type Probe = { eq: string } | { lo: string, hi: string, like: string }

/** `folded` as a LIKE pattern: ASCII literally (escaped), any other character as `_`. */
export function likePattern (folded: string): string {
  let out = ''
  for (const ch of folded) {
    if (ch.charCodeAt(0) >= 0x80) out += '_'
    else if (ch === '%' || ch === '_' || ch === '\\') out += '\\' + ch
    else out += ch
  }
  return out
}

/**
 * Probes on a `lower(...)` column for the raw strings whose fold is `folded`.
 * The literal prefix is the ASCII run before the first other character; when
 * that run is empty, one range per raw variant of the first character.
 */
export function equalityProbes (folded: string): Probe[] {
  if (isAscii(folded)) return [{ eq: folded }]
  const chars = [...folded]
  const like = likePattern(folded)
  let i = 0
  while (i < chars.length && chars[i].charCodeAt(0) < 0x80) i++
  if (i > 0) {
    const lo = chars.slice(0, i).join('')
    return [{ lo, hi: codePointPrefixEnd(lo), like }]
  }
  let j = 1
  while (j < chars.length && chars[j].charCodeAt(0) < 0x80) j++
  const rest = chars.slice(1, j).join('')
  return rawVariants(chars[0]).map(v => {
    const lo = v + rest
    return { lo, hi: codePointPrefixEnd(lo), like }
  })
}

/** The first VALUE_KEY_CHARS code points: what a value key holds of a longer value stored in full beside it. */
function valueKey (s: string): string {
  if (s.length <= VALUE_KEY_CHARS) return s
  const cps = [...s]
  return cps.length <= VALUE_KEY_CHARS ? s : cps.slice(0, VALUE_KEY_CHARS).join('')
}

/** The raw first characters a field name folding to a name that starts with `c` may have. */
function firstCharVariants (c: string): string[] {
  const code = c.charCodeAt(0)
  if (code >= 0x61 && code <= 0x7a) return [c, c.toUpperCase()]
  if (code < 0x80) return [c]
  return rawVariants(c)
}

const SEL = `SELECT doc.rid, ${RAW_FIELD}, ${RAW_VALUE} FROM search_field s JOIN search_doc doc ON doc.d = s.d WHERE s.f`
/** The buckets (search-schema.ts) from the oldest indexed document's to the newest's, as `bk`: a value probe seeks each. */
const buckets = (shift: number): string => `WITH RECURSIVE bk(b) AS (SELECT (SELECT min(d) FROM search_doc) >> ${shift}
  UNION ALL SELECT b + 1 FROM bk WHERE b < (SELECT max(d) FROM search_doc) >> ${shift}) `

export class FieldIndex {
  private readonly st: Record<
  'nameEq' | 'nameRange' | 'valueEq' | 'valueRange' | 'valueLike' | 'multiLike' | 'fieldCount' | 'multiCount' | 'keyRange',
  SqlStatement>

  /** `bucketShift`: the one the index writer keys entries with. */
  constructor (kv: KvStore, bucketShift = DEFAULT_BUCKET_SHIFT) {
    const p = (sql: string): SqlStatement => kv.prepare(sql)
    const inBuckets = buckets(bucketShift)
    this.st = {
      nameEq: p(`${SEL} = ?`).raw(),
      nameRange: p(`${SEL} >= ? AND s.f < ? AND s.f LIKE ? ESCAPE '\\'`).raw(),
      valueEq: p(`${inBuckets}${SEL} = ? AND s.b IN bk AND s.v IN (?, ?)`).raw(),
      valueRange: p(`${inBuckets}${SEL} = ? AND s.b IN bk AND s.v >= ? AND s.v < ? AND ${RAW_VALUE} LIKE ? ESCAPE '\\'`).raw(),
      valueLike: p(`${SEL} = ? AND ${RAW_VALUE} LIKE ? ESCAPE '\\'`).raw(),
      multiLike: p(`${SEL} = ? AND ${RAW_VALUE} LIKE ? ESCAPE '\\' AND ${multiCond(RAW_VALUE)}`).raw(),
      fieldCount: p('SELECT count(*) FROM (SELECT 1 FROM search_field WHERE f = ? LIMIT ?)').pluck(),
      multiCount: p('SELECT multi FROM search_fstat WHERE f = ?').pluck(),
      keyRange: p('SELECT k, v FROM kv WHERE k >= ? AND k < ?').raw()
    }
  }

  /** Statements whose plans the tests check (they must seek the index, not scan it). */
  get statements (): Readonly<Record<string, SqlStatement>> {
    return this.st
  }

  /** Rows of every field (any record) whose folded name may be `foldedName`. */
  rowsByFoldedName (foldedName: string): FieldRow[] {
    // A stored name is well-formed (SQLite holds UTF-8), so it cannot fold to an ill-formed target.
    if (!isWellFormed(foldedName)) return []
    const out: FieldRow[] = []
    for (const pr of equalityProbes(foldedName)) {
      const rows = ('eq' in pr ? this.st.nameEq.all(pr.eq) : this.st.nameRange.all(pr.lo, pr.hi, pr.like)) as FieldRow[]
      for (const r of rows) out.push(r)
    }
    return out
  }

  /** Every indexed record's value of field `name` (exactly that name), by root: one range read. */
  valuesOfField (name: string): Map<string, string> {
    const out = new Map<string, string>()
    for (const [rid, field, v] of this.st.nameEq.all(asciiLower(name)) as FieldRow[]) {
      if (field === name) out.set(rid, v)
    }
    return out
  }

  /** Rows of field `property` (any case) with a value one of whose comma pieces may fold to `folded`. */
  exactValueRows (property: string, folded: string): FieldRow[] {
    if (!isWellFormed(folded)) return [] // no stored piece can equal it
    const name = asciiLower(property)
    const out: FieldRow[] = []
    for (const pr of equalityProbes(folded)) {
      const rows = ('eq' in pr
        ? this.st.valueEq.all(name, pr.eq, valueKey(pr.eq))
        : this.st.valueRange.all(name, valueKey(pr.lo), codePointPrefixEnd(valueKey(pr.lo)), pr.like)) as FieldRow[]
      for (const r of rows) out.push(r)
    }
    if (this.multiCount(property, 1) > 0) {
      for (const r of this.st.multiLike.all(name, `%${likePattern(folded)}%`) as FieldRow[]) out.push(r)
    }
    return out
  }

  /** Rows of field `property` (any case) whose folded value may contain `folded`. */
  substringValueRows (property: string, folded: string): FieldRow[] {
    return this.st.valueLike.all(asciiLower(property), `%${likePattern(folded)}%`) as FieldRow[]
  }

  /** How many entries field `property` has (any case; re-indexed records' old ones until swept), counting at most `cap`. */
  fieldCount (property: string, cap: number): number {
    return this.st.fieldCount.get(asciiLower(property), cap) as number
  }

  /** At least how many comma-set or space-padded values field `property` has (any case), at most `cap`. */
  multiCount (property: string, cap: number): number {
    return Math.min(cap, (this.st.multiCount.get(asciiLower(property)) as number | undefined) ?? 0)
  }

  /** One record's kv rows whose field name may fold to `foldedName` (a superset; the caller compares folds). */
  recordRowsByFoldedName (rid: string, foldedName: string): KvRow[] {
    const first = [...foldedName][0]
    if (first === undefined || !isWellFormed(foldedName)) return []
    const out: KvRow[] = []
    for (const c of firstCharVariants(first)) {
      const lo = recordKey(rid, c)
      for (const r of this.st.keyRange.all(lo, codePointPrefixEnd(lo)) as KvRow[]) out.push(r)
    }
    return out
  }
}
