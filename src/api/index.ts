/**
 * api: the HTTP surface of a node (fastify). It owns the routes, their
 * schemas (which also generate the OpenAPI document at /docs), the mapping
 * of error classes to status codes and the `{error, message, retryable}`
 * envelope (errors.ts, the only place that does it), and the SSE mirrors of
 * the event streams.
 *
 * Guarantees:
 * - Bad input of any kind is a 4xx envelope, never a 5xx and never a partial
 *   write: every write is one record-layer transaction, made only after the
 *   request is fully validated.
 * - With a token configured, only the public CID surface (`GET /api/meta/{cid}`,
 *   `GET|HEAD /file/{cid}` and `/api/file/{cid}[/info]`), `/health` and
 *   `/docs` answer without it (and `/metrics` when `metricsPublic`).
 * - `/metrics` (metrics/) exposes Prometheus figures; closing refuses new
 *   requests with a retryable 503, ends SSE streams, and cuts requests
 *   still running after `closeGraceMs`.
 * - File bytes come only from inside FILES_PATH.
 * - An SSE subscriber never misses or repeats an entry of the retained
 *   stream; `app.close()` ends open streams and returns.
 * The app does not own the store: closing it leaves the store open. It talks
 * to the record layer's narrow interface (`Records`); only the raw `/api/kv`
 * browser gets the store itself (`RawKv`).
 */
export { buildApp } from './app.js'
export type { ApiInit } from './context.js'
export type { ErrorEnvelope } from './wire/kit.js'
export { NodeMetrics } from './metrics/node-metrics.js'
export { openServableCopy } from './file-serving/servable-copy.js'
export { ByteCache, releaseCachedCopies } from './file-serving/byte-cache.js'
