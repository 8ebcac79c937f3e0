import { InvalidInputError } from '../common/index.js'

/** A search or list request that cannot be accepted as given (wrong types, negative paging, a foreign cursor). */
export class InvalidSearchRequestError extends InvalidInputError {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'invalid_search_request' })
  }
}
