import { openServableFile, relativeOfStored, resolveInside, type OpenedFile } from './local-path.js'

export interface LocalCopy {
  file: OpenedFile
  /** Path relative to FILES_PATH (what `/api/file/{cid}/info` shows). */
  rel: string
}

/**
 * This node's own copy of a record's bytes, from the stored paths the record
 * layer lists in order (`records.copyPaths`: the record's `filePath`, each
 * group member's own `filePath`, this node's duplicate paths). The first that
 * resolves inside FILES_PATH to a regular file wins; the caller owns the
 * returned handle.
 */
export async function findLocalCopy (candidates: readonly string[], filesPath: string): Promise<LocalCopy | undefined> {
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
