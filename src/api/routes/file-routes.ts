/**
 * File bytes by CID (docs/design/original.md#routes): `GET|HEAD /file/{cid}` and its alias
 * `/api/file/{cid}`, `GET /api/file/{cid}/info`, `POST /file/cid`,
 * `POST /api/files/register`, `GET /api/files/tuples`.
 *
 * Bytes come from this node's own copy under FILES_PATH (see
 * file-serving/local-path.ts for how a stored path is checked), else from a
 * peer that holds the file (file-serving/remote-file.ts).
 */
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CODEC_YT_VIDEO, decodeCid, parseCid, sha256FileCid } from '../../cid/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError, ComponentUnavailableError, UnknownCidError } from '../errors.js'
import { contentTypeFor } from '../file-serving/content-type.js'
import { findLocalCopy } from '../file-serving/local-copy.js'
import { checkClientRelative, openServableFile, resolveInside, type OpenedFile } from '../file-serving/local-path.js'
import { RemoteFiles } from '../file-serving/remote-file.js'
import { sendFile } from '../file-serving/send-file.js'
import { withErrors } from '../wire/kit.js'
import { ByteResponses, CidOfFile, FileInfo, PathBody, RegisterReply, Tuples, TuplesQuery } from '../wire/files.js'
import { CidParams } from '../wire/records.js'

/** A yt-video locator names a stream, not bytes: its byte route answers 400 (docs/design/original.md#ipfs-bittorrent-locators). */
function refuseUnfetchable (cid: string): void {
  if (decodeCid(cid)?.codec === CODEC_YT_VIDEO) throw new ApiError(400, 'not_fetchable', 'a yt-video CID has no bytes to serve')
}

