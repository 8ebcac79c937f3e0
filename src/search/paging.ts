/**
 * Paging over a set of matching roots, shared by the indexed path and the
 * reference scan so both page identically: results in root id order, `total`
 * counts every match, a cursor resumes after a root, `offset` skips matches
 * after the cursor, `nextCursor` is set when more matches follow the page.
 */
import { encodeCursor } from './cursor.js'
import type { Paging } from './normalize-request.js'

export interface Page {
  rids: string[]
  total: number
  nextCursor?: string
}

/** The `k` smallest strings of `xs`, sorted; a bounded max-heap when k is small next to xs. */
export function smallestSorted (xs: readonly string[], k: number): string[] {
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

/** Pages an unordered list of distinct matching roots. */
export function pageOf (matches: readonly string[], paging: Paging): Page {
  const after = paging.after
  const window = after === undefined ? matches : matches.filter(r => r > after)
  const end = paging.offset + paging.limit
  const head = smallestSorted(window, end + 1)
  const rids = head.slice(paging.offset, end)
  const page: Page = { rids, total: matches.length }
  if (head.length > end && rids.length > 0) page.nextCursor = encodeCursor(rids[rids.length - 1])
  return page
}
