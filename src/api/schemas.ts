/**
 * Schema pieces shared by the route plugins. Validation runs with type
 * coercion OFF (a JSON number where a string is expected is a 400, never a
 * silent "5"), so query parameters are declared as strings with a pattern
 * and converted by `queryInt`.
 */
import { ApiError } from './errors.js'

/** Error responses every route may answer with, for the OpenAPI document. */
export function withErrors (ok: Record<string, unknown>, ...statuses: number[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...ok }
  for (const s of [400, 401, 500, 503, ...statuses]) out[String(s)] = { $ref: 'ErrorEnvelope#' }
  return out
}

export const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const

export const stringArray = { type: 'array', items: { type: 'string' } } as const

/** A non-negative decimal integer in a query string. */
export const intString = { type: 'string', pattern: '^[0-9]{1,15}$' } as const

/** Parses an `intString` query parameter, bounded; `fallback` when absent. */
export function queryInt (raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ApiError(400, 'schema_violation', `query parameter ${name} must be an integer from ${min} to ${max}`)
  }
  return n
}

/** Route options for a record address (`/meta/{hash}`): a root id or any CID, checked by the handler for a precise error. */
export const hashParam = {
  type: 'object',
  required: ['hash'],
  properties: { hash: { type: 'string', minLength: 1, maxLength: 256, description: 'a record id or any CID of the record' } }
} as const

export const cidParam = {
  type: 'object',
  required: ['cid'],
  properties: { cid: { type: 'string', maxLength: 256, description: 'any CID of the record (CIDv1, base32 lower-case)' } }
} as const
