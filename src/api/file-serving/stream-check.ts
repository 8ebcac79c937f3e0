/**
 * Checks bytes from a peer against the record's CIDs while they stream
 * through, for the CIDs that can be checked that way:
 *
 * - a sha2-256 CID (raw-codec spelling `bafkrei…`, which the watcher adds
 *   in the background, or the meta-hash spelling `baejbei…`), when the
 *   transfer is the whole file (the digest covers every byte, so a range
 *   cannot be checked against it);
 * - a midhash256 CID, when the transfer covers its sample (the whole file up
 *   to 1 MiB, else the 1 MiB in the middle): a whole-file transfer always
 *   does, a range only when it spans the middle MiB, and then only those
 *   bytes are proven.
 *
 * Other CIDs (dag-pb, BitTorrent, NZB, locators) need more than the bytes of
 * one pass, and a range outside the sample is checked by nothing but its
 * length: docs/api.md says so.
 */
import { createHash, type Hash } from 'node:crypto'
import { CODEC_RAW, decodeCid, midhash256FromSample, midhashSampleRange, MH_MIDHASH256, MH_SHA2_256 } from '../../cid/index.js'

export class StreamCheck {
  private readonly sha: Array<{ cid: string, digest: Uint8Array }> = []
  private readonly mid: Array<{ cid: string, digest: Uint8Array }> = []
  private readonly hash: Hash | undefined
  private readonly sample: { offset: number, length: number, buf: Buffer } | undefined

  /** For the bytes `start`…`end` (inclusive) of a file of `size` bytes whose record lists `cids`. */
  constructor (cids: readonly string[], private readonly size: number, start: number, end: number) {
    const whole = start === 0 && end === size - 1
    for (const cid of cids) {
      const d = decodeCid(cid)
      if (d === undefined) continue
      if (whole && (d.codec === CODEC_RAW || d.codec === MH_SHA2_256) && d.mhCode === MH_SHA2_256) this.sha.push({ cid, digest: d.digest })
      if (d.mhCode === MH_MIDHASH256) this.mid.push({ cid, digest: d.digest })
    }
    if (this.sha.length > 0) this.hash = createHash('sha256')
    const r = midhashSampleRange(size)
    if (this.mid.length > 0 && r.offset >= start && r.offset + r.length - 1 <= end) {
      this.sample = { ...r, buf: Buffer.alloc(r.length) }
    } else {
      this.mid.length = 0
    }
  }

  /** CIDs this transfer is checked against. */
  get checked (): string[] {
    return [...this.sha, ...this.mid].map(c => c.cid)
  }

  /** `chunk` holds the file's bytes from offset `at`; chunks come in order. */
  update (chunk: Buffer, at: number): void {
    this.hash?.update(chunk)
    const s = this.sample
    if (s === undefined) return
    const from = Math.max(at, s.offset)
    const to = Math.min(at + chunk.length, s.offset + s.length)
    if (from < to) chunk.copy(s.buf, from - s.offset, from - at, to - at)
  }

  /** The CIDs the bytes did not match (empty: all checks passed). Call once, after the last chunk. */
  mismatches (): string[] {
    const bad: string[] = []
    if (this.hash !== undefined) {
      const got = this.hash.digest()
      for (const c of this.sha) if (!got.equals(c.digest)) bad.push(c.cid)
    }
    if (this.sample !== undefined) {
      const got = Buffer.from(midhash256FromSample(this.size, this.sample.buf))
      for (const c of this.mid) if (!got.equals(c.digest)) bad.push(c.cid)
    }
    return bad
  }
}
