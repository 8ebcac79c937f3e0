/**
 * The one place where failures become HTTP answers. Every 4xx/5xx the API
 * sends is the envelope `{error, message, retryable}` (docs/design/original.md#conventions), built by
 * `toErrorReply` from the error's class or `.code`; routes only throw.
 */
import { InvalidInputError, MetaCoreError, TimeoutError } from '../common/index.js'
import { ShortReadError } from '../cid/index.js'
import { KvClosedError, StorageError, UnknownRecordError } from '../records/index.js'
import type { ErrorEnvelope } from './wire/kit.js'

interface ErrorReply {
  statusCode: number
  body: ErrorEnvelope
  headers?: Record<string, string>
  /** True for failures we did not anticipate: they are logged with their stack. */
  unexpected: boolean
}

/** A failure decided by the HTTP layer itself (an unknown CID on a CID route, a missing token, …). */
export class ApiError extends MetaCoreError {
  readonly statusCode: number
  readonly retryable: boolean
  readonly headers: Record<string, string> | undefined

  constructor (statusCode: number, code: string, message: string, opts: { retryable?: boolean, headers?: Record<string, string>, cause?: unknown } = {}) {
    super(code, message, { cause: opts.cause })
    this.statusCode = statusCode
    this.retryable = opts.retryable ?? statusCode >= 500
    this.headers = opts.headers
  }
}

/** 404 `unknown_cid`: the CID routes' answer for a CID no record (or no local copy) carries. */
export class UnknownCidError extends ApiError {
  constructor (message = 'no metadata for this CID') {
    super(404, 'unknown_cid', message)
  }
}

/** 401: a write (or internal read) without the right bearer token. */
export class UnauthorizedError extends ApiError {
  constructor (message: string) {
    super(401, 'unauthorized', message, { headers: { 'www-authenticate': 'Bearer realm="meta-core"' } })
  }
}

/** 503 for an optional component this node was started without (search, watcher). */
export class ComponentUnavailableError extends ApiError {
  constructor (component: string) {
    super(503, `${component}_unavailable`, `this node runs without the ${component}`, { retryable: false })
  }
}

/** What a client sees while storage is down: retry in a few seconds (docs/design/original.md#conventions). */
const RETRY_AFTER_S = '5'

/** Fastify's own request errors (parsing, limits, routing) and the slug each becomes. */
const FASTIFY_CODES: Record<string, { status: number, slug: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, slug: 'payload_too_large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, slug: 'unsupported_media_type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, slug: 'schema_violation' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, slug: 'schema_violation' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, slug: 'schema_violation' },
  FST_ERR_BAD_URL: { status: 400, slug: 'bad_url' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, slug: 'uri_too_long' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, slug: 'bad_request' }
}

/**
 * Failures other modules signal by `.code` only (the API imports no watcher
 * or search code): the status each one means.
 */
const CODE_STATUS: Record<string, { status: number, retryable: boolean }> = {
  not_found: { status: 404, retryable: false },
  files_path_unavailable: { status: 503, retryable: true },
  // records' ClockOutOfBoundError: this node's clock is off against its peers; writes pass again once it is back.
  clock_out_of_bound: { status: 503, retryable: true }
}

/** Default slug by status when nothing more specific is known (docs/design/original.md#conventions). */
function defaultSlug (status: number): string {
  switch (status) {
    case 400: return 'schema_violation'
    case 404: return 'not_found'
    case 409: return 'alias_collision'
    case 413: return 'payload_too_large'
    case 503: return 'storage_unavailable'
    default: return 'internal'
  }
}

/** Keeps messages to one readable line: they echo client input at times. */
function clip (s: string): string {
  const one = s.replace(/[\r\n]+/g, ' ')
  return one.length > 300 ? one.slice(0, 297) + '...' : one
}

interface FastifyLikeError {
  code?: unknown
  statusCode?: unknown
  validation?: unknown
  validationContext?: unknown
  message?: unknown
}

/** Maps any thrown value to a status and the envelope. Never throws. */
export function toErrorReply (err: unknown): ErrorReply {
  if (err instanceof ApiError) {
    return {
      statusCode: err.statusCode,
      body: { error: err.code, message: clip(err.message), retryable: err.retryable },
      headers: err.headers,
      unexpected: false
    }
  }
  if (err instanceof KvClosedError || err instanceof StorageError) {
    return {
      statusCode: 503,
      body: { error: 'storage_unavailable', message: clip(err.message), retryable: true },
      headers: { 'retry-after': RETRY_AFTER_S },
      unexpected: err instanceof StorageError
    }
  }
  if (err instanceof UnknownRecordError) {
    return { statusCode: 404, body: { error: 'unknown_root', message: err.message, retryable: false }, unexpected: false }
  }
  if (err instanceof InvalidInputError) {
    return { statusCode: 400, body: { error: err.code, message: clip(err.message), retryable: false }, unexpected: false }
  }
  if (err instanceof ShortReadError) {
    // The file changed under the hash: asking again will read the new content.
    return { statusCode: 409, body: { error: 'file_changed', message: clip(err.message), retryable: true }, unexpected: false }
  }
  if (err instanceof MetaCoreError && CODE_STATUS[err.code] !== undefined) {
    const { status, retryable } = CODE_STATUS[err.code]
    return { statusCode: status, body: { error: err.code, message: clip(err.message), retryable }, unexpected: false }
  }
  if (err instanceof TimeoutError) {
    return { statusCode: 503, body: { error: 'timeout', message: clip(err.message), retryable: true }, unexpected: false }
  }
  if (err !== null && typeof err === 'object') {
    const e = err as FastifyLikeError
    if (e.validation !== undefined) {
      return { statusCode: 400, body: { error: 'schema_violation', message: clip(String(e.message)), retryable: false }, unexpected: false }
    }
    if (typeof e.code === 'string') {
      const known = FASTIFY_CODES[e.code]
      if (known !== undefined) {
        return { statusCode: known.status, body: { error: known.slug, message: clip(String(e.message)), retryable: false }, unexpected: false }
      }
      // Fastify (and its body reader) mark client faults with a 4xx statusCode: trust those, never 5xx ones.
      if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
        return { statusCode: e.statusCode, body: { error: defaultSlug(e.statusCode), message: clip(String(e.message)), retryable: false }, unexpected: false }
      }
    }
  }
  return { statusCode: 500, body: { error: 'internal', message: 'internal error', retryable: true }, unexpected: true }
}
