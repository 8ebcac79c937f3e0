/**
 * The web page (ui/): `GET /`, `/ui/...` and `/cid/<address>` answer the
 * single-page app's `index.html` (every view has its own address, so a
 * bookmark or a reload lands on the right view), `/ui/assets/<file>` its
 * scripts and styles. The files are the built bundle in `ui/dist/` (committed,
 * see README), read once when the app is built and held in memory with a
 * gzip copy: a handful of small files, so no static-file plugin and no disk
 * read per request.
 *
 * These routes are public like `/health`: the page holds no data; every read
 * it makes goes through the API and its token.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError } from '../errors.js'
import { Type } from '../wire/kit.js'

interface Asset {
  body: Buffer
  gzip: Buffer | undefined
  type: string
  etag: string
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8'
}

/** Files smaller than this are sent as they are: gzip would save nothing worth a header. */
const GZIP_MIN_BYTES = 1024

/**
 * The page talks to its own node (and, to compare mesh digests, to other
 * nodes the user names), loads nothing from elsewhere, and is never framed.
 */
const CSP = "default-src 'self'; connect-src 'self' http: https:; img-src 'self' data:; media-src 'self'; " +
  "style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

/** Reads every file of the built page; undefined when `dir` holds no index.html (the page was not built). */
function loadUiAssets (dir: string): Map<string, Asset> | undefined {
  if (!fs.existsSync(path.join(dir, 'index.html'))) return undefined
  const assets = new Map<string, Asset>()
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name)
    if (!fs.statSync(file).isFile()) continue
    const body = fs.readFileSync(file)
    const type = TYPES[path.extname(name)] ?? 'application/octet-stream'
    const compressible = type.startsWith('text/') || type.includes('json') || type.includes('svg')
    assets.set(name, {
      body,
      gzip: compressible && body.length >= GZIP_MIN_BYTES ? gzipSync(body, { level: 9 }) : undefined,
      type,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
    })
  }
  return assets
}

export function uiRoutes (app: ApiScope, ctx: ApiContext): void {
  const dir = ctx.uiPath
  if (dir === undefined) return
  const assets = loadUiAssets(dir)
  if (assets === undefined) ctx.log.warn('the web page is not built: GET / answers 503', { uiPath: dir })

  const send = async (req: FastifyRequest, reply: FastifyReply, name: string): Promise<FastifyReply> => {
    if (assets === undefined) {
      throw new ApiError(503, 'ui_unavailable', `the web page is not built (no index.html in ${dir}): run npm run build:ui`, { retryable: false })
    }
    const a = assets.get(name)
    if (a === undefined) throw new ApiError(404, 'not_found', `no asset ${JSON.stringify(name.slice(0, 100))}`)
    // Assets keep their names across builds, so browsers revalidate (a 304 on loopback costs nothing) rather than cache blindly.
    void reply.header('cache-control', 'no-cache').header('etag', a.etag).header('x-content-type-options', 'nosniff').header('vary', 'accept-encoding')
    if (name === 'index.html') void reply.header('content-security-policy', CSP).header('referrer-policy', 'no-referrer')
    if (req.headers['if-none-match'] === a.etag) return await reply.code(304).send()
    void reply.type(a.type)
    const accept = req.headers['accept-encoding']
    if (a.gzip !== undefined && typeof accept === 'string' && /\bgzip\b/.test(accept)) {
      return await reply.header('content-encoding', 'gzip').send(a.gzip)
    }
    return await reply.send(a.body)
  }

  const page = { config: { public: true }, schema: { hide: true } }
  const index = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => await send(req, reply, 'index.html')
  app.get('/', page, index)
  app.get('/ui', page, index)
  app.get('/ui/*', page, index)
  app.get('/cid/*', page, index)
  const asset = { ...page, schema: { hide: true, params: Type.Object({ file: Type.String() }) } }
  app.get('/ui/assets/:file', asset, async (req, reply) => await send(req, reply, req.params.file))
}
