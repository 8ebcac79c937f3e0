import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify'
import type { Clock, Logger } from '../common/index.js'
import type { MeshService } from '../mesh/index.js'
import type { Records } from '../records/index.js'
import type { RawKv } from './routes/kv-routes.js'
import type { SearchService } from '../search/types.js'
import type { Watcher } from '../watcher/types.js'
import type { LibrarySweep } from './library-sweep.js'
import type { NodeMetrics } from './metrics/node-metrics.js'
import type { SseHub } from './sse/sse-hub.js'
import type { ByteCache } from './file-serving/byte-cache.js'

/** What the API serves from. `search`, `watcher` and `mesh` are optional: their routes answer 503 without them. */
export interface ApiComponents {
  /** The record layer: every route but the raw kv browser goes through it. */
  records: Records
  /** The raw store, for the `/api/kv` browser only. */
  kv: RawKv
  search?: SearchService
  watcher?: Watcher
  mesh?: MeshService
  logger?: Logger
  /** Where `/metrics` figures go (the node also feeds it the store's batches and events); default: a fresh one. */
  metrics?: NodeMetrics
  /** Time: SSE heartbeats, the close grace period, stats ages, uptime (default `systemClock`). */
  clock?: Clock
}

export interface ApiInit {
  /** FILES_PATH: the only folder bytes are served from. */
  filesPath: string
  /** META_CORE_API_TOKEN: when set, every route but the public ones needs `Authorization: Bearer <token>`. */
  apiToken?: string
  /** Silence after which an SSE stream gets a `:keep-alive` comment (default 30 000 ms, docs/design/original.md#sse). */
  heartbeatMs?: number
  /** Largest request body (default 4 MiB; a record PATCH of many fields is the largest legitimate body). */
  bodyLimitBytes?: number
  /** How long a client has to send a whole request, headers included, before it is cut (default 30 000 ms). */
  requestTimeoutMs?: number
  /** Age after which `/api/stats` figures are recomputed in the background (default 60 000 ms). */
  statsTtlMs?: number
  /** Shown by `/status` and the OpenAPI document. */
  version?: string
  serviceName?: string
  /** The built web page (ui/dist): served at `/`, `/ui/…` and `/cid/…`. Unset: the node serves no page. */
  uiPath?: string
  /** META_CORE_CACHE_PATH: files fetched whole from peers are kept here (file-serving/byte-cache.ts); unset: no cache. */
  cachePath?: string
  /** META_CORE_CACHE_MAX_BYTES: the cache's size cap. */
  cacheMaxBytes?: number
  /** The node's cache, already made (start-node.ts: the byte protocol serves from it too); takes the place of `cachePath`. */
  byteCache?: ByteCache
  /** `/metrics` answers without the token (META_CORE_METRICS_PUBLIC). */
  metricsPublic?: boolean
  /** `/health` says degraded once a node in a mesh has reached no peer for this long (META_CORE_HEALTH_NO_PEER_MS, default 60 000 ms). */
  healthNoPeerMs?: number
  /**
   * On close, requests still running this long after it began have their
   * connections cut (default 2 000 ms), so a stalled client cannot hold a
   * shutdown; SSE streams end at once.
   */
  closeGraceMs?: number
}

/** Shared by the route plugins. */
export interface ApiContext {
  kv: RawKv
  records: Records
  search: SearchService | undefined
  watcher: Watcher | undefined
  mesh: MeshService | undefined
  log: Logger
  filesPath: string
  version: string
  serviceName: string
  uiPath: string | undefined
  startedAt: number
  clock: Clock
  hub: SseHub
  sweep: LibrarySweep
  metrics: NodeMetrics
  /** Files fetched whole from peers, kept to serve again (off: undefined). */
  byteCache: ByteCache | undefined
  /** Runs synchronous reads in one snapshot (`records.read`). */
  read: <T>(fn: () => T) => T
  healthNoPeerMs: number
}

/**
 * What a route plugin registers its routes on: the app, with each route's
 * request and reply types taken from its TypeBox schemas (wire/), so a
 * handler's input and answer are checked against what the schema says.
 */
export type ApiScope = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>
