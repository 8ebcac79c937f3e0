import { isRecordId } from '../records/index.js'
import { InvalidSearchRequestError } from './errors.js'

/**
 * Paging cursors are opaque to clients: base64url of `c1:<root id>`, the last
 * root returned. Results are in root id order, so "after this root" resumes
 * exactly where the previous page ended even when records were added or
 * removed in between (unlike an offset).
 */
const PREFIX = 'c1:'

export function encodeCursor (rid: string): string {
  return Buffer.from(PREFIX + rid, 'utf8').toString('base64url')
}

export function decodeCursor (cursor: string): string {
  const raw = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  const rid = raw.startsWith(PREFIX) ? raw.slice(PREFIX.length) : ''
  if (!isRecordId(rid)) throw new InvalidSearchRequestError('cursor is not one this server issued')
  return rid
}
