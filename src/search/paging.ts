/**
 * Paging over a set of matching roots, shared by the indexed path and the
 * reference scan so both page identically: results in root id order, `total`
 * counts every match, a cursor resumes after a root, `offset` skips matches
 * after the cursor, `nextCursor` is set when more matches follow the page.
 * With a sort, results follow the field's value and only `offset` pages.
 */
import { encodeCursor } from './cursor.js'
import { fold } from './fold.js'
import type { Paging, SortOrder } from './normalize-request.js'

export interface Page {
  rids: string[]
  total: number
  nextCursor?: string
}

/** The `k` smallest strings of `xs`, sorted; a bounded max-heap when k is small next to xs. */
function smallestSorted (xs: readonly string[], k: number): string[] {
  if (k <= 0) return []
  if (k * 8 >= xs.length) return [...xs].sort().slice(0, k)
  const heap: string[] = [] // max-heap of the k smallest so far
  const up = (i: number): void => {
    while (i > 0) {
      const p = (i - 1) >> 1
      if (heap[p] >= heap[i]) return
      ;[heap[p], heap[i]] = [heap[i], heap[p]]
      i = p
    }
  }
  const down = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < heap.length && heap[l] > heap[m]) m = l
      if (r < heap.length && heap[r] > heap[m]) m = r
      if (m === i) return
      ;[heap[m], heap[i]] = [heap[i], heap[m]]
      i = m
    }
  }
  for (const x of xs) {
    if (heap.length < k) { heap.push(x); up(heap.length - 1) } else if (x < heap[0]) { heap[0] = x; down(0) }
  }
  return heap.sort()
}

/** A value as a number when it is one written plainly (`1999`, `-2.5`), so `9` sorts before `10`. */
const NUMBER_RE = /^-?\d+(\.\d+)?$/

/**
 * The order of `sort`: numbers before text, numbers by value, text by its
 * fold (case-insensitive, the search's own rule) and then code points, so
 * every node orders the same way whatever its locale. Undefined (no value)
 * is handled by the caller: always last.
 */
export function compareSortValues (a: string, b: string): number {
  return compareKeys(sortKey(a), sortKey(b))
}

interface SortKey { num: number | undefined, folded: string, raw: string }

function sortKey (raw: string): SortKey {
  return NUMBER_RE.test(raw) ? { num: Number(raw), folded: '', raw } : { num: undefined, folded: fold(raw), raw }
}

function compareKeys (a: SortKey, b: SortKey): number {
  if (a.num !== undefined && b.num !== undefined) {
    if (a.num !== b.num) return a.num < b.num ? -1 : 1
  } else if (a.num !== undefined || b.num !== undefined) {
    return a.num !== undefined ? -1 : 1
  } else if (a.folded !== b.folded) {
    return a.folded < b.folded ? -1 : 1
  }
  return a.raw < b.raw ? -1 : a.raw > b.raw ? 1 : 0
}

/** Pages matches ordered by a field's value (`valueOf` reads the record's visible value); offset paging only. */
function sortedPageOf (matches: readonly string[], paging: Paging & { sort: SortOrder }, valueOf: (rid: string) => string | undefined): Page {
  const dir = paging.sort.desc ? -1 : 1
  // Keys computed once per match, not once per comparison: a sort of every record stays a fraction of a second.
  const keyed = matches.map(rid => {
    const v = valueOf(rid)
    return { rid, key: v === undefined ? undefined : sortKey(v) }
  })
  keyed.sort((x, y) => {
    if (x.key === undefined || y.key === undefined) {
      if (x.key !== y.key) return x.key === undefined ? 1 : -1
    } else {
      const c = compareKeys(x.key, y.key)
      if (c !== 0) return c * dir
    }
    return x.rid < y.rid ? -1 : x.rid > y.rid ? 1 : 0
  })
  return { rids: keyed.slice(paging.offset, paging.offset + paging.limit).map(k => k.rid), total: matches.length }
}

/**
 * Pages an unordered list of distinct matching roots: in root id order, or
 * by `paging.sort` (then `valueOf` must be given).
 */
export function pageOf (matches: readonly string[], paging: Paging, valueOf?: (rid: string) => string | undefined): Page {
  if (paging.sort !== undefined) {
    if (valueOf === undefined) throw new Error('pageOf: a sorted page needs valueOf')
    return sortedPageOf(matches, { ...paging, sort: paging.sort }, valueOf)
  }
  const after = paging.after
  const window = after === undefined ? matches : matches.filter(r => r > after)
  const end = paging.offset + paging.limit
  const head = smallestSorted(window, end + 1)
  const rids = head.slice(paging.offset, end)
  const page: Page = { rids, total: matches.length }
  if (head.length > end && rids.length > 0) page.nextCursor = encodeCursor(rids[rids.length - 1])
  return page
}
