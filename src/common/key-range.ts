/**
 * Key-range helpers. Keys compare as SQLite TEXT with the default BINARY
 * collation, i.e. byte-wise on UTF-8, which for the ASCII prefixes used here
 * is plain code-unit order.
 */

/** The smallest string greater than every string that starts with `prefix`. */
export function prefixEnd (prefix: string): string {
  if (prefix.length === 0) throw new RangeError('empty prefix has no end')
  const last = prefix.charCodeAt(prefix.length - 1)
  return prefix.slice(0, -1) + String.fromCharCode(last + 1)
}

/** The half-open range [prefix, prefixEnd(prefix)). */
export function prefixRange (prefix: string): { lo: string, hi: string } {
  return { lo: prefix, hi: prefixEnd(prefix) }
}
