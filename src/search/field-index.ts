/**
 * Candidate rows from the field indexes (`kv_field_v`, `kv_field_multi`).
 * Every method returns a superset of the rows that can make a filter match;
 * the caller decides with the matchers. The supersets rest on the fold
 * invariant (fold.ts): an ASCII position of a folded string equals SQLite's
 * `lower()` of the raw string there, and a non-ASCII position stays
 * non-ASCII, so it can be left to a LIKE `_`.
 */
import type { KvStore, SqlStatement } from '../kv/index.js'
import { asciiLower, codePointPrefixEnd, isAscii, isWellFormed, rawVariants } from './fold.js'
import { FIELD_EXPR, FILE_RANGE, MULTI_COND } from './search-schema.js'

export type Row = [k: string, v: string]

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

/** The raw first characters a field name folding to a name that starts with `c` may have. */
function firstCharVariants (c: string): string[] {
  const code = c.charCodeAt(0)
  if (code >= 0x61 && code <= 0x7a) return [c, c.toUpperCase()]
  if (code < 0x80) return [c]
  return rawVariants(c)
}

const SEL = `SELECT k, v FROM kv WHERE ${FIELD_EXPR}`

export class FieldIndex {
  private readonly st: Record<
  'nameEq' | 'nameRange' | 'valueEq' | 'valueRange' | 'valueLike' | 'multiLike' | 'fieldCount' | 'multiCount' | 'keyRange',
  SqlStatement>

  constructor (kv: KvStore) {
    const p = (sql: string): SqlStatement => kv.prepare(sql)
    this.st = {
      nameEq: p(`${SEL} = ? AND ${FILE_RANGE}`).raw(),
      nameRange: p(`${SEL} >= ? AND ${FIELD_EXPR} < ? AND ${FIELD_EXPR} LIKE ? ESCAPE '\\' AND ${FILE_RANGE}`).raw(),
      valueEq: p(`${SEL} = ? AND lower(v) = ? AND ${FILE_RANGE}`).raw(),
      valueRange: p(`${SEL} = ? AND lower(v) >= ? AND lower(v) < ? AND lower(v) LIKE ? ESCAPE '\\' AND ${FILE_RANGE}`).raw(),
      valueLike: p(`${SEL} = ? AND lower(v) LIKE ? ESCAPE '\\' AND ${FILE_RANGE}`).raw(),
      multiLike: p(`${SEL} = ? AND lower(v) LIKE ? ESCAPE '\\' AND ${FILE_RANGE} AND ${MULTI_COND}`).raw(),
      fieldCount: p(`SELECT count(*) FROM (SELECT 1 FROM kv WHERE ${FIELD_EXPR} = ? AND ${FILE_RANGE} LIMIT ?)`).pluck(),
      multiCount: p(`SELECT count(*) FROM (SELECT 1 FROM kv WHERE ${FIELD_EXPR} = ? AND ${FILE_RANGE} AND ${MULTI_COND} LIMIT ?)`).pluck(),
      keyRange: p('SELECT k, v FROM kv WHERE k >= ? AND k < ?').raw()
    }
  }

  /** Statements whose plans the tests check (they must use the field indexes as covering indexes). */
  get statements (): Readonly<Record<string, SqlStatement>> {
    return this.st
  }

  /** Rows of every field (any record) whose folded name may be `foldedName`. */
  rowsByFoldedName (foldedName: string): Row[] {
    // A stored name is well-formed (SQLite holds UTF-8), so it cannot fold to an ill-formed target.
    if (!isWellFormed(foldedName)) return []
    const out: Row[] = []
    for (const pr of equalityProbes(foldedName)) {
      const rows = ('eq' in pr ? this.st.nameEq.all(pr.eq) : this.st.nameRange.all(pr.lo, pr.hi, pr.like)) as Row[]
      for (const r of rows) out.push(r)
    }
    return out
  }

  /** Every record's value of field `name` (exactly that name), by root: one covering-index range read. */
  valuesOfField (name: string): Map<string, string> {
    const out = new Map<string, string>()
    for (const [k, v] of this.st.nameEq.all(asciiLower(name)) as Row[]) {
      const [rid, field] = splitKey(k)
      if (field === name) out.set(rid, v)
    }
    return out
  }

  /** Rows of field `property` (any case) with a value one of whose comma pieces may fold to `folded`. */
  exactValueRows (property: string, folded: string): Row[] {
    if (!isWellFormed(folded)) return [] // no stored piece can equal it
    const name = asciiLower(property)
    const out: Row[] = []
    for (const pr of equalityProbes(folded)) {
      const rows = ('eq' in pr ? this.st.valueEq.all(name, pr.eq) : this.st.valueRange.all(name, pr.lo, pr.hi, pr.like)) as Row[]
      for (const r of rows) out.push(r)
    }
    for (const r of this.st.multiLike.all(name, `%${likePattern(folded)}%`) as Row[]) out.push(r)
    return out
  }

  /** Rows of field `property` (any case) whose folded value may contain `folded`. */
  substringValueRows (property: string, folded: string): Row[] {
    return this.st.valueLike.all(asciiLower(property), `%${likePattern(folded)}%`) as Row[]
  }

  /** How many values field `property` has (any case), counting at most `cap`. */
  fieldCount (property: string, cap: number): number {
    return this.st.fieldCount.get(asciiLower(property), cap) as number
  }

  /** How many comma-set or space-padded values field `property` has, counting at most `cap`. */
  multiCount (property: string, cap: number): number {
    return this.st.multiCount.get(asciiLower(property), cap) as number
  }

  /** One record's rows whose field name may fold to `foldedName` (a superset; the caller compares folds). */
  recordRowsByFoldedName (rid: string, foldedName: string): Row[] {
    const first = [...foldedName][0]
    if (first === undefined || !isWellFormed(foldedName)) return []
    const out: Row[] = []
    for (const c of firstCharVariants(first)) {
      const lo = `file:${rid}/${c}`
      for (const r of this.st.keyRange.all(lo, codePointPrefixEnd(lo)) as Row[]) out.push(r)
    }
    return out
  }
}

/** Splits `file:<rid>/<field>` into its root and field. */
export function splitKey (k: string): [rid: string, field: string] {
  const slash = k.indexOf('/', 5)
  return [k.slice(5, slash), k.slice(slash + 1)]
}
