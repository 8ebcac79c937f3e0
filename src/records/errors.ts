import { InvalidInputError, MetaCoreError } from '../common/index.js'

/** A field path that breaks the grammar (empty segment, control character, too long). */
export class InvalidFieldError extends InvalidInputError {
  constructor (message: string) {
    super(message, { code: 'invalid_field' })
  }
}

/** A field the store no longer accepts (`cid_*`, `midhash256`, `canonical_cid`): write `cids/<cid>` members instead. */
export class DeprecatedFieldError extends InvalidInputError {
  readonly field: string
  constructor (field: string) {
    super(`field ${JSON.stringify(field)} is deprecated: write the cid as a cids/<cid> member instead`, { code: 'deprecated_field' })
    this.field = field
  }
}

/** A value over the size limit, or not a string. */
export class InvalidValueError extends InvalidInputError {
  constructor (message: string) {
    super(message, { code: 'invalid_value' })
  }
}

/** The address is neither a record id nor a CID, or names no record where one is required. */
export class UnknownRecordError extends MetaCoreError {
  readonly address: string
  constructor (address: string) {
    super('unknown_root', 'metadata not found')
    this.address = address
  }
}

/** An address that can be neither a record id nor a CID. */
export class InvalidAddressError extends InvalidInputError {
  constructor (address: string) {
    super(`${JSON.stringify(address.slice(0, 80))} is neither a record id nor a cid`, { code: 'invalid_address' })
  }
}

/** A root may not be its own alias. */
export class SelfAliasError extends InvalidInputError {
  constructor () {
    super('a root cannot be an alias of itself', { code: 'self_alias' })
  }
}

/**
 * A client wrote (or deleted) a location field: `filePath`, `sizeByte` and
 * `mtimeNano` describe a file on one node's disk, and only that node's
 * watcher writes them (local-location.ts).
 */
export class LocationFieldError extends InvalidInputError {
  constructor (field: string) {
    super(`${field} is written by the file watcher of the node that holds the file: clients cannot set or delete it`, { code: 'watcher_owned_field' })
  }
}
