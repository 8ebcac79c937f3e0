/**
 * The `Range` header (RFC 9110 §14): one byte range is served as 206; an
 * unsatisfiable one is 416. A header we cannot use (another unit, a syntax
 * error, several ranges) is ignored and the whole file is sent, which the
 * RFC allows for any Range request; serving multipart/byteranges buys media
 * clients nothing and would let one request ask for thousands of slices.
 */
type RangeDecision =
  | { kind: 'full' }
  | { kind: 'partial', start: number, end: number }
  | { kind: 'unsatisfiable' }

const SINGLE = /^bytes=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)[ \t]*$/i

export function decideRange (header: string | undefined, size: number): RangeDecision {
  if (header === undefined) return { kind: 'full' }
  const m = SINGLE.exec(header)
  if (m === null) return { kind: 'full' }
  const [, a, b] = m
  if (a === '' && b === '') return { kind: 'full' }
  if (a.length > 15 || b.length > 15) return { kind: 'unsatisfiable' } // beyond any file size we can hold
  if (a === '') {
    // Suffix range: the last N bytes.
    const n = Number(b)
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' }
    return { kind: 'partial', start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(a)
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1)
  if (b !== '' && Number(b) < start) return { kind: 'full' } // syntactically invalid: ignore the header
  if (start >= size) return { kind: 'unsatisfiable' }
  return { kind: 'partial', start, end }
}
