import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { silentLogger, systemClock } from '../common/index.js'
import { makeTokenCheck } from './auth.js'
import type { ApiComponents, ApiContext, ApiInit } from './context.js'
import { ApiError, toErrorReply } from './errors.js'
import { jsonBodyParser } from './json-body.js'
import { LibrarySweep } from './library-sweep.js'
import { ByteCache } from './file-serving/byte-cache.js'
import { lazySerializerFactory } from './lazy-serializers.js'
import { metricsHooks, metricsRoutes } from './metrics/metrics-routes.js'
import { NodeMetrics } from './metrics/node-metrics.js'
import { cidRoutes } from './routes/cid-routes.js'
import { watcherRoutes } from './routes/watcher-routes.js'
import { meshRoutes } from './routes/mesh-routes.js'
import { eventRoutes } from './routes/event-routes.js'
import { fileRoutes } from './routes/file-routes.js'
import { kvRoutes } from './routes/kv-routes.js'
import { metaRoutes } from './routes/meta-routes.js'
import { metaPropertyRoutes } from './routes/meta-property-routes.js'
import { editorRoutes } from './routes/editor-routes.js'
import { metadataRoutes } from './routes/metadata-routes.js'
import { searchRoutes } from './routes/search-routes.js'
import { recordRoutes } from './routes/record-routes.js'
import { systemRoutes } from './routes/system-routes.js'
import { uiRoutes } from './routes/ui-routes.js'
import { SseHub } from './sse/sse-hub.js'
import { ErrorEnvelope } from './wire/kit.js'

const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024
const DEFAULT_HEARTBEAT_MS = 30_000
const DEFAULT_STATS_TTL_MS = 60_000
/** A node in a mesh that reached no peer for this long reports degraded on /health. */
const DEFAULT_HEALTH_NO_PEER_MS = 60_000
/** 10 GiB: a few films. */
const DEFAULT_CACHE_MAX_BYTES = 10 * 1024 ** 3
/** Longest path parameter: a 512-character field path, percent-encoded, fits; longer is a 414. */
const MAX_PARAM_LENGTH = 2048
/** The original's 30 s read timeout: a client gets this long to send its whole request, headers included. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
/**
 * How often Node looks for requests past their deadline. Its default (30 s)
 * let a slow sender hold a socket up to twice the timeout (about 60 s for a
 * 30 s timeout); checking every second keeps the cut within a second of it,
 * for a timer that walks the open connections.
 */
const TIMEOUT_CHECK_MS = 1000
/** How long requests in flight get to finish once the app closes, before their connections are cut. */
const DEFAULT_CLOSE_GRACE_MS = 2_000

/**
 * Builds the HTTP API over a store (not listening: call `listen`, or
 * `inject` in tests). Closing the app ends open event streams and stops
 * the background stats sweep; it does not close the store.
 */
