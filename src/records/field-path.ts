import { DeprecatedFieldError, InvalidFieldError, InvalidValueError } from './errors.js'

/** Longest field path in UTF-16 units: keeps `file:<rid>/<field>` well under the 1 KiB key limit peers enforce. */
export const MAX_FIELD_LENGTH = 512
/**
 * Longest field path in UTF-8 bytes: `file:` + a 26-character root id + `/`
 * + the field must stay within the 1 KiB key limit peers enforce, or a
 * write accepted here would be refused by every peer.
 */
export const MAX_FIELD_BYTES = 1024 - 'file:'.length - 26 - 1
/** Largest value in UTF-16 units: the 256 KiB value limit peers enforce (docs/design/mesh-rules.md#trust). */
export const MAX_VALUE_LENGTH = 256 * 1024

/**
 * A lone UTF-16 surrogate: SQLite stores it as bytes that are not UTF-8 and
 * reads them back as U+FFFD, so a key holding one could never be addressed
 * again and a value would silently change. (With the `u` flag a well-formed
 * pair is one code point and does not match.)
 */
const LONE_SURROGATE = /\p{Cs}/u

/** No lone surrogate: the engine's own check where it has one (Node 20), several times faster than the pattern on long values. */
const isWellFormed: (s: string) => boolean = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === 'function'
  ? (s) => (s as unknown as { isWellFormed: () => boolean }).isWellFormed()
  : (s) => !LONE_SURROGATE.test(s)

// Control characters (C0, DEL, C1) never belong in a field name; \x1f also separates idx:schema key parts.
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/
/** The one path segment refused by name (see validateFieldPath). */
const PROTO = '__proto__'

/**
 * Checks a field path: `/`-separated, no empty segment, no `__proto__`
 * segment, no control characters, at most MAX_FIELD_LENGTH long and
 * MAX_FIELD_BYTES in UTF-8.
 * Throws InvalidFieldError.
 */
export function validateFieldPath (field: unknown): asserts field is string {
  if (typeof field !== 'string') throw new InvalidFieldError('field name must be a string')
  if (field.length === 0) throw new InvalidFieldError('field name is empty')
  if (field.length > MAX_FIELD_LENGTH) throw new InvalidFieldError(`field name is longer than ${MAX_FIELD_LENGTH} characters`)
  // Three UTF-8 bytes per UTF-16 unit at most: only long names need counting.
  if (field.length * 3 > MAX_FIELD_BYTES && Buffer.byteLength(field) > MAX_FIELD_BYTES) throw new InvalidFieldError(`field name is longer than ${MAX_FIELD_BYTES} UTF-8 bytes`)
  if (CONTROL_RE.test(field)) throw new InvalidFieldError('field name contains a control character')
  if (!isWellFormed(field)) throw new InvalidFieldError('field name contains a lone UTF-16 surrogate: text must be well-formed Unicode')
  if (field.startsWith('/') || field.endsWith('/') || field.includes('//')) throw new InvalidFieldError(`field name ${JSON.stringify(field)} has an empty path segment`)
  // A record reads back as JavaScript objects (flat and nested): a `__proto__` key would set an object's prototype instead of a property,
  // and the field would vanish from every read and export.
  if (field.includes(PROTO) && field.split('/').includes(PROTO)) throw new InvalidFieldError(`field name ${JSON.stringify(field)} has the path segment "${PROTO}", which cannot be read back`)
}

/** Refuses the fields the cids/ key-set replaced: `cid_*`, `midhash256`, `canonical_cid`. */
export function rejectDeprecatedField (field: string): void {
  const first = field.split('/', 1)[0]
  if (first.startsWith('cid_') || first === 'midhash256' || first === 'canonical_cid') throw new DeprecatedFieldError(field)
}

// Field names repeat across records (title, size, …): the ones that passed are remembered (bounded, cleared when full).
// cids/ members are each their own and never remembered.
const writableFields = new Set<string>()
const WRITABLE_CACHE_MAX = 10_000

/** Both checks a client-supplied field name must pass. */
export function checkWritableField (field: unknown): asserts field is string {
  if (typeof field === 'string' && writableFields.has(field)) return
  validateFieldPath(field)
  rejectDeprecatedField(field)
  if (field.startsWith('cids/')) return
  if (writableFields.size >= WRITABLE_CACHE_MAX) writableFields.clear()
  writableFields.add(field)
}

export function validateValue (value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new InvalidValueError('value must be a string')
  if (value.length > MAX_VALUE_LENGTH) throw new InvalidValueError(`value is longer than ${MAX_VALUE_LENGTH} characters`)
  if (!isWellFormed(value)) throw new InvalidValueError('value contains a lone UTF-16 surrogate: text must be well-formed Unicode')
}

/** The CID of a `cids/<cid>` member field, or undefined for other fields. */
export function cidMemberOf (field: string): string | undefined {
  return field.startsWith('cids/') ? field.slice(5) : undefined
}
