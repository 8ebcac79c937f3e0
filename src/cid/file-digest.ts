import { AbortedError } from '../common/index.js'
import type { Cid } from './parse-cid.js'

/** What hashing a file yields: the CID, its raw digest, and the size that was hashed. */
export interface FileDigest {
  cid: Cid
  digest: Uint8Array
  /** Bytes: for midhash256 the size mixed into the hash, for sha256 the bytes streamed. */
  size: number
}

export interface HashFileOptions {
  signal?: AbortSignal
  /** Refuse a symlink instead of following it (the caller resolved the path already and wants exactly that file). */
  noFollow?: boolean
}

/** Plain Uint8Array view of a Buffer, so callers compare digests without Buffer semantics. */
export function toUint8Array (b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
}

/** Hashing checks its signal between reads; an abort surfaces as AbortedError. */
export function throwIfAborted (signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new AbortedError('aborted while hashing', { cause: signal.reason })
}

