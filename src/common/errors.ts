/**
 * Base error class. Every failure kind is a small subclass with a short
 * lower-case message and an optional `cause`; callers branch on the class
 * (`instanceof`), and only the HTTP layer maps classes to status codes.
 */
export class MetaCoreError extends Error {
  /** Stable machine-readable slug, e.g. `invalid_cid`. */
  readonly code: string

  constructor (code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }
}

/** Input that cannot be accepted as given (bad CID, bad path, bad value). */
export class InvalidInputError extends MetaCoreError {
  constructor (message: string, options?: { cause?: unknown, code?: string }) {
    super(options?.code ?? 'invalid_input', message, options)
  }
}

/** A wait ran past its deadline. */
export class TimeoutError extends MetaCoreError {
  constructor (message: string, options?: { cause?: unknown }) {
    super('timeout', message, options)
  }
}

/** An operation was aborted through its AbortSignal. */
export class AbortedError extends MetaCoreError {
  constructor (message = 'aborted', options?: { cause?: unknown }) {
    super('aborted', message, options)
  }
}
