/**
 * The matching semantics of POST /api/metadata/search (the original's,
 * docs/api.md#search-and-editor-apimetadata), implemented once. The indexed path and the scan-everything
 * reference both call these functions; they differ only in the RecordView
 * they pass (fields read from a map, from point reads, or from the index
 * rows that produced a candidate).
 */
import { fold, isWellFormed, trimSpace } from './fold.js'

/** The fields whose values make up the free-text haystack, in haystack order. */
export const HAY_FIELDS = ['title', 'fileName', 'originaltitle', 'showtitle', 'filePath'] as const
/** The haystack of a record with none of the haystack fields: no token can match it. */
export const EMPTY_HAY = '\n'.repeat(HAY_FIELDS.length - 1)

/** Free text: every token a substring of the haystack, or `whole` a substring of a root id. */
export interface TextCriterion {
  /** The whole query, folded (not trimmed, as the original compared it). */
  whole: string
  /** The folded query split on whitespace; never empty (a blank query matches everything and has no criterion). */
  tokens: string[]
}

export interface FilterCriterion {
  property: string
  /** Trimmed, non-blank values as given. */
  values: string[]
  /** `values`, folded. */
  folded: string[]
  exact: boolean
}

export interface Criteria {
  text?: TextCriterion
  filters: FilterCriterion[]
}

/** What the matchers may ask of a record. Fields under excluded prefixes are invisible through every view. */
export interface RecordView {
  /** Every root id of the record (a group has several). */
  ids: () => readonly string[]
  /** The folded haystack (buildHaystack). */
  hay: () => string
  /** A visible field's value (exact name). */
  get: (field: string) => string | undefined
  /** The values of the visible fields whose folded name is `foldedName`. */
  foldedValues: (foldedName: string) => Iterable<string>
}

/** A key-set member counts when its value is non-empty and not "false" or "0". */
function isTruthy (v: string | undefined): boolean {
  return v !== undefined && v !== '' && v !== 'false' && v !== '0'
}

export function buildHaystack (get: (field: string) => string | undefined): string {
  let hay = ''
  for (let i = 0; i < HAY_FIELDS.length; i++) {
    if (i > 0) hay += '\n'
    const v = get(HAY_FIELDS[i])
    if (v !== undefined) hay += fold(v)
  }
  return hay
}

export function matchesText (t: TextCriterion, view: RecordView): boolean {
  const hay = view.hay()
  if (t.tokens.every(tok => hay.includes(tok))) return true
  return view.ids().some(id => fold(id).includes(t.whole))
}

/** The key-set probe: `<property>/<value>` with a truthy value, exact case first, then any case. */
function keySetHit (property: string, value: string, view: RecordView): boolean {
  const key = `${property}/${value}`
  if (isTruthy(view.get(key))) return true
  for (const v of view.foldedValues(fold(key))) if (isTruthy(v)) return true
  return false
}

/** OR across the filter's values; per value the key-set probe, else the comma-split flat value. */
export function matchesFilter (f: FilterCriterion, view: RecordView): boolean {
  let flat: string | undefined | null = null
  for (let i = 0; i < f.values.length; i++) {
    if (keySetHit(f.property, f.values[i], view)) return true
    if (flat === null) flat = view.get(f.property)
    if (flat === undefined) continue
    const want = f.folded[i]
    for (const piece of flat.split(',')) {
      const p = fold(trimSpace(piece))
      if (f.exact ? p === want : p.includes(want)) return true
    }
  }
  return false
}

export function matchesCriteria (c: Criteria, view: RecordView): boolean {
  if (c.text !== undefined && !matchesText(c.text, view)) return false
  for (const f of c.filters) if (!matchesFilter(f, view)) return false
  return true
}

/** META_CORE_INDEX_EXCLUDE_PREFIXES when unset. */
export const DEFAULT_EXCLUDE_PREFIXES: readonly string[] = ['categories/newznab/']

/** Field-prefix exclusion (META_CORE_INDEX_EXCLUDE_PREFIXES): a case-sensitive prefix test on the field name. */
export type Excluder = (field: string) => boolean

export function makeExcluder (prefixes: readonly string[]): Excluder {
  const ps = prefixes.filter(p => p.length > 0)
  if (ps.length === 0) return () => false
  return field => ps.some(p => field.startsWith(p))
}

/** A record's visible fields: the excluded ones dropped. */
export function stripExcluded (fields: Record<string, string>, excluded: Excluder): Record<string, string> {
  // fromEntries, not assignment: a field named __proto__ must stay a field.
  return Object.fromEntries(Object.entries(fields).filter(([k]) => !excluded(k)))
}

/** A view over a record held as a plain map of its visible fields (the reference scan; groups). */
export function mapView (ids: readonly string[], fields: Record<string, string>): RecordView {
  let hay: string | undefined
  let byFolded: Map<string, string[]> | undefined
  const get = (f: string): string | undefined => (Object.hasOwn(fields, f) ? fields[f] : undefined)
  return {
    ids: () => ids,
    hay: () => (hay ??= buildHaystack(get)),
    get,
    foldedValues (name) {
      if (byFolded === undefined) {
        byFolded = new Map()
        for (const [k, v] of Object.entries(fields)) {
          const fk = fold(k)
          const list = byFolded.get(fk)
          if (list === undefined) byFolded.set(fk, [v])
          else list.push(v)
        }
      }
      return byFolded.get(name) ?? []
    }
  }
}

/**
 * A field name the store can hold: SQLite stores text as UTF-8, so a name
 * with a lone surrogate can never be a stored key, and a point read of it
 * must not be allowed to find the U+FFFD key the driver would turn it into.
 */
export function isStorableName (field: string): boolean {
  return isWellFormed(field)
}
