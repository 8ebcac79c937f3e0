import { createHash } from 'node:crypto'
import { openRegularFile } from '../common/index.js'
import { CODEC_RAW, MH_SHA2_256 } from './codes.js'
import { encodeCidV1 } from './encode-cid.js'
import { throwIfAborted, toUint8Array } from './file-digest.js'
import type { FileDigest, HashFileOptions } from './file-digest.js'

/** Read size per step: large enough to keep syscalls rare, small enough to bound memory. */
const CHUNK_BYTES = 1_048_576

/**
 * Full-file SHA-256 as the raw-codec CIDv1 (`bafkrei…`, bytes `01 55 12 20 ‖
 * digest`), the spelling `POST /file/cid`, the gateway and IPFS leaves use.
 * Streams through one reused 1 MiB buffer: memory stays flat for any size.
 * `size` is the number of bytes actually hashed (a file growing during the
 * read is hashed up to where the reads stopped).
 */
export async function sha256FileCid (path: string, opts: HashFileOptions = {}): Promise<FileDigest> {
  const { signal } = opts
  throwIfAborted(signal)
  const { fh } = await openRegularFile(path, opts)
  try {
    const hash = createHash('sha256')
    const buf = Buffer.allocUnsafe(CHUNK_BYTES)
    let size = 0
    for (;;) {
      throwIfAborted(signal)
      const { bytesRead } = await fh.read(buf, 0, CHUNK_BYTES, null)
      if (bytesRead === 0) break
      // update() consumes the bytes synchronously, so reusing `buf` is safe.
      hash.update(buf.subarray(0, bytesRead))
      size += bytesRead
    }
    const digest = toUint8Array(hash.digest())
    return { cid: encodeCidV1(CODEC_RAW, MH_SHA2_256, digest), digest, size }
  } finally {
    await fh.close()
  }
}
