import type { KvStore } from '../../kv/index.js'
import { fieldKey, type RecordDocument } from '../../records/index.js'
import { openServableFile, relativeOfStored, resolveInside, type OpenedFile } from './local-path.js'

export interface LocalCopy {
  file: OpenedFile
  /** Path relative to FILES_PATH (what `/api/file/{cid}/info` shows). */
  rel: string
}

/**
 * This node's own copy of a record's bytes. Candidates, in order: the
 * record's `filePath`, then each group member's own `filePath` (two nodes
 * that minted the same content separately each hold their path on their own
 * root; the merged document shows only the newest), then this node's
 * duplicate paths. The first that resolves inside FILES_PATH to a regular
 * file wins; the caller owns the returned handle.
 */
export async function findLocalCopy (kv: KvStore, filesPath: string, doc: RecordDocument): Promise<LocalCopy | undefined> {
  const candidates: string[] = []
  const add = (p: string | undefined): void => { if (p !== undefined && !candidates.includes(p)) candidates.push(p) }
  add(doc.metadata.filePath)
  for (const m of doc.members) add(kv.get(fieldKey(m, 'filePath')))
  for (const d of doc.duplicates) add(d)
  for (const stored of candidates) {
    const rel = relativeOfStored(stored)
    if (rel === undefined) continue
    const r = await resolveInside(filesPath, rel)
    if (r.kind !== 'ok') continue
    const file = await openServableFile(r.real)
    if (file !== undefined) return { file, rel: r.rel }
  }
  return undefined
}
