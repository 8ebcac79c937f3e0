/**
 * A file's full-content CIDs in one read of it:
 *
 * - `sha2-256`: SHA-256 of every byte, in the raw-codec spelling (`bafkrei…`,
 *   bytes `01 55 12 20 ‖ digest`), the one `POST /file/cid` answers;
 * - `ipfs`: the UnixFS dag-pb root that `ipfs add --cid-version=1
 *   --raw-leaves=true --chunker=size-262144` gives (docs/design/original.md#ipfs-bittorrent-locators): 256 KiB raw
 *   leaves under a balanced tree of at most 174 links per node. A file of
 *   one chunk or less is its own raw leaf, so its IPFS CID is its sha2-256
 *   CID. The layout is the field's own importer's (ipfs-unixfs-importer, the
 *   js-ipfs one, kubo's rules) fed our reads; its blocks are not kept.
 *
 * From the same bytes it also gives the midhash256 they make, so a caller
 * can tell that the bytes it read are the content it meant to read.
 */
import { createHash } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { InvalidInputError, openRegularFile } from '../common/index.js'
import { CODEC_RAW, MH_SHA2_256 } from './codes.js'
import { encodeCidV1 } from './encode-cid.js'
import { ShortReadError } from './errors.js'
import { throwIfAborted, toUint8Array, type HashFileOptions } from './file-digest.js'
import { midhash256FromSample, midhashCidFromDigest, midhashSampleRange } from './midhash256.js'
import type { Cid } from './parse-cid.js'

/** The names `META_CORE_FULL_HASH` takes. */
export const FULL_HASH_ALGORITHMS = ['sha2-256', 'ipfs'] as const
export type FullHashAlgorithm = typeof FULL_HASH_ALGORITHMS[number]

/** kubo's `size-262144` chunker: the leaf size of the IPFS CID. */
export const IPFS_CHUNK_BYTES = 262_144
/** kubo's balanced layout: links per dag-pb node. */
const IPFS_MAX_LINKS = 174
/** Read size per step: 4 leaves, few syscalls, bounded memory (the importer holds a few reads while it hashes leaves). */
const READ_BYTES = 1_048_576

export interface ContentCids {
  /** Bytes read (the size asked for). */
  size: number
  /** The midhash256 of the bytes read. */
  midhash: Cid
  sha256?: Cid
  ipfs?: Cid
  /**
   * The file's size and mtime (ns) on the open handle before the first read and after the last: equal when nothing wrote to it
   * meanwhile (as far as a stat can tell).
   */
  before: { size: number, mtimeNs: bigint }
  after: { size: number, mtimeNs: bigint }
}

export interface ContentCidOptions extends HashFileOptions {
  /** Bytes to read: the file's size as the caller knows it. A file that ends sooner throws ShortReadError. */
  size: number
  algorithms: readonly FullHashAlgorithm[]
  /** Awaited before each read of `bytes`: the caller's rate bound and pause. */
  gate?: (bytes: number) => Promise<void>
  /** Called after each read with the bytes it returned. */
  onRead?: (bytes: number) => void
}

/** Discards the importer's blocks: only the CIDs are wanted. */
const NO_BLOCKS = { put: async (cid: CID) => cid }

