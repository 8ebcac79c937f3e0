import { InvalidInputError, MetaCoreError } from '../common/index.js'

/** The path exists but is not a regular file (a directory, a FIFO, …): defined with the library-path rules in common. */
export { NotAFileError } from '../common/index.js'

/** A string that is not a strict MetaMesh CID (CIDv1, base32-lower). */
export class InvalidCidError extends InvalidInputError {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'invalid_cid' })
  }
}

/**
 * The file ended before the bytes its size promised (it shrank between stat
 * and read, or the caller passed a stale size). We refuse rather than hash a
 * zero-filled sample: a zero-filled digest would name content that never
 * existed and could collide across unrelated truncated files.
 */
export class ShortReadError extends MetaCoreError {
  constructor (message: string, options?: { cause?: unknown }) {
    super('short_read', message, options)
  }
}
