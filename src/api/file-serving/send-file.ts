/**
 * Streams an opened file with the HTTP caching and range semantics of Go's
 * http.ServeContent, which the original used: Last-Modified / ETag,
 * If-None-Match / If-Modified-Since (304), a single Range (206, 416),
 * If-Range, HEAD without a body. The body is read from the descriptor that
 * was checked, in the stream's own chunks, so memory stays flat for any size.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { decideRange } from './byte-range.js'
import { contentTypeFor } from './content-type.js'
import type { OpenedFile } from './local-path.js'

/** HTTP dates have whole seconds: compare at that precision. */
function seconds (ms: number): number {
  return Math.floor(ms / 1000)
}

function parseHttpDate (s: string | undefined): number | undefined {
  if (s === undefined) return undefined
  const t = Date.parse(s)
  return Number.isNaN(t) ? undefined : seconds(t)
}

function headerText (h: string | string[] | undefined): string | undefined {
  return (Array.isArray(h) ? h[0] : h)?.trim()
}

function etagMatches (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  // Weak comparison (RFC 9110 §8.8.3.2) is what If-None-Match uses.
  const bare = etag.replace(/^W\//, '')
  return header.split(',').some(t => t.trim().replace(/^W\//, '') === bare)
}

/** What the reply headers of a file are made of: the same for a local copy and a peer's. */
interface FileFacts {
  size: number
  mtimeMs: number
  /** A name for its content type (the path, or just the extension). */
  name: string
}

/** The bytes a reply carries, once its headers and status are set. */
type ReplyPlan = { kind: 'not-modified' } | { kind: 'bytes', start: number, end: number, length: number }

/**
 * Sets the file headers and status of `reply` for `req` (200, 206, 304;
 * throws the 416) and says which bytes to send.
 */
export function planFileReply (req: FastifyRequest, reply: FastifyReply, facts: FileFacts): ReplyPlan {
  const { size, mtimeMs } = facts
  const lastModified = new Date(seconds(mtimeMs) * 1000).toUTCString()
  const etag = `"${size.toString(16)}-${Math.floor(mtimeMs).toString(16)}"`
  reply.headers({
    'accept-ranges': 'bytes',
    'last-modified': lastModified,
    etag,
    'content-type': contentTypeFor(facts.name),
    'x-content-type-options': 'nosniff'
  })

  const inm = req.headers['if-none-match']
  const ims = parseHttpDate(req.headers['if-modified-since'])
  if ((inm !== undefined && etagMatches(inm, etag)) || (inm === undefined && ims !== undefined && seconds(mtimeMs) <= ims)) {
    reply.code(304)
    return { kind: 'not-modified' }
  }

  let rangeHeader = req.headers.range
  const ifRange = headerText(req.headers['if-range'])
  if (rangeHeader !== undefined && ifRange !== undefined) {
    // A Range applies only if the client's copy is still current; otherwise it gets the whole new file.
    const current = ifRange.startsWith('"') || ifRange.startsWith('W/')
      ? ifRange === etag
      : parseHttpDate(ifRange) === seconds(mtimeMs)
    if (!current) rangeHeader = undefined
  }
  const range = decideRange(rangeHeader, size)
  if (range.kind === 'unsatisfiable') {
    throw new ApiError(416, 'range_not_satisfiable', `the file has ${size} bytes`, { headers: { 'content-range': `bytes */${size}` } })
  }
  const start = range.kind === 'partial' ? range.start : 0
  const end = range.kind === 'partial' ? range.end : size - 1
  const length = size === 0 ? 0 : end - start + 1
  if (range.kind === 'partial') {
    reply.code(206).header('content-range', `bytes ${start}-${end}/${size}`)
  }
  reply.header('content-length', String(length))
  return { kind: 'bytes', start, end, length }
}

/**
 * Answers `req` with `file` (named `name` for its content type). Takes
 * ownership of the file handle: it is closed when the body ends or when no
 * body is sent.
 */
export async function sendFile (req: FastifyRequest, reply: FastifyReply, file: OpenedFile, name: string): Promise<FastifyReply> {
  const { fh } = file
  let handedOver = false
  try {
    const plan = planFileReply(req, reply, { size: file.size, mtimeMs: file.mtimeMs, name })
    if (plan.kind === 'not-modified' || req.method === 'HEAD' || plan.length === 0) return reply.send()
    const body = fh.createReadStream({ start: plan.start, end: plan.end, autoClose: true })
    handedOver = true
    return reply.send(body)
  } finally {
    if (!handedOver) await fh.close()
  }
}