/** The CIDs of `algorithms` for the file at `path`, in one sequential read of `size` bytes. */
export async function contentCids (path: string, opts: ContentCidOptions): Promise<ContentCids> {
  const { size, signal } = opts
  if (!Number.isSafeInteger(size) || size < 0) throw new InvalidInputError('file size must be a non-negative integer')
  throwIfAborted(signal)
  const { fh } = await openRegularFile(path, opts)
  try {
    const st0 = await fh.stat({ bigint: true })
    const sha = opts.algorithms.includes('sha2-256') || opts.algorithms.includes('ipfs') ? createHash('sha256') : undefined
    const range = midhashSampleRange(size)
    const sample = Buffer.alloc(range.length)
    let pos = 0
    // Fresh buffers: the importer keeps a read until its leaves are hashed.
    async function * reads (): AsyncGenerator<Uint8Array> {
      while (pos < size) {
        throwIfAborted(signal)
        const want = Math.min(READ_BYTES, size - pos)
        await opts.gate?.(want)
        throwIfAborted(signal)
        const buf = Buffer.allocUnsafe(want)
        const { bytesRead } = await fh.read(buf, 0, want, pos)
        if (bytesRead === 0) throw new ShortReadError(`file ended after ${pos} of ${size} bytes`)
        const got = buf.subarray(0, bytesRead)
        sha?.update(got)
        const from = Math.max(pos, range.offset)
        const to = Math.min(pos + bytesRead, range.offset + range.length)
        if (from < to) got.copy(sample, from - range.offset, from - pos, to - pos)
        pos += bytesRead
        opts.onRead?.(bytesRead)
        yield got
      }
    }
    let ipfs: Cid | undefined
    if (opts.algorithms.includes('ipfs')) {
      ipfs = await ipfsRoot(reads())
    } else {
      for await (const _ of reads()) { /* hashed as read */ }
    }
    throwIfAborted(signal)
    const st1 = await fh.stat({ bigint: true })
    const out: ContentCids = {
      size,
      midhash: midhashCidFromDigest(midhash256FromSample(size, sample)),
      before: { size: Number(st0.size), mtimeNs: st0.mtimeNs },
      after: { size: Number(st1.size), mtimeNs: st1.mtimeNs }
    }
    if (sha !== undefined) {
      const digest = encodeCidV1(CODEC_RAW, MH_SHA2_256, toUint8Array(sha.digest()))
      if (opts.algorithms.includes('sha2-256')) out.sha256 = digest
      // One chunk or less: the single raw leaf is the file (docs/design/original.md#ipfs-bittorrent-locators). The importer says the
      // same; this is its own check.
      if (ipfs !== undefined && size <= IPFS_CHUNK_BYTES && ipfs !== digest) throw new Error(`the IPFS CID of a one-leaf file must be its raw sha2-256 CID (${ipfs} ≠ ${digest})`)
    }
    if (ipfs !== undefined) out.ipfs = ipfs
    return out
  } finally {
    await fh.close()
  }
}

/**
 * The importer, loaded on first use: it costs a node's start (and every
 * command's, `status` and `keygen` included) about a sixth of a second, and
 * only the background full hash needs it.
 */
let unixfs: Promise<{
  importer: typeof import('ipfs-unixfs-importer').importer
  fixedSize: typeof import('ipfs-unixfs-importer/chunker').fixedSize
  balanced: typeof import('ipfs-unixfs-importer/layout').balanced
}> | undefined

async function loadImporter (): Promise<Awaited<NonNullable<typeof unixfs>>> {
  unixfs ??= Promise.all([import('ipfs-unixfs-importer'), import('ipfs-unixfs-importer/chunker'), import('ipfs-unixfs-importer/layout')])
    .then(([i, c, l]) => ({ importer: i.importer, fixedSize: c.fixedSize, balanced: l.balanced }))
  return await unixfs
}

async function ipfsRoot (content: AsyncIterable<Uint8Array>): Promise<Cid> {
  const { importer, fixedSize, balanced } = await loadImporter()
  let root: CID | undefined
  const entries = importer([{ content }], NO_BLOCKS, {
    cidVersion: 1,
    rawLeaves: true,
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: IPFS_CHUNK_BYTES }),
    layout: balanced({ maxChildrenPerNode: IPFS_MAX_LINKS }),
    fieldOrder: 'links-first',
    wrapWithDirectory: false
  })
  for await (const e of entries) root = e.cid
  if (root === undefined) throw new Error('the UnixFS importer gave no root')
  return encodeCidV1(root.code, root.multihash.code, root.multihash.digest)
}
