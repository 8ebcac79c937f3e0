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

export type ReleaseResult = { kind: 'deleted' | 'released' | 'not-found', rid?: RecordId }

export interface FileTuple { rid: RecordId, filePath: string, sizeByte: string, mtimeNano: string }
