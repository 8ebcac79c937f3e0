/**
 * Flat ↔ nested documents. Storage keeps one string per leaf under a
 * `/`-separated path; documents for people are nested.
 *
 * Nesting rules (read side):
 * - `/` separates path segments.
 * - A node whose child names are all non-negative integers becomes an array;
 *   a missing index is `null` (a sparse array is stored as written, not compacted).
 * - A path that is both a leaf and a branch (`a` and `a/b` both set) keeps the
 *   leaf under the empty key of the branch: `{a: {"": "x", b: "y"}}`.
 *   `flatten` maps that empty key back to the branch itself, so the round trip holds.
 * Flatten rules (write side): objects and arrays recurse, `null`/`undefined`
 * become `""` (as the original did), numbers and booleans become strings.
 */
export type Nested = string | null | Nested[] | { [k: string]: Nested }

const INDEX_RE = /^(0|[1-9]\d{0,8})$/

export function nest (flat: Record<string, string>): Record<string, Nested> {
  interface Node { leaf?: string, kids?: Map<string, Node> }
  const root: Node = { kids: new Map() }
  for (const [path, value] of Object.entries(flat)) {
    let n = root
    for (const seg of path.split('/')) {
      n.kids ??= new Map()
      let k = n.kids.get(seg)
      if (k === undefined) { k = {}; n.kids.set(seg, k) }
      n = k
    }
    n.leaf = value
  }
  const build = (n: Node): Nested => {
    if (n.kids === undefined || n.kids.size === 0) return n.leaf ?? ''
    const names = [...n.kids.keys()]
    if (n.leaf === undefined && names.every(x => INDEX_RE.test(x))) {
      const arr: Nested[] = []
      for (const name of names) arr[Number(name)] = build(n.kids.get(name)!)
      for (let i = 0; i < arr.length; i++) if (arr[i] === undefined) arr[i] = null
      return arr
    }
    const obj: Record<string, Nested> = {}
    if (n.leaf !== undefined) obj[''] = n.leaf
    for (const name of names) obj[name] = build(n.kids.get(name)!)
    return obj
  }
  return build(root) as Record<string, Nested>
}

export function flatten (doc: unknown, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (v: unknown, path: string): void => {
    if (v === null || v === undefined) { out[path] = ''; return }
    if (Array.isArray(v)) {
      v.forEach((x, i) => { if (x !== undefined) walk(x, join(path, String(i))) })
      return
    }
    if (typeof v === 'object') {
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) walk(x, k === '' ? path : join(path, k))
      return
    }
    // Arrays and objects are walked above: what is left is a primitive (a JSON document holds no other), kept as String() renders it.
    // eslint-disable-next-line @typescript-eslint/no-base-to-string
    out[path] = String(v)
  }
  walk(doc, prefix)
  return out
}

function join (a: string, b: string): string {
  return a === '' ? b : `${a}/${b}`
}
