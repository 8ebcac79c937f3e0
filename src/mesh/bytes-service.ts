/**
 * What the rest of a node sees of the byte protocol (bytes-wire.ts): a way
 * to open a byte range of a CID on a peer that holds it, the order in which
 * to try holders, and the figures of transfers in both directions. The API
 * streams `/file/<cid>` from it when this node has no copy of its own.
 *
 * The serving side reads through a `LocalFileOpener` the node passes in:
 * the same rules as the local `/file/<cid>` (inside FILES_PATH, the file
 * the record names, unchanged since it was hashed), kept in one function
 * outside the mesh so the mesh never decides which local file is which CID.
 */
import type { FileHandle } from 'node:fs/promises'
import type { BytesHeader } from './bytes-wire.js'

/** A file of this node's own library, opened for serving (the opener checked it). */
export interface ServableFile {
  fh: FileHandle
  size: number
  mtimeMs: number
  /** Extension of the file's name (".mp4"): its content type on the requesting side. */
  ext: string
}

/** This node's own copy of the CID's bytes, or undefined. The caller closes `fh`. */
export type LocalFileOpener = (cid: string) => Promise<ServableFile | undefined>

type OkHeader = Extract<BytesHeader, { ok: true }>
export type Refusal = Extract<BytesHeader, { ok: false }>

/** An open range on a holder: its header, then its bytes. */
export interface RemoteRange {
  ok: true
  header: OkHeader
  /**
   * Exactly `header.length` bytes in order; throws when the holder fails,
   * resets or stalls. Leaving the iteration early closes the stream.
   */
  body: AsyncIterable<Buffer>
  /** Ends the stream (when the body is not read at all). */
  cancel: () => void
}

export interface OpenRangeOptions {
  signal?: AbortSignal
  /** A holder silent for this long (no header, or no bytes while wanted) has stalled (default: the mesh's `stallMs`). */
  idleMs?: number
}

export interface PeerByteFigures {
  peerId: string
  /** Bytes sent to the peer from this node's library. */
  bytesServed: number
  /** Bytes received from the peer for this node's clients. */
  bytesFetched: number
  streamsServed: number
  /** Requests by the peer answered `busy` (its stream or rate limit). */
  busyRefusals: number
  /** Transfers running now, each way. */
  servingNow: number
  fetchingNow: number
}

export interface ByteSource {
  /** `peers` (holder ids) in the order to try them: connected first, then ones with known addresses; never this node. */
  rankHolders: (peers: readonly string[]) => string[]
  /** Opens `length` bytes of `cid` from `offset` on `peer` (length 0: the header only). Throws when the holder cannot be reached. */
  openRange: (peer: string, cid: string, offset: number, length: number, opts?: OpenRangeOptions) => Promise<RemoteRange | Refusal>
  figures: () => PeerByteFigures[]
}
