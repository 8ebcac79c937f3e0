/**
 * Framing of the byte protocol (`/meta-core/bytes/1.0.0`), without I/O.
 *
 * One stream per request. The requester sends one frame, a request naming a
 * CID and a byte range; the holder answers with one frame, a header (the
 * file's size and mtime, or a refusal), then exactly `length` raw bytes of
 * the file from `offset`, then closes its side. Raw bytes after the header
 * (not one frame per chunk) let the stream's own flow control be the
 * backpressure: the requester pauses the stream, yamux stops granting
 * window, the holder's writes wait for drain.
 *
 * A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON,
 * at most MAX_FRAME_BYTES. `decode*` are the only way bytes from a peer
 * become a request or a header; anything else is a BytesWireError.
 */
import { MetaCoreError } from '../common/index.js'

export const BYTES_PROTOCOL = '/meta-core/bytes/1.0.0'
/** A request or header is a few hundred bytes; anything past this is not ours. */
export const MAX_FRAME_BYTES = 4096
/** Longest CID string the node accepts anywhere (cid/parse-cid.ts: MAX_CID_STRING_LENGTH). */
const MAX_CID_LENGTH = 256
const CID_SHAPE = /^b[a-z2-7]+$/
/** Files beyond 2^53 bytes cannot be addressed by a JS number; nothing a library holds comes near. */
const MAX_OFFSET = Number.MAX_SAFE_INTEGER

export interface BytesRequest {
  v: 1
  cid: string
  /** First byte wanted. */
  offset: number
  /** Bytes wanted from `offset`; 0 asks for the header only (size and mtime). */
  length: number
}

type RefusalCode = 'busy' | 'not-found' | 'bad-request' | 'internal'

export type BytesHeader =
  | {
    ok: true
    /** Size of the holder's file, in bytes. */
    size: number
    /** Its mtime in ms (what Last-Modified and the ETag are made of, as for a local file). */
    mtimeMs: number
    /** Bytes that follow: `min(length, size - offset)`. */
    length: number
    /** The file's extension (".mp4"), for its content type; never its path. */
    ext: string
  }
  | { ok: false, code: RefusalCode, message: string, retryAfterMs?: number }

/** Bytes from a peer that are not a request or header of ours. */
export class BytesWireError extends MetaCoreError {
  constructor (message: string) {
    super('bad_bytes_frame', message)
  }
}

export function encodeFrame (value: BytesRequest | BytesHeader): Uint8Array {
  const body = Buffer.from(JSON.stringify(value), 'utf8')
  if (body.length > MAX_FRAME_BYTES) throw new BytesWireError('frame too large')
  const out = Buffer.allocUnsafe(4 + body.length)
  out.writeUInt32BE(body.length, 0)
  body.copy(out, 4)
  return out
}

/**
 * Splits one frame off the front of `buf`: its JSON and the bytes after it,
 * or undefined when `buf` does not hold the whole frame yet.
 */
export function splitFrame (buf: Buffer): { json: unknown, rest: Buffer } | undefined {
  if (buf.length < 4) return undefined
  const n = buf.readUInt32BE(0)
  if (n > MAX_FRAME_BYTES) throw new BytesWireError(`frame of ${n} bytes is over ${MAX_FRAME_BYTES}`)
  if (buf.length < 4 + n) return undefined
  let json: unknown
  try {
    json = JSON.parse(buf.subarray(4, 4 + n).toString('utf8'))
  } catch {
    throw new BytesWireError('frame is not JSON')
  }
  return { json, rest: buf.subarray(4 + n) }
}

function isCount (x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 && x <= MAX_OFFSET
}

export function decodeRequest (json: unknown): BytesRequest {
  const o = json as Partial<BytesRequest> | null
  if (typeof o !== 'object' || o === null || o.v !== 1) throw new BytesWireError('not a version 1 request')
  if (typeof o.cid !== 'string' || o.cid.length > MAX_CID_LENGTH || !CID_SHAPE.test(o.cid)) throw new BytesWireError('bad cid')
  if (!isCount(o.offset) || !isCount(o.length)) throw new BytesWireError('bad range')
  return { v: 1, cid: o.cid, offset: o.offset, length: o.length }
}

const CODES: readonly RefusalCode[] = ['busy', 'not-found', 'bad-request', 'internal']

export function decodeHeader (json: unknown, req: BytesRequest): BytesHeader {
  const o = json as Record<string, unknown> | null
  if (typeof o !== 'object' || o === null) throw new BytesWireError('header is not an object')
  if (o.ok === false) {
    if (!CODES.includes(o.code as RefusalCode)) throw new BytesWireError('unknown refusal code')
    const retryAfterMs = isCount(o.retryAfterMs) ? Math.min(o.retryAfterMs, 60_000) : undefined
    // A peer's message that is not a string is shown as String() renders it ('[object Object]' for an object).
    // eslint-disable-next-line @typescript-eslint/no-base-to-string
    return { ok: false, code: o.code as RefusalCode, message: String(o.message ?? '').slice(0, 200),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }
  }
  if (o.ok !== true || !isCount(o.size) || !isCount(o.length) || typeof o.mtimeMs !== 'number' || !Number.isFinite(o.mtimeMs)) {
    throw new BytesWireError('bad header')
  }
  // The holder must send what was asked, clipped to its file: anything else would misplace bytes in the reply.
  const expected = Math.max(0, Math.min(req.length, o.size - req.offset))
  if (o.length !== expected) throw new BytesWireError(`header announces ${o.length} bytes, ${expected} expected`)
  const ext = typeof o.ext === 'string' && /^(\.[A-Za-z0-9]{1,16})?$/.test(o.ext) ? o.ext : ''
  return { ok: true, size: o.size, mtimeMs: o.mtimeMs, length: o.length, ext }
}
