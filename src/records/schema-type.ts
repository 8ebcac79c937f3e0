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

export function classifyValue (v: string): { prim: string, hint: string } {
  if (v === '' || v === 'null') return { prim: 'undefined', hint: '' }
  if (v === 'true' || v === 'false') return { prim: 'bool', hint: '' }
  if (INT_RE.test(v)) {
    const n = Number(v)
    const ts = (n >= 1e9 && n <= 4_102_444_800) || (n >= 1e12 && n <= 4_102_444_800_000)
    return { prim: 'int', hint: ts ? 'timestamp' : '' }
  }
  if (FLOAT_RE.test(v)) return { prim: 'float', hint: '' }
  const c = v.charCodeAt(0)
  if (c === 123 /* { */ || c === 91 /* [ */) {
    try {
      const j: unknown = JSON.parse(v)
      if (Array.isArray(j)) return { prim: 'json-array', hint: '' }
      if (j !== null && typeof j === 'object') return { prim: 'json-object', hint: '' }
    } catch { /* not JSON: a plain string that starts with a bracket */ }
  }
  if (CID_RE.test(v)) return { prim: 'string', hint: 'cid' }
  if (DATE_RE.test(v)) return { prim: 'string', hint: 'timestamp' }
  return { prim: 'string', hint: '' }
}

export const SCHEMA_PREFIX = 'idx:schema/'
const SEP = '\u001f'

// Field names repeat across records: remember their generalised prefix (bounded, cleared when full).
const fieldPrefixCache = new Map<string, string>()
const FIELD_CACHE_MAX = 50_000

export function schemaCounterKey (field: string, value: string): string {
  let prefix = fieldPrefixCache.get(field)
  if (prefix === undefined) {
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
