/** Checks on what callers hand the record layer, before any transaction starts. */
import { isCid } from '../cid/index.js'
import { InvalidAddressError, InvalidFieldError, InvalidValueError } from './errors.js'
import { checkWritableField, cidMemberOf, validateFieldPath, validateValue } from './field-path.js'
import { isRecordId } from './record-id.js'

/**
 * Validates fields; returns them as [field, value] pairs. `client`: fields
 * from the API, where the deprecated and derived names are refused too.
 */
export function checkFields (fields: Record<string, string>, client: boolean): Array<[string, string]> {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) throw new InvalidValueError('fields must be an object of strings')
  const out: Array<[string, string]> = []
  for (const [f, v] of Object.entries(fields)) {
    if (client) checkWritableField(f)
    else validateFieldPath(f)
    validateValue(v)
    const c = cidMemberOf(f)
    if (c !== undefined && !isCid(c)) throw new InvalidFieldError(`cids member ${JSON.stringify(c.slice(0, 80))} is not a valid cid (CIDv1, base32 lower-case)`)
    out.push([f, v])
  }
  return out
}

/** An address is a root id or a strict CID. */
export function checkAddress (addr: string): void {
  if (typeof addr !== 'string' || (!isRecordId(addr) && !isCid(addr))) throw new InvalidAddressError(String(addr))
}
