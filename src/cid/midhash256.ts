import { createHash } from 'node:crypto'
import { InvalidInputError, openRegularFile } from '../common/index.js'
import { MH_MIDHASH256 } from './codes.js'
import { encodeCidV1 } from './encode-cid.js'
import { ShortReadError } from './errors.js'
import { throwIfAborted, toUint8Array } from './file-digest.js'
import type { FileDigest, HashFileOptions } from './file-digest.js'
import type { Cid } from './parse-cid.js'

/** 1 MiB: the fixed sample width of midhash256 (docs/design/original.md#midhash256, step 2). */
export const MIDHASH_SAMPLE_BYTES = 1_048_576

/** midhash256 digests are SHA-256 output. */
const DIGEST_BYTES = 32

interface MidhashOptions extends HashFileOptions {
  /**
   * Total file size in bytes, when the caller already has it (the watcher's
   * directory walk does, as the Go original): the sample is taken for this
   * size, so the digest names what the caller saw; a stale value that points
   * past the end of the file ends in ShortReadError.
   */
  size?: number
}

/**
 * Which bytes are hashed: the whole file up to and including 1 MiB, else the
 * 1 MiB starting at floor((size − 1 MiB) / 2).
 */
export function midhashSampleRange (size: number): { offset: number, length: number } {
  checkSize(size)
  if (size <= MIDHASH_SAMPLE_BYTES) return { offset: 0, length: size }
  return { offset: Math.floor((size - MIDHASH_SAMPLE_BYTES) / 2), length: MIDHASH_SAMPLE_BYTES }
}

/** SHA-256(u64be(size) ‖ sample). Pure; `sample` must be exactly the range `midhashSampleRange(size)` names. */
export function midhash256FromSample (size: number, sample: Uint8Array): Uint8Array {
  const { length } = midhashSampleRange(size)
  if (sample.length !== length) throw new InvalidInputError(`midhash sample must be ${length} bytes, got ${sample.length}`)
  const prefix = Buffer.alloc(8)
  prefix.writeBigUInt64BE(BigInt(size))
  return toUint8Array(createHash('sha256').update(prefix).update(sample).digest())
}

/** `bagacbabae…`: codec = mh = 0x1000, the convention the watcher and records use. */
export function midhashCidFromDigest (digest: Uint8Array): Cid {
  if (digest.length !== DIGEST_BYTES) throw new InvalidInputError(`midhash digest must be ${DIGEST_BYTES} bytes`)
  return encodeCidV1(MH_MIDHASH256, MH_MIDHASH256, digest)
}

/**
 * midhash256 of the file at `path`. Reads only the sample (≤ 1 MiB) with
 * positioned reads on one file handle, whatever the file's size, so hashing
 * a 50 GB video costs the same as a 2 MB one.
 */
export async function midhash256 (path: string, opts: MidhashOptions = {}): Promise<FileDigest> {
  const { signal } = opts
  throwIfAborted(signal)
  // Refuses anything but a regular file before reading; fstat on the open handle: the size and the bytes come from the same inode.
  const opened = await openRegularFile(path, opts)
  const fh = opened.fh
  try {
    const size = opts.size ?? opened.st.size
    const { offset, length } = midhashSampleRange(size)
    // allocUnsafe is safe here only because every byte is overwritten before
    // hashing: on a short read we throw instead of hashing leftover memory.
    const sample = Buffer.allocUnsafe(length)
    let got = 0
    while (got < length) {
      throwIfAborted(signal)
      const { bytesRead } = await fh.read(sample, got, length - got, offset + got)
      // Refuse rather than zero-fill (the Go original zero-fills): see ShortReadError.
      if (bytesRead === 0) throw new ShortReadError(`file ended after ${offset + got} of ${size} bytes`)
      got += bytesRead
    }
    throwIfAborted(signal)
    const digest = midhash256FromSample(size, sample)
    return { cid: midhashCidFromDigest(digest), digest, size }
  } finally {
    await fh.close()
  }
}

function checkSize (size: number): void {
  if (!Number.isSafeInteger(size) || size < 0) throw new InvalidInputError('file size must be a non-negative integer')
}
