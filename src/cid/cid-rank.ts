import {
  CODEC_CARD, CODEC_DAG_PB, CODEC_EXT_PLAY, CODEC_NZB_POSTING, CODEC_NZB_RELEASE, CODEC_PROVIDER_FILE,
  CODEC_URL, CODEC_YT_VIDEO, MH_BTIH_V1_FILE, MH_BTIH_V2, MH_BTIH_V2_FILE, MH_MIDHASH256, MH_SHA2_256,
  MH_SHA3_256, MH_SHA3_384
} from './codes.js'
import { inspectCid } from './parse-cid.js'

/** Rank tiers (docs/design/data-model.md#canonical-cid): utility for external retrieval, not cryptographic strength. */
const RANK_DAG_PB = 40
const RANK_CONTENT_DIGEST = 30
const RANK_NZB_POSTING = 25
const RANK_BITTORRENT = 20
const RANK_MIDHASH = 10
const RANK_LOCATOR = 5
const RANK_NONE = 0

const isBitTorrent = (code: number): boolean =>
  code === MH_BTIH_V1_FILE || code === MH_BTIH_V2_FILE || code === MH_BTIH_V2

const isLocator = (codec: number): boolean =>
  codec === CODEC_NZB_RELEASE || codec === CODEC_URL || codec === CODEC_CARD ||
  codec === CODEC_YT_VIDEO || codec === CODEC_EXT_PLAY || codec === CODEC_PROVIDER_FILE

/**
 * The rank ladder's classification (docs/design/data-model.md#canonical-cid), steps in order (the order is load-bearing:
 * nzb-posting carries a real sha2-256 mh and must be caught on its codec
 * before the mh switch; locators carry identity mh and only the codec names
 * them).
 *
 * Step 1 ("any failure → 0") uses the same strict decoder as `parseCid`,
 * not the original's upper-casing one: a string the store would refuse to
 * hold ranks 0. This matters for the tie-break — `bAFK…` sorts before
 * `bafk…` byte-wise, so a lenient rank would let a non-canonical spelling win
 * the election over its own lower-case twin. Every fixture vector agrees.
 */
export function cidRank (s: unknown): number {
  const h = inspectCid(s)
  if (typeof h === 'string') return RANK_NONE
  const { codec, mhCode } = h
  if (codec === CODEC_DAG_PB) return RANK_DAG_PB
  if (isBitTorrent(codec) || isBitTorrent(mhCode)) return RANK_BITTORRENT
  if (isLocator(codec)) return RANK_LOCATOR
  if (codec === CODEC_NZB_POSTING) return RANK_NZB_POSTING
  if (mhCode === MH_SHA2_256 || mhCode === MH_SHA3_256 || mhCode === MH_SHA3_384) return RANK_CONTENT_DIGEST
  if (mhCode === MH_MIDHASH256) return RANK_MIDHASH
  return RANK_NONE
}

/**
 * Byte-wise (UTF-8) string order, as the Go original's `a < b`. JS `<`
 * compares UTF-16 code units, which differs from UTF-8 byte order only
 * between surrogates and U+E000–U+FFFF; remapping those two ranges restores
 * code-point order. Strict CIDs are ASCII, so the remap only ever matters for
 * rank-0 junk, but the election must still agree across peers.
 */
export function compareBytewise (a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    let ca = a.charCodeAt(i)
    let cb = b.charCodeAt(i)
    if (ca === cb) continue
    if (ca >= 0xd800 && cb >= 0xd800) {
      ca = ca >= 0xe000 ? ca - 0x800 : ca + 0x2000
      cb = cb >= 0xe000 ? cb - 0x800 : cb + 0x2000
    }
    return ca - cb
  }
  return a.length - b.length
}

/** The better of two CIDs: higher rank, then the byte-wise smaller string. */
export function betterCid<T extends string> (a: T, b: T): T {
  const ra = cidRank(a)
  const rb = cidRank(b)
  if (ra !== rb) return ra > rb ? a : b
  return compareBytewise(a, b) <= 0 ? a : b
}

/**
 * Fold of `betterCid` over a record's CIDs; undefined for none. The result
 * does not depend on iteration order (rank then string is a total order), so
 * every peer elects the same canonical CID from the same set.
 */
export function canonicalCid<T extends string> (cids: Iterable<T>): T | undefined {
  let best: T | undefined
  let bestRank = -1
  for (const c of cids) {
    const r = cidRank(c)
    if (best === undefined || r > bestRank || (r === bestRank && compareBytewise(c, best) < 0)) {
      best = c
      bestRank = r
    }
  }
  return best
}
