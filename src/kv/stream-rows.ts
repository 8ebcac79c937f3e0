/**
 * The text of one `ev:` row: the entries it holds, in order (streams.ts says
 * which ids they have). Three forms, told apart by the first character:
 *
 *   {…}             one entry: the JSON object of its fields
 *   [{…}, {…}, …]   several entries, each its JSON object (earlier builds'
 *                   packed rows, and today's when the entries' keys differ)
 *   ~<n>~[keys, same, prefix, cols]
 *                   n entries with the same keys in the same order, by
 *                   column: `keys` the field names in order; `same` the
 *                   fields whose value is equal in every entry; `prefix` the
 *                   common leading text of each other field (absent when
 *                   empty); `cols` each other field's values without it
 *
 * The compact form exists because a write's entries repeat themselves: the
 * change log's entries of one write share their kind and version and their
 * keys share the `file:<rid>/` prefix, so a 40-key write is about a quarter
 * of its JSON array. `n` leads so SQL can count entries without parsing the
 * row: `CAST(substr(v, 2) AS INTEGER)` (statements.ts).
 */

/** The compact form for entries that share their keys, the JSON array otherwise. Runs inside every write's transaction: one stringify, no per-entry JSON. */
export function encodeEntries (entries: ReadonlyArray<Record<string, string>>): string {
  const n = entries.length
  const first = entries[0]
  const keys = Object.keys(first)
  if (!uniform(entries, keys)) return JSON.stringify(entries)
  const same: Record<string, string> = {}
  const prefix: Record<string, string> = {}
  const cols: Record<string, string[]> = {}
  for (const key of keys) {
    const v0 = first[key]
    let p = v0.length
    let equal = true
    for (let i = 1; i < n; i++) {
      const v = entries[i][key]
      if (v === v0) continue
      equal = false
      if (p > v.length) p = v.length
      let j = 0
      while (j < p && v.charCodeAt(j) === v0.charCodeAt(j)) j++
      p = j
    }
    if (equal) {
      same[key] = v0
      continue
    }
    // Never split a surrogate pair: the row stays well-formed text, each part valid UTF-16.
    if (p > 0 && isHighSurrogate(v0.charCodeAt(p - 1))) p--
    const col = new Array<string>(n)
    if (p > 0) {
      prefix[key] = v0.slice(0, p)
      for (let i = 0; i < n; i++) col[i] = entries[i][key].slice(p)
    } else {
      for (let i = 0; i < n; i++) col[i] = entries[i][key]
    }
    cols[key] = col
  }
  return `~${n}~${JSON.stringify([keys, same, prefix, cols])}`
}

/** The entries of a row, any form, each a fresh object with its fields in their original order. */
export function decodeEntries (v: string): Array<Record<string, string>> {
  if (v.charCodeAt(0) !== TILDE) {
    const parsed = JSON.parse(v) as Record<string, string> | Array<Record<string, string>>
    return Array.isArray(parsed) ? parsed : [parsed]
  }
  const end = v.indexOf('~', 1)
  const n = Number(v.slice(1, end))
  const [keys, same, prefix, cols] = JSON.parse(v.slice(end + 1)) as [string[], Record<string, string>, Record<string, string>, Record<string, string[]>]
  // Per field once: its column and prefix, or its one value (own properties only: a field may be named `constructor`).
  const fieldCols = keys.map(k => (Object.hasOwn(cols, k) ? cols[k] : undefined))
  const fieldFixed = keys.map(k => (Object.hasOwn(cols, k) ? (Object.hasOwn(prefix, k) ? prefix[k] : '') : same[k]))
  const out = new Array<Record<string, string>>(n)
  for (let i = 0; i < n; i++) {
    const e: Record<string, string> = {}
    for (let f = 0; f < keys.length; f++) {
      const col = fieldCols[f]
      e[keys[f]] = col === undefined ? fieldFixed[f] : fieldFixed[f] + col[i]
    }
    out[i] = e
  }
  return out
}

/** How many entries a row holds, without decoding the compact form. */
export function entryCountOf (v: string): number {
  const c = v.charCodeAt(0)
  if (c === TILDE) return Number(v.slice(1, v.indexOf('~', 1)))
  return c === OPEN_BRACKET ? (JSON.parse(v) as unknown[]).length : 1
}

const TILDE = 0x7e
const OPEN_BRACKET = 0x5b

/**
 * Every entry has exactly `keys`, in that order, with string values, and no
 * key would become a prototype on decoding (`__proto__`): only then does the
 * compact form give back the same objects.
 */
function uniform (entries: ReadonlyArray<Record<string, string>>, keys: string[]): boolean {
  if (keys.includes('__proto__')) return false
  for (const e of entries) {
    // Own keys in order without listing them into an array (this runs for every entry of every write).
    let j = 0
    for (const k in e) {
      if (k !== keys[j] || !Object.hasOwn(e, k) || typeof e[k] !== 'string') return false
      j++
    }
    if (j !== keys.length) return false
  }
  return true
}

function isHighSurrogate (c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff
}
