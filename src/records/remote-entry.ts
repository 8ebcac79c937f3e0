/**
 * The shape a replicated entry must have before it may touch a store: the
 * same rules `applyRemote` enforces, as a pure function, so the mesh can
 * refuse a peer's frame before queueing any work for it.
 */
import { isCid } from '../cid/index.js'
import { InvalidValueError } from './errors.js'
import { checkWritableField, cidMemberOf, MAX_FIELD_LENGTH, validateValue } from './field-path.js'
import { parseHlc } from './hlc.js'
import { isRecordId, type RecordId } from './record-id.js'

/** One replicated key with its version; `value: null` is a tombstone. The key `file:<rid>` (no field) is a root tombstone. */
export interface RemoteEntry {
  key: string
  value: string | null
  hlc: string
  origin: string
}

/** Entry-level validation failure in a remote batch: the whole batch is refused. */
export class InvalidRemoteEntryError extends InvalidValueError {}

/** Node ids (origins): a libp2p peer id string, or the standalone `node-<hex>` id. */
export const ORIGIN_RE = /^[A-Za-z0-9._-]{1,128}$/
/** Peers refuse a key longer than this many UTF-8 bytes (docs/design/mesh-rules.md#trust). */
export const MAX_REMOTE_KEY_BYTES = 1024

const bad = (why: string): never => { throw new InvalidRemoteEntryError(`remote entry refused: ${why}`) }

/**
 * What one call has already checked: the roots, clock values and origins
 * of a batch repeat across its entries (a record's fields share them), so
 * each distinct one is parsed once.
 */
interface EntryChecks {
  rids: Set<string>
  hlcs: Set<string>
  origins: Set<string>
  /** The previous entry's (checked) root, clock and origin: consecutive entries mostly repeat them. */
  lastRid?: string
  lastHlc?: string
  lastOrigin?: string
}

export function newEntryChecks (): EntryChecks {
  return { rids: new Set(), hlcs: new Set(), origins: new Set() }
}

/** Checks a remote entry; returns its root and field (none for a root tombstone) or throws InvalidRemoteEntryError. */
export function checkRemoteEntry (e: RemoteEntry, seen?: EntryChecks): { rid: RecordId, field?: string } {
  if (e === null || typeof e !== 'object') bad('not an object')
  if (typeof e.key !== 'string' || !e.key.startsWith('file:')) bad('key outside file:')
  // A UTF-8 character is at most 3 bytes per UTF-16 unit: only a long key needs counting.
  if (e.key.length * 3 > MAX_REMOTE_KEY_BYTES && Buffer.byteLength(e.key) > MAX_REMOTE_KEY_BYTES) bad('key longer than 1 KiB')
  // The local writes' rules: a string of at most 256 KiB, well-formed (a lone surrogate would be stored as U+FFFD, another value than the peer's).
  if (e.value !== null) {
    try {
      validateValue(e.value)
    } catch (err) {
      bad((err as Error).message)
    }
  }
  if (seen === undefined || (e.hlc !== seen.lastHlc && !seen.hlcs.has(e.hlc))) {
    if (typeof e.hlc !== 'string' || parseHlc(e.hlc) === undefined) bad('bad hlc')
    seen?.hlcs.add(e.hlc)
  }
  if (seen !== undefined) seen.lastHlc = e.hlc
  if (seen === undefined || (e.origin !== seen.lastOrigin && !seen.origins.has(e.origin))) {
    if (typeof e.origin !== 'string' || !ORIGIN_RE.test(e.origin)) bad('bad origin')
    seen?.origins.add(e.origin)
  }
  if (seen !== undefined) seen.lastOrigin = e.origin
  const slash = e.key.indexOf('/', 5)
  const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
  if (seen === undefined || (rid !== seen.lastRid && !seen.rids.has(rid))) {
    if (!isRecordId(rid)) bad('root is not a record id')
    seen?.rids.add(rid)
  }
  if (seen !== undefined) seen.lastRid = rid
  if (slash < 0) {
    if (e.value !== null) bad('a root entry must be a tombstone')
    return { rid: rid as RecordId }
  }
  const field = e.key.slice(slash + 1)
  try {
    checkWritableField(field)
  } catch (err) {
    bad((err as Error).message)
  }
  if (field.length > MAX_FIELD_LENGTH) bad('field too long')
  const c = cidMemberOf(field)
  if (c !== undefined && !isCid(c)) bad('cids member is not a valid cid')
  return { rid: rid as RecordId, field }
}
