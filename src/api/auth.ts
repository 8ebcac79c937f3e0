/**
 * Bearer-token gate. With a token configured, every route needs
 * `Authorization: Bearer <token>` except the ones marked `config.public`:
 * the public CID surface peers call (`GET /api/meta/{cid}`, the file bytes),
 * `/health`, and the OpenAPI document. Without a token every route is open
 * (the node refuses to listen beyond loopback in that case).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { UnauthorizedError } from './errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable without the API token. */
    public?: boolean
  }
}

/**
 * Compares in constant time: both sides are hashed first so neither the
 * token's length nor its prefix leaks through timing.
 */
export function makeTokenCheck (token: string): (header: string | undefined) => void {
  const want = createHash('sha256').update(token).digest()
  return (header) => {
    if (header === undefined || header === '') throw new UnauthorizedError('this route needs Authorization: Bearer <token>')
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
    if (m === null) throw new UnauthorizedError('Authorization must be "Bearer <token>"')
    const got = createHash('sha256').update(m[1]).digest()
    if (!timingSafeEqual(got, want)) throw new UnauthorizedError('wrong token')
  }
}
