/**
 * Case folding and whitespace rules of the search semantics, in one place.
 *
 * `fold` lower-cases per code point (Unicode simple lowercase, like Go's
 * strings.ToLower in the original) with one deliberate difference: a
 * character whose lowercase would be ASCII while it is not (U+0130 İ → i,
 * U+212A Kelvin sign → k), or whose lowercase is more than one code point,
 * is kept as it is. So folding never changes a string's length in code
 * points, nor whether any position holds an ASCII character. That invariant
 * is what lets SQLite's ASCII-only `lower()` (the field index) narrow the
 * candidates without ever losing a match: an ASCII position of a folded
 * string equals the same position of SQLite's `lower()` of the raw string,
 * and a non-ASCII position is non-ASCII in both.
 */

/** Go's unicode.IsSpace set (strings.Fields / strings.TrimSpace), so tokens split where the original split them. */
export const WHITESPACE_CHARS = '\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000'

const SPLIT_RE = new RegExp(`[${WHITESPACE_CHARS}]+`, 'u')
const TRIM_RE = new RegExp(`^[${WHITESPACE_CHARS}]+|[${WHITESPACE_CHARS}]+$`, 'gu')
// eslint-disable-next-line no-control-regex
const ASCII_RE = /^[\u0000-\u007f]*$/
const ILL_FORMED_RE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Non-ASCII characters seen so far → their fold; bounded so hostile queries cannot grow it without limit. */
const charCache = new Map<string, string>()
const CHAR_CACHE_MAX = 20_000

function foldChar (ch: string): string {
  let f = charCache.get(ch)
  if (f !== undefined) return f
  const l = ch.toLowerCase()
  const cp = l.codePointAt(0)!
  f = cp >= 0x80 && l.length === String.fromCodePoint(cp).length ? l : ch
  if (charCache.size >= CHAR_CACHE_MAX) charCache.clear()
  charCache.set(ch, f)
  return f
}

export function isAscii (s: string): boolean {
  return ASCII_RE.test(s)
}

/** Lower-cases per code point; see the module header for the exact rule. */
export function fold (s: string): string {
  if (ASCII_RE.test(s)) return s.toLowerCase()
  let out = ''
  for (const ch of s) {
    const c = ch.charCodeAt(0)
    if (c < 0x80) out += c >= 0x41 && c <= 0x5a ? String.fromCharCode(c + 32) : ch
    else out += foldChar(ch)
  }
  return out
}

/** SQLite's built-in lower(): ASCII letters only. */
export function asciiLower (s: string): string {
  return s.replace(/[A-Z]+/g, m => m.toLowerCase())
}

/** Splits on runs of whitespace, dropping empty pieces (Go's strings.Fields). */
export function splitFields (s: string): string[] {
  return s.split(SPLIT_RE).filter(x => x.length > 0)
}

/** Trims leading and trailing whitespace (Go's strings.TrimSpace). */
export function trimSpace (s: string): string {
  return s.replace(TRIM_RE, '')
}

/** True when the string has no lone surrogate, i.e. it survives the trip through SQLite's UTF-8 unchanged. */
export function isWellFormed (s: string): boolean {
  return !ILL_FORMED_RE.test(s)
}

/** Length in code points (what the FTS trigram tokenizer counts). */
export function codePointLength (s: string): number {
  let n = 0
  for (const _ of s) n++ // eslint-disable-line @typescript-eslint/no-unused-vars
  return n
}

let inverse: Map<string, string[]> | undefined
// Every character with a lowercase mapping lies below U+1FFFF (the last cased block is Adlam, U+1E900).
const LAST_CASED = 0x1ffff

/**
 * Every raw character whose fold is `folded` (one code point), itself
 * included: the characters a stored name or value may hold at a position
 * where the folded target holds `folded`. Built once, on first need.
 */
export function rawVariants (folded: string): string[] {
  if (inverse === undefined) {
    inverse = new Map()
    for (let cp = 0x80; cp <= LAST_CASED; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue
      const ch = String.fromCodePoint(cp)
      const f = foldChar(ch)
      if (f === ch) continue
      const list = inverse.get(f)
      if (list === undefined) inverse.set(f, [ch])
      else list.push(ch)
    }
  }
  return [folded, ...(inverse.get(folded) ?? [])]
}

/** The smallest string above every string starting with `prefix`, by code point (= SQLite's UTF-8 byte order). */
export function codePointPrefixEnd (prefix: string): string {
  const chars = [...prefix]
  const last = chars.pop()
  if (last === undefined) throw new RangeError('empty prefix has no end')
  let cp = last.codePointAt(0)! + 1
  if (cp === 0xd800) cp = 0xe000 // surrogates are not characters; SQLite never stores them
  return chars.join('') + String.fromCodePoint(cp)
}
