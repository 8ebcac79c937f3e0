import type { Logger } from '../common/index.js'
import type { MeshService } from '../mesh/index.js'
import type { Records } from '../records/index.js'
import type { RawKv } from './routes/kv-routes.js'
import type { SearchService } from '../search/types.js'
import type { Watcher } from '../watcher/types.js'
import type { LibrarySweep } from './library-sweep.js'
import type { SseHub } from './sse/sse-hub.js'

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
}

export interface ApiInit {
  /** FILES_PATH: the only folder bytes are served from. */
  filesPath: string
  /** META_CORE_API_TOKEN: when set, every route but the public ones needs `Authorization: Bearer <token>`. */
  apiToken?: string
  /** Silence after which an SSE stream gets a `:keep-alive` comment (default 30 000 ms, spec §6). */
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
  hub: SseHub
  sweep: LibrarySweep
  /** Runs synchronous reads in one snapshot (`records.read`). */
  read: <T>(fn: () => T) => T
}
