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

const UNDEFINED = Object.freeze({ prim: 'undefined', hint: '' })
const BOOL = Object.freeze({ prim: 'bool', hint: '' })
const INT = Object.freeze({ prim: 'int', hint: '' })
const INT_TS = Object.freeze({ prim: 'int', hint: 'timestamp' })
const FLOAT = Object.freeze({ prim: 'float', hint: '' })
const ARRAY = Object.freeze({ prim: 'json-array', hint: '' })
const OBJECT = Object.freeze({ prim: 'json-object', hint: '' })
const STRING_CID = Object.freeze({ prim: 'string', hint: 'cid' })
const STRING_TS = Object.freeze({ prim: 'string', hint: 'timestamp' })
const STRING = Object.freeze({ prim: 'string', hint: '' })

/**
 * The value's type. Runs for every field of every write, so each pattern is
 * tried only when the first character allows it (a number starts with a
 * digit, `-` or `.`; a CID with `b` or `Q`; a date with a digit); the
 * returned objects are shared and must not be changed.
 */
export function classifyValue (v: string): { readonly prim: string, readonly hint: string } {
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

// Field names repeat across records: remember their generalised prefix (bounded, cleared when full).
const fieldPrefixCache = new Map<string, string>()
const FIELD_CACHE_MAX = 50_000

const CIDS_MEMBER_PREFIX = SCHEMA_PREFIX + 'cids/<cid>' + SEP + SEP

export function schemaCounterKey (field: string, value: string): string {
  let prefix = fieldPrefixCache.get(field)
  if (prefix === undefined && field.startsWith('cids/') && field.indexOf('/', 5) < 0 && CID_RE.test(field.slice(5))) {
    // A cids/ member: each record has its own, so they would only churn the cache.
    prefix = CIDS_MEMBER_PREFIX
  } else if (prefix === undefined) {
    const g = generaliseField(field)
    prefix = SCHEMA_PREFIX + g.field + SEP + g.keyHint + SEP
    if (fieldPrefixCache.size >= FIELD_CACHE_MAX) fieldPrefixCache.clear()
    fieldPrefixCache.set(field, prefix)
  }
  const t = classifyValue(value)
  return prefix + t.prim + SEP + t.hint
}

export function parseSchemaCounterKey (k: string): FieldType | undefined {
  if (!k.startsWith(SCHEMA_PREFIX)) return undefined
  const parts = k.slice(SCHEMA_PREFIX.length).split(SEP)
  if (parts.length !== 4) return undefined
  return { field: parts[0], keyHint: parts[1], prim: parts[2], hint: parts[3] }
}
