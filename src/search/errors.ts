import { InvalidInputError, MetaCoreError } from '../common/index.js'

/** A search or list request that cannot be accepted as given (wrong types, negative paging, a foreign cursor). */
export class InvalidSearchRequestError extends InvalidInputError {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'invalid_search_request' })
  }
}

/** A query reached a search service that was never started (or was stopped): the composition root starts it before serving. */
export class SearchNotStartedError extends MetaCoreError {
  constructor () {
    super('search_not_started', 'the search service is not started')
  }
}
