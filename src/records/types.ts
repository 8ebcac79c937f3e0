import type { RecordId } from './record-id.js'

/** A record as readers see it: the group's fields merged, cids hoisted, canonical derived. */
export interface RecordDocument {
  /** The canonical root (internal: the public CID routes do not disclose it). */
  rid: RecordId
  /** Every root of the group, canonical first. */
  members: RecordId[]
  /** Flat fields, `cids/<cid>` members included. */
  metadata: Record<string, string>
  cids: string[]
  canonical_cid?: string
  duplicates: string[]
}

/** `RecordDocument` with the flat fields as JSON text (`metadataJson`), for replies that are JSON anyway. */
export type RecordDocumentJson = Omit<RecordDocument, 'metadata'> & { metadataJson: string }

export interface ApplyResult {
  applied: number
  skipped: number
  /** Entries refused for clock drift. */
  refused: number
}

export interface WriteResult {
  rid: RecordId
  /** Fields whose value changed. */
  updated: number
  /** True when the write created the record (an unknown CID becomes a new record). */
  created: boolean
}

export type RemovePathResult =
  | { kind: 'duplicate-removed', rid: RecordId }
  | { kind: 'promoted', rid: RecordId, promoted: string }
  | { kind: 'last-copy', rid: RecordId }
  | { kind: 'not-found' }

/**
 * What `releaseCopy` did with a path that no longer holds the content:
 * - `kept`: another copy on this node remains (a duplicate row, one the
 *   caller knows of, or the bytes in this node's cache: then `localPaths` is
 *   empty); the record stays with this node's holder member, and
 *   `promoted` is the copy that became `filePath`, if the path was it;
 * - `released`: no local copy is left and another node holds the content (or
 *   none ever did: a record written through the API); this node's holder
 *   member went;
 * - `deleted`: no local copy is left and this node was the last holder.
 * `localPaths` (kept only) are the record's duplicate paths after the write,
 * and the promoted one: every path on this node the record now names.
 */
export type ReleaseResult =
  | { kind: 'kept', rid: RecordId, promoted?: string, localPaths: string[] }
  | { kind: 'deleted' | 'released', rid: RecordId }
  | { kind: 'not-found' }

/**
 * What `releaseCachedCopy` did: `kept`: a library copy of the record
 * remains on this node, and with it the holder member; `released` /
 * `deleted` as for releaseCopy; `not-found`: no record, or the cache had
 * not said it keeps this one (nothing released).
 */
export type CachedCopyResult =
  | { kind: 'kept' | 'deleted' | 'released', rid: RecordId }
  | { kind: 'not-found' }

/**
 * Another path on this node known to hold the same content, with the size
 * and mtime last seen there when known: what `filePath`, `sizeByte` and
 * `mtimeNano` become if it is promoted.
 */
export interface LocalCopy {
  path: string
  sizeByte?: string
  mtimeNano?: string
}

export interface FileTuple { rid: RecordId, filePath: string, sizeByte: string, mtimeNano: string }