export function buildApp (components: ApiComponents, init: ApiInit): FastifyInstance {
  const log = components.logger ?? silentLogger
  let closing = false
  const requestTimeoutMs = init.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  let cancelGrace = (): void => {}
  const metrics = components.metrics ?? new NodeMetrics()

  const app = Fastify({
    logger: false,
    bodyLimit: init.bodyLimitBytes ?? DEFAULT_BODY_LIMIT,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A client gets this long to send its whole request, headers included (the original's 30 s read timeout); a
    // slow sender is cut within TIMEOUT_CHECK_MS after it, never held open longer.
    requestTimeout: requestTimeoutMs,
    http: { headersTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, Math.max(50, Math.floor(requestTimeoutMs / 4))) },
    // JSON bodies carrying __proto__ or constructor.prototype are refused, never merged into objects
    // (by json-body.ts, which replaces fastify's parser; these settings guard any other use of it).
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Our own 503 envelope answers requests that arrive while closing (below).
    return503OnClosing: false,
    ajv: {
      // No coercion: a number where a string belongs is refused, not stored as "5".
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false }
    },
    // Response schemas are compiled on first use, not while the node starts (lazy-serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } },
    frameworkErrors: (err, _req, reply) => { sendError(reply, err) }
  })

  const clock = components.clock ?? systemClock
  const ctx: ApiContext = {
    kv: components.kv,
    records: components.records,
    search: components.search === undefined ? undefined : metrics.timeSearch(components.search),
    watcher: components.watcher,
    mesh: components.mesh,
    log,
    filesPath: init.filesPath,
    version: init.version ?? '0.0.0',
    serviceName: init.serviceName ?? 'meta-core',
    uiPath: init.uiPath,
    startedAt: clock.now(),
    clock,
    hub: new SseHub({ events: components.records.events, heartbeatMs: init.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, log: log.child('sse'), clock }),
    sweep: new LibrarySweep(components.records, init.statsTtlMs ?? DEFAULT_STATS_TTL_MS, log.child('stats'), clock),
    read: (fn) => components.records.read(fn),
    healthNoPeerMs: init.healthNoPeerMs ?? DEFAULT_HEALTH_NO_PEER_MS,
    metrics,
    byteCache: init.byteCache ?? (init.cachePath === undefined
      ? undefined
      : new ByteCache(init.cachePath, init.cacheMaxBytes ?? DEFAULT_CACHE_MAX_BYTES, log.child('cache'),
        { records: components.records, holderId: components.records.nodeId }))
  }
  metrics.bind({ records: components.records, mesh: components.mesh, watcher: components.watcher, sseStreams: () => ctx.hub.size })

  function sendError (reply: FastifyReply, err: unknown): void {
    const r = toErrorReply(err)
    if (r.unexpected) log.error('request failed', { method: reply.request.method, url: reply.request.url.slice(0, 200), err: errorText(err) })
    if (reply.sent) return
    if (r.headers !== undefined) reply.headers(r.headers)
    void reply.code(r.statusCode).type('application/json; charset=utf-8').send(r.body)
  }

  // Strict UTF-8, well-formed Unicode and no prototype keys, with an answer that says which (json-body.ts).
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, jsonBodyParser)

  app.addSchema(ErrorEnvelope)
  app.setErrorHandler((err: FastifyError, _req, reply) => { sendError(reply, err) })
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, new ApiError(404, 'not_found', `no route ${req.method} ${req.url.split('?')[0].slice(0, 200)}`))
  })

  const checkToken = init.apiToken === undefined || init.apiToken === '' ? undefined : makeTokenCheck(init.apiToken)
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('access-control-allow-origin', '*')
    if (closing) {
      done(new ApiError(503, 'shutting_down', 'the node is shutting down', { retryable: true }))
      return
    }
    if (checkToken !== undefined && req.method !== 'OPTIONS' && !req.is404 && req.routeOptions.config.public !== true && !isDocsRoute(req.routeOptions.url)) {
      try {
        checkToken(req.headers.authorization)
      } catch (err) {
        done(err as Error)
        return
      }
    }
    done()
  })

  metricsHooks(app, metrics)

  app.addHook('preClose', (done) => {
    // From here every request gets 503 shutting_down (retryable): clients go to another node or come back.
    closing = true
    ctx.hub.closeAll()
    // fastify then waits for requests in flight; one stalled client must not hold the node's shutdown.
    cancelGrace = clock.schedule(init.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS, () => {
      log.warn('requests still running after the close grace period: cutting their connections')
      app.server.closeAllConnections()
    })
    done()
  })
  app.addHook('onClose', (_app, done) => {
    cancelGrace()
    ctx.hub.dispose()
    ctx.sweep.stop()
    done()
  })

  void app.register(swagger, {
    openapi: {
      info: {
        title: 'meta-core',
        version: ctx.version,
        description: 'Peer-replicated metadata store for a media library. Error answers are always {error, message, retryable}.'
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }]
    }
  })

  // CORS preflight (docs/design/original.md#conventions), answered before auth: browsers send it without credentials.
  app.options('*', { schema: { hide: true }, config: { public: true } }, (_req, reply) => {
    void reply.code(204).headers({
      'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': 'Content-Type, Authorization, Last-Event-ID',
      'access-control-max-age': '600'
    }).send()
  })
  // The browsable page (swagger-ui, its assets shipped in the package: no CDN) at /docs, the document at
  // /docs/json and /docs/yaml. /docs itself used to answer the JSON: a client that does not ask for HTML (curl,
  // fetch, OpenAPI tools send */* or application/json) still gets it; a browser (Accept: text/html) gets the page.
  void app.register(swaggerUi, {
    routePrefix: DOCS,
    // The online validator is another site: the page makes no request beyond this node.
    uiConfig: { validatorUrl: null, deepLinking: true },
    uiHooks: {
      onRequest: (req, reply, done) => {
        if ((req.routeOptions.url === DOCS || req.routeOptions.url === `${DOCS}/`) && !acceptsHtml(req.headers.accept)) {
          void reply.type('application/json; charset=utf-8').send(app.swagger())
          return
        }
        done()
      }
    }
  })

  void app.register(async (scope) => { systemRoutes(scope, ctx) })
  void app.register(async (scope) => { metaRoutes(scope, ctx) })
  void app.register(async (scope) => { metaPropertyRoutes(scope, ctx) })
  void app.register(async (scope) => { cidRoutes(scope, ctx) })
  void app.register(async (scope) => { fileRoutes(scope, ctx) })
  void app.register(async (scope) => { kvRoutes(scope, ctx) })
  void app.register(async (scope) => { metadataRoutes(scope, ctx) })
  void app.register(async (scope) => { searchRoutes(scope, ctx) })
  void app.register(async (scope) => { editorRoutes(scope, ctx) })
  void app.register(async (scope) => { eventRoutes(scope, ctx) })
  void app.register(async (scope) => { watcherRoutes(scope, ctx) })
  void app.register(async (scope) => { recordRoutes(scope, ctx) })
  void app.register(async (scope) => { uiRoutes(scope, ctx) })
  void app.register(async (scope) => { meshRoutes(scope, ctx) })
  void app.register(async (scope) => { metricsRoutes(scope, metrics, { public: init.metricsPublic === true }) })
  return app
}

/** Where the OpenAPI page and document live; public (the schema holds no data). */
const DOCS = '/docs'

function isDocsRoute (url: string | undefined): boolean {
  return url !== undefined && (url === DOCS || url.startsWith(`${DOCS}/`))
}

/** True when the client lists text/html among what it accepts (a browser), not merely a wildcard. */
function acceptsHtml (accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept)
}

function errorText (err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}${err.stack === undefined ? '' : '\n' + err.stack}`
  return String(err)
}
