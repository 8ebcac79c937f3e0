/**
 * Which file of this node's library may be served to a peer as a CID: the
 * one function the byte protocol's serving side reads through (the node
 * passes it to the mesh). The rules are the local `/file/<cid>` route's
 * (local-path.ts: a stored `/files/…` path, resolved inside FILES_PATH, a
 * regular file opened without following a final symlink), and one more a
 * peer needs because it cannot look at our disk: the file is the one the
 * record names, with the size and mtime the record layer holds for it, so
 * a file changed since it was hashed (and not yet hashed again) is never
 * served as that CID. A copy whose size and mtime the record layer does
 * not hold (a duplicate path) is not served to peers.
 *
 * When the location fields become this node's own (not replicated), this
 * is the place that reads them; the protocol does not change.
 */
import path from 'node:path'
import { CODEC_YT_VIDEO, decodeCid, isCid } from '../../cid/index.js'
import type { ServableFile } from '../../mesh/index.js'
import type { Records } from '../../records/index.js'
import { findLocalCopy } from './local-copy.js'

export async function openServableCopy (records: Records, filesPath: string, cid: string): Promise<ServableFile | undefined> {
  if (!isCid(cid) || decodeCid(cid)?.codec === CODEC_YT_VIDEO) return undefined
  const doc = records.read(() => records.getDocument(cid))
  if (doc === undefined) return undefined
  const { filePath, sizeByte, mtimeNano } = doc.metadata
  if (filePath === undefined || sizeByte === undefined || mtimeNano === undefined) return undefined
  const copy = await findLocalCopy([filePath], filesPath)
  if (copy === undefined) return undefined
  const st = await copy.file.fh.stat({ bigint: true })
  if (String(st.size) !== sizeByte || String(st.mtimeNs) !== mtimeNano) {
    await copy.file.fh.close()
    return undefined
  }
  return { fh: copy.file.fh, size: copy.file.size, mtimeMs: copy.file.mtimeMs, ext: path.extname(copy.rel) }
}
