/**
 * The building blocks of the API's schemas, on TypeBox: each schema is
 * written once, and its TypeScript type (`Static`) is what the handlers
 * take and return, what the page reads (ui/src/wire.ts) and what the
 * OpenAPI document says (@fastify/swagger reads the same objects).
 *
 * The JSON these produce is the API's contract with its clients and with
 * fastify's validator and serializers, so a few shapes are written as the
 * JSON Schema they always were rather than TypeBox's own forms:
 * - a nullable value is `nullable: true` (OpenAPI 3.0), not an `anyOf` with
 *   `null`, which fast-json-stringify serializes slower;
 * - a set of strings is `{ type: 'string', enum }`, not an `anyOf` of
 *   literals (the validator's message stays "must be equal to one of the
 *   allowed values");
 * - a map is `additionalProperties: <values>`, not TypeBox's
 *   `patternProperties: { '^.*$': … }`, which both the validator and the
 *   serializer test per key;
 * - two alternatives of a request body are `oneOf`, as before.
 *
 * Nothing here imports fastify or Node: the page's type checker reads these
 * files too (type-only imports; nothing of them reaches its bundle).
 */
import { Type, type Static, type TProperties, type TSchema, type TUnsafe } from 'typebox'

export { Type, type Static, type TProperties, type TSchema }

/** A value or null (`nullable: true`). */
export function Nullable<T extends TSchema> (t: T): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({ ...t, nullable: true })
}

/** One of a fixed set of strings. */
export function StringEnum<const V extends readonly string[]> (values: V, options: { description?: string } = {}): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options })
}

/** An object of any keys, every value of type `values`. */
export function Dict<T extends TSchema> (values: T, options: { description?: string, maxProperties?: number } = {}): TUnsafe<Record<string, Static<T>>> {
  return Type.Unsafe<Record<string, Static<T>>>({ type: 'object', additionalProperties: values, ...options })
}

/** Exactly one of the alternatives (request bodies that take two forms). */
export function OneOf<const T extends readonly TSchema[]> (alternatives: T, options: { description?: string } = {}): TUnsafe<Static<T[number]>> {
  return Type.Unsafe<Static<T[number]>>({ ...options, oneOf: [...alternatives] })
}

/** A flat map of field path to string value: a record as clients read and write it. */
export const StringMap = Dict(Type.String())

export const StringList = Type.Array(Type.String())

/**
 * A non-negative decimal integer in a query string. Validation runs with
 * coercion off (a number where a string belongs is a 400, never a silent
 * "5"), so query integers are strings with a pattern, converted by the route.
 */
export const IntString = Type.String({ pattern: '^[0-9]{1,15}$' })

/** The error envelope every 4xx and 5xx answer is (`{error, message, retryable}`). */
export const ErrorEnvelope = Type.Object({
  error: Type.String({ description: 'stable machine-readable slug' }),
  message: Type.String(),
  retryable: Type.Boolean()
}, { $id: 'ErrorEnvelope' })
export type ErrorEnvelope = Static<typeof ErrorEnvelope>

/** The envelope by reference (it is registered once with the app: `app.addSchema`). */
const ErrorRef = Type.Unsafe<ErrorEnvelope>({ $ref: 'ErrorEnvelope#' })

/** Statuses any route may answer with an envelope: bad input, a missing token, a failure, storage or a component unavailable. */
type CommonErrors = 400 | 401 | 500 | 503

/** A route's responses: its own, and the error statuses it may answer with (the common ones and `statuses`), for the serializers and the OpenAPI document. */
export function withErrors<R extends Record<number, TSchema>, S extends number = never> (ok: R,
  ...statuses: S[]): R & Record<CommonErrors | S, typeof ErrorRef> {
  const out: Record<number, TSchema> = { ...ok }
  for (const s of [400, 401, 500, 503, ...statuses]) out[s] = ErrorRef
  return out as R & Record<CommonErrors | S, typeof ErrorRef>
}
