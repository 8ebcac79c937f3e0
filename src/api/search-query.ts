/**
 * The search language of `GET /api/search?q=` (and of the web page's search
 * box, which asks that route), turned into the request
 * `POST /api/metadata/search` takes:
 *   words          free text: every word must appear in the title, file name,
 *                  original title, show title or path (or the text in a record id)
 *   field:value    a filter: the field contains the value (a set member
 *                  `field/value` counts too, e.g. genres:drama)
 *   field:=value   the field equals the value
 *   field:"a b"    quotes keep spaces in a value (also in free text: "a b")
 *   <cid>          a bare CID finds the record carrying it (as cids:<cid>)
 * Several filters must all match; a filter naming the same field twice
 * matches either value.
 */
import type { SearchRequest } from '../search/types.js'

/** A filter as this parser builds it: always with values. */
interface SearchFilter { property: string, values: string[], exact: boolean }

const FIELD_RE = /^[A-Za-z_][A-Za-z0-9_.\-/]*$/
const CID_RE = /^b[a-z2-7]{20,}$/

/** Splits on whitespace, keeping "quoted runs" (quotes removed) together. */
function tokens (q: string): string[] {
  const out: string[] = []
  const re = /(?:[^\s"]+|"[^"]*"?)+/g
  for (const m of q.matchAll(re)) out.push(m[0])
  return out
}

const unquote = (s: string): string => s.replace(/"/g, '')

export function parseQuery (q: string): Pick<SearchRequest, 'query' | 'filters'> {
  const text: string[] = []
  const byField = new Map<string, SearchFilter>()
  for (const tok of tokens(q.trim())) {
    const colon = tok.indexOf(':')
    const name = colon > 0 ? tok.slice(0, colon) : ''
    let value = colon > 0 ? tok.slice(colon + 1) : ''
    if (name !== '' && FIELD_RE.test(name) && value !== '' && !value.startsWith('//')) {
      const exact = value.startsWith('=')
      if (exact) value = value.slice(1)
      value = unquote(value)
      if (value === '') continue
      const key = `${name}\u0000${exact ? '=' : '~'}`
      const f = byField.get(key)
      if (f === undefined) byField.set(key, { property: name, values: [value], exact })
      else f.values.push(value)
      continue
    }
    if (CID_RE.test(tok)) {
      byField.set(`cids\u0000${tok}`, { property: 'cids', values: [tok], exact: true })
      continue
    }
    text.push(unquote(tok))
  }
  const out: Pick<SearchRequest, 'query' | 'filters'> = {}
  const t = text.join(' ').trim()
  if (t !== '') out.query = t
  if (byField.size > 0) out.filters = [...byField.values()]
  return out
}
