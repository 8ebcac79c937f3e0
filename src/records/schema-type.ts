/**
 * Value-type classification behind `/api/schema` and its counters
 * `idx:schema/<field>\x1f<keyHint>\x1f<prim>\x1f<hint>`.
 *
 * The field part is generalised so that key-sets and arrays do not make one
 * counter per member: numeric segments become `<n>`, CID segments `<cid>`,
 * and a three-letter lower-case last segment (a lang3 code) becomes `<lang>`
 * with keyHint `language-code`.
 */
const INT_RE = /^-?(0|[1-9]\d*)$/
const FLOAT_RE = /^-?(0|[1-9]\d*)?\.\d+([eE][-+]?\d+)?$|^-?(0|[1-9]\d*)[eE][-+]?\d+$/
const CID_RE = /^(ba[a-z2-7]{14,}|Qm[1-9A-HJ-NP-Za-km-z]{44})$/
const LANG_RE = /^[a-z]{3}$/
const DATE_RE = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/

export interface FieldType { field: string, keyHint: string, prim: string, hint: string }

export function generaliseField (field: string): { field: string, keyHint: string } {
  const segs = field.split('/')
  let keyHint = ''
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i]
    if (/^\d+$/.test(s)) segs[i] = '<n>'
    else if (CID_RE.test(s)) segs[i] = '<cid>'
    else if (i === segs.length - 1 && i > 0 && LANG_RE.test(s)) { segs[i] = '<lang>'; keyHint = 'language-code' }
  }
  return { field: segs.join('/'), keyHint }
}

/** The types a value can have, shared and frozen; typeIndex answers with a place in this list. */
const TYPES: ReadonlyArray<{ readonly prim: string, readonly hint: string }> = [
  ['undefined', ''], ['bool', ''], ['int', ''], ['int', 'timestamp'], ['float', ''], ['json-array', ''], ['json-object', ''],
  ['string', 'cid'], ['string', 'timestamp'], ['string', '']
].map(([prim, hint]) => Object.freeze({ prim, hint }))
// Their places, in the same order.
const [UNDEFINED, BOOL, INT, INT_TS, FLOAT, ARRAY, OBJECT, STRING_CID, STRING_TS, STRING] = TYPES.keys()

/** The value's type; the returned objects are shared and frozen. */
export function classifyValue (v: string): { readonly prim: string, readonly hint: string } {
  return TYPES[typeIndex(v)]
}

/**
 * The value's type as its place in TYPES. Runs for every field of every
 * write, so each pattern is tried only when the first character allows it
 * (a number starts with a digit, `-` or `.`; a CID with `b` or `Q`; a date
 * with a digit).
 */
function typeIndex (v: string): number {
  if (v === '' || v === 'null') return UNDEFINED
  if (v === 'true' || v === 'false') return BOOL
  const c = v.charCodeAt(0)
  const digit = c >= 48 && c <= 57
  if (digit || c === 45 /* - */ || c === 46 /* . */) {
    if (INT_RE.test(v)) {
      const n = Number(v)
      return (n >= 1e9 && n <= 4_102_444_800) || (n >= 1e12 && n <= 4_102_444_800_000) ? INT_TS : INT
    }
    if (FLOAT_RE.test(v)) return FLOAT
  }
  if (c === 123 /* { */ || c === 91 /* [ */) {
    try {
      const j: unknown = JSON.parse(v)
      if (Array.isArray(j)) return ARRAY
      if (j !== null && typeof j === 'object') return OBJECT
    } catch { /* not JSON: a plain string that starts with a bracket */ }
  }
  if ((c === 98 /* b */ || c === 81 /* Q */) && CID_RE.test(v)) return STRING_CID
  if (digit && DATE_RE.test(v)) return STRING_TS
  return STRING
}

export const SCHEMA_PREFIX = 'idx:schema/'
const SEP = '\u001f'

/**
 * The counter keys of one generalised field, one per value type (TYPES
 * order), made once: the same string each time, so the counters' map
 * hashes it once.
 */
const keysOf = (prefix: string): string[] => TYPES.map(t => prefix + t.prim + SEP + t.hint)

// Field names repeat across records: remember their keys (bounded, cleared when full).
const fieldKeysCache = new Map<string, string[]>()
const FIELD_CACHE_MAX = 50_000

// Every cids/ member generalises alike; each record has its own members, so they would only churn the cache.
const CIDS_MEMBER_KEYS = keysOf(SCHEMA_PREFIX + 'cids/<cid>' + SEP + SEP)

export function schemaCounterKey (field: string, value: string): string {
  let keys = fieldKeysCache.get(field)
  if (keys === undefined && field.startsWith('cids/') && field.indexOf('/', 5) < 0 && CID_RE.test(field.slice(5))) {
    keys = CIDS_MEMBER_KEYS
  } else if (keys === undefined) {
    const g = generaliseField(field)
    keys = keysOf(SCHEMA_PREFIX + g.field + SEP + g.keyHint + SEP)
    if (fieldKeysCache.size >= FIELD_CACHE_MAX) fieldKeysCache.clear()
    fieldKeysCache.set(field, keys)
  }
  return keys[typeIndex(value)]
}

export function parseSchemaCounterKey (k: string): FieldType | undefined {
  if (!k.startsWith(SCHEMA_PREFIX)) return undefined
  const parts = k.slice(SCHEMA_PREFIX.length).split(SEP)
  if (parts.length !== 4) return undefined
  return { field: parts[0], keyHint: parts[1], prim: parts[2], hint: parts[3] }
}
