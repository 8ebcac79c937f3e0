/**
 * CIDs: strict parsing, the rank ladder and canonical choice, and the file
 * digests the store computes itself (midhash256; full-file sha2-256 and the
 * IPFS UnixFS CID, both in one read: content-cids.ts).
 * Encoding and decoding go through multiformats (`CID`, `base32`, `varint`,
 * `Digest`); what is ours is the strictness on top of it, the rank ladder,
 * the midhash256 multihash (0x1000) and its sampling.
 *
 * Guarantees:
 * - A `Cid` is only ever a CIDv1 in multibase base32-lower with its single
 *   canonical spelling (lower-case, no padding, zero trailing bits, minimal
 *   varints, codes below 2^49, digest ≤ 64 B whose length matches its varint).
 *   CIDv0, other bases and the retired `<algo>:<cid>` token form are refused with
 *   InvalidCidError (`invalid_cid`). Parsing checks structure only: a sha1 or
 *   crc32 CID is a valid CID, it just ranks 0.
 * - `cidRank` / `canonicalCid` follow docs/design/data-model.md#canonical-cid and the shared vectors
 *   (test/fixtures/cid-rank-vectors.json) exactly; anything `parseCid` refuses
 *   ranks 0. The election is a total order, so every peer agrees.
 * - Hashing never holds a whole file in memory; midhash256 reads at most its
 *   1 MiB sample; the full-content CIDs stream the file once. File-system errors (ENOENT, EACCES…) propagate unchanged.
 */
export { parseCid, isCid, decodeCid, MAX_CID_STRING_LENGTH } from './parse-cid.js'
export type { Cid } from './parse-cid.js'
export { encodeCidV1 } from './encode-cid.js'
export { encodeBase32Lower } from './base32.js'
export { cidRank, betterCid, canonicalCid, compareBytewise } from './cid-rank.js'
export {
  midhash256, midhash256FromSample, midhashCidFromDigest, midhashSampleRange, MIDHASH_SAMPLE_BYTES
} from './midhash256.js'
export { sha256FileCid } from './sha256-file-cid.js'
export { contentCids, FULL_HASH_ALGORITHMS, IPFS_CHUNK_BYTES } from './content-cids.js'
export type { ContentCids, ContentCidOptions, FullHashAlgorithm } from './content-cids.js'
export type { FileDigest } from './file-digest.js'
export { InvalidCidError, ShortReadError, NotAFileError } from './errors.js'
export * from './codes.js'
