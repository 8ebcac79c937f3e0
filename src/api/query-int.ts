/**
 * Query-string integers. Validation runs with type coercion off (a JSON
 * number where a string is expected is a 400, never a silent "5"), so query
 * parameters are declared as strings with a pattern (wire/kit.ts
 * `IntString`) and converted here.
 */
import { ApiError } from './errors.js'

/** Parses an `IntString` query parameter, bounded; `fallback` when absent. */
export function queryInt (raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ApiError(400, 'schema_violation', `query parameter ${name} must be an integer from ${min} to ${max}`)
  }
  return n
}
