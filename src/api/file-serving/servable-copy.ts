/**
 * Which file of this node's library may be served to a peer as a CID: the
 * one function the byte protocol's serving side reads through (the node
 * passes it to the mesh). The rules are the local `/file/<cid>` route's
 * (local-path.ts: the record's stored `/files/…` paths, resolved inside
 * FILES_PATH, a regular file opened without following a final symlink), and
 * one more a peer needs because it cannot look at our disk: the file must
 * have the size and mtime it had when it was hashed as this content, so a
 * file changed since (and not hashed again yet) is never served as that CID.
 *
 * Size and mtime come from what this node's watcher recorded for the path
 * (`recorded`: node-local, right for every copy, duplicates included), else,
 * for the path the record names, from the record's own `sizeByte` and
 * `mtimeNano`. A copy with neither is not served to peers. When the record's
 * location fields become this node's own, this is the place that reads
 * them; the protocol does not change.
 */
import path from 'node:path'
import { CODEC_YT_VIDEO, decodeCid, isCid } from '../../cid/index.js'
import type { ServableFile } from '../../mesh/index.js'
import type { RecordDocument, Records } from '../../records/index.js'
import { findLocalCopy } from './local-copy.js'
import { relativeOfStored } from './local-path.js'

/** What this node recorded when it hashed the file at `rel` (relative to FILES_PATH). */
type RecordedFile = (rel: string) => { size: number, mtimeNs: string, cid: string } | undefined

export async function openServableCopy (records: Records, filesPath: string, cid: string, recorded?: RecordedFile): Promise<ServableFile | undefined> {
  if (!isCid(cid) || decodeCid(cid)?.codec === CODEC_YT_VIDEO) return undefined
  const doc = records.read(() => records.getDocument(cid))
  if (doc === undefined) return undefined
  for (const stored of records.copyPaths(doc)) {
    const expected = expectedState(doc, stored, recorded)
    if (expected === undefined) continue
    const copy = await findLocalCopy([stored], filesPath)
    if (copy === undefined) continue
    const st = await copy.file.fh.stat({ bigint: true })
    if (String(st.size) === expected.size && String(st.mtimeNs) === expected.mtimeNs) {
      return { fh: copy.file.fh, size: copy.file.size, mtimeMs: copy.file.mtimeMs, ext: path.extname(copy.rel) }
    }
    await copy.file.fh.close()
  }
  return undefined
}

/** The size and mtime the copy at `stored` had when it was hashed as this record's content, if known. */
function expectedState (doc: RecordDocument, stored: string, recorded: RecordedFile | undefined): { size: string, mtimeNs: string } | undefined {
  const rel = relativeOfStored(stored)
  const r = rel === undefined ? undefined : recorded?.(rel)
  if (r !== undefined) return doc.cids.includes(r.cid) ? { size: String(r.size), mtimeNs: r.mtimeNs } : undefined
  const { filePath, sizeByte, mtimeNano } = doc.metadata
  return stored === filePath && sizeByte !== undefined && mtimeNano !== undefined ? { size: sizeByte, mtimeNs: mtimeNano } : undefined
}
