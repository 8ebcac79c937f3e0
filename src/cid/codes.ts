/**
 * Multicodec / multihash codes MetaMesh uses (docs/design/original.md#identifiers-cids). Custom codes
 * live in 0x1000–0x10FF; 0x1004 is retired and must never be reused.
 */

/** CIDv1 content codecs. */
export const CODEC_RAW = 0x55
export const CODEC_DAG_PB = 0x70

/** Multihash codes (also used as codecs by the "codec == mh" encoders). */
export const MH_IDENTITY = 0x00
export const MH_SHA2_256 = 0x12
export const MH_SHA3_384 = 0x15
export const MH_SHA3_256 = 0x16
export const MH_MIDHASH256 = 0x1000
export const MH_BTIH_V1_FILE = 0x1001
export const MH_BTIH_V2_FILE = 0x1002
export const MH_BTIH_V2 = 0x10b7
// The original's table also names sha1 (0x11), md5 (0xd5), crc32 (0x0132) and bt-pieces-root (0xb702): nothing here encodes or reads them.

/** nzb-posting: codec slot, with a real sha2-256 multihash. */
export const CODEC_NZB_POSTING = 0x1003

/** Locator codecs (multihash is identity; the meaning is in the codec slot). */
export const CODEC_NZB_RELEASE = 0x1005
export const CODEC_URL = 0x1006
export const CODEC_CARD = 0x1007
export const CODEC_YT_VIDEO = 0x1008
export const CODEC_EXT_PLAY = 0x1009
export const CODEC_PROVIDER_FILE = 0x100a

/** Largest digest any MetaMesh component accepts (the original's MAX_MULTIHASH_SIZE: docs/design/original.md#identifiers-cids). */
export const MAX_DIGEST_BYTES = 64

/**
 * Largest codec or multihash code a CID may carry: 2^49 − 1, seven varint
 * bytes. Every code in the multicodec table fits in four; the cap keeps codes
 * exact JS numbers (the varint reader loses precision past 2^53), so a parsed
 * CID always re-encodes to the same string.
 */
export const MAX_CODE = 2 ** 49 - 1