export function fileRoutes (app: ApiScope, ctx: ApiContext): void {
  let remoteFiles: RemoteFiles | undefined
  // Looked up per request: the mesh's byte source exists once the mesh has started.
  const remote = (): RemoteFiles | undefined => {
    const bytes = ctx.mesh?.bytes
    if (bytes === undefined) return undefined
    remoteFiles ??= new RemoteFiles(bytes, ctx.metrics.bytes, ctx.log.child('bytes'), ctx.clock, ctx.byteCache)
    return remoteFiles
  }
  const serve = async (requested: string, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const cid = parseCid(requested)
    refuseUnfetchable(cid)
    const doc = ctx.read(() => ctx.records.getDocument(cid))
    if (doc === undefined) throw new UnknownCidError('file not found for CID')
    const copy = await findLocalCopy(ctx.records.copyPaths(doc), ctx.filesPath)
    if (copy === undefined) {
      const cached = await openCached(ctx, doc.rid)
      if (cached !== undefined) return await sendFile(req, reply, cached, doc.metadata.filePath ?? '')
      const r = remote()
      if (r === undefined) throw new UnknownCidError('file does not exist on disk')
      return await r.serve(req, reply, doc, cid)
    }
    return await sendFile(req, reply, copy.file, copy.rel)
  }

  const byteSchema = (summary: string) => ({
    summary,
    tags: ['file'],
    security: [],
    params: CidParams,
    produces: ['application/octet-stream'],
    response: withErrors(ByteResponses, 404, 416)
  })

  // HEAD is registered with GET on purpose (not fastify's automatic HEAD route) so a HEAD never opens a read stream.
  for (const url of ['/file/:cid', '/api/file/:cid']) {
    app.route({
      method: ['GET', 'HEAD'],
      url,
      exposeHeadRoute: false,
      config: { public: true },
      schema: byteSchema(url === '/file/:cid' ? 'The file\'s bytes (Range, If-Range, If-Modified-Since, HEAD)' : 'Alias of /file/{cid}'),
      handler: async (req, reply) => await serve(req.params.cid, req, reply)
    })
  }

  app.get('/api/file/:cid/info', {
    config: { public: true },
    schema: {
      summary: 'Whether this node holds the file, and what it is',
      tags: ['file'],
      security: [],
      params: CidParams,
      response: withErrors({ 200: FileInfo })
    }
  }, async (req) => {
    const cid = parseCid(req.params.cid)
    const doc = ctx.read(() => ctx.records.getDocument(cid))
    if (doc === undefined) return { exists: false }
    const copy = await findLocalCopy(ctx.records.copyPaths(doc), ctx.filesPath)
    if (copy === undefined) return { exists: false }
    await copy.file.fh.close()
    return { exists: true, contentType: contentTypeFor(copy.rel), size: copy.file.size, filePath: copy.rel }
  })

  app.post('/file/cid', {
    schema: {
      summary: 'Full-file SHA-256 of a file under FILES_PATH, as a raw-codec CIDv1',
      tags: ['file'],
      body: PathBody,
      response: withErrors({ 200: CidOfFile }, 404, 409)
    }
  }, async (req) => {
    const rel = checkClientRelative(req.body.path)
    const r = await resolveInside(ctx.filesPath, rel)
    if (r.kind === 'missing') throw new ApiError(404, 'not_found', 'no such file under FILES_PATH')
    if (r.kind === 'outside') throw new ApiError(400, 'invalid_path', 'path leads outside FILES_PATH')
    const d = await sha256FileCid(r.real)
    return { cid: d.cid, path: r.rel, size: d.size }
  })

  app.post('/api/files/register', {
    schema: {
      summary: 'Hash and record a file under plugin/ (for nodes without the file watcher)',
      tags: ['file'],
      body: PathBody,
      response: withErrors({ 200: RegisterReply, 201: RegisterReply }, 404, 409)
    }
  }, async (req, reply) => {
    if (ctx.watcher === undefined) throw new ComponentUnavailableError('watcher')
    const rel = checkClientRelative(req.body.path)
    try {
      const r = await ctx.watcher.registerFile(rel)
      return reply.code(r.created ? 201 : 200).send(r)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new ApiError(404, 'not_found', 'no such file under FILES_PATH')
      if (code === 'EISDIR') throw new ApiError(400, 'not_a_file', 'path is a directory')
      throw err
    }
  })

  app.get('/api/files/tuples', {
    schema: {
      summary: 'Every file-backed record as (hashId, filePath, sizeByte, mtimeNano); ?summary=1 gives only the totals',
      tags: ['file'],
      querystring: TuplesQuery,
      response: withErrors({ 200: Tuples })
    }
  }, async (req, reply) => {
    const summary = req.query.summary === '1' || req.query.summary === 'true'
    // Streamed in pages as JSON text (Tuples' shape): a 169k-record library is tens of MB of JSON that need never be held at once.
    const text: FastifyReply = reply.type('application/json; charset=utf-8')
    return text.send(Readable.from(tuplesJson(ctx, summary)))
  })
}

/** The cache's copy of record `rid` (fetched whole from a peer before), opened; undefined when there is none. */
async function openCached (ctx: ApiContext, rid: string): Promise<OpenedFile | undefined> {
  const p = ctx.byteCache?.pathOf(rid)
  if (p === undefined) return undefined
  const file = await openServableFile(p)
  if (file === undefined) await ctx.byteCache?.forget(rid)
  return file
}

/** A JSON integer literal for a stored decimal string; a malformed value is written as 0 rather than breaking the document. */
function jsonInt (s: string): string {
  return /^-?\d{1,30}$/.test(s) ? String(BigInt(s)) : '0'
}

function * tuplesJson (ctx: ApiContext, summary: boolean): Generator<string> {
  let count = 0
  let total = 0n
  let buf = summary ? '{' : '{"files":['
  for (const t of ctx.records.iterateFileTuples()) {
    if (!summary) {
      buf += (count === 0 ? '' : ',') +
        `{"hashId":${JSON.stringify(t.rid)},"filePath":${JSON.stringify(t.filePath)},"sizeByte":${jsonInt(t.sizeByte)},"mtimeNano":${jsonInt(t.mtimeNano)}}`
      if (buf.length > 64 * 1024) { yield buf; buf = '' }
    }
    count++
    if (/^\d{1,30}$/.test(t.sizeByte)) total += BigInt(t.sizeByte)
  }
  buf += (summary ? '' : '],') + `"count":${count},"totalSize":${total.toString()}}`
  yield buf
}
