/**
 * `GET /metrics` (Prometheus text format 0.0.4) and the hooks that time
 * every request by route. The route's pattern (`/api/meta/:cid`) labels the
 * latency, never the URL, so a scan of random paths cannot blow up the
 * number of series: requests that match no route share `route="unmatched"`.
 *
 * With an API token set, `/metrics` needs it like every internal read
 * (it names peers and their addresses' owners) unless the node was started
 * with META_CORE_METRICS_PUBLIC, for a scraper inside a private network
 * that should not hold the write token.
 */
import type { FastifyInstance } from 'fastify'
import type { NodeMetrics } from './node-metrics.js'

/** Registers the latency hooks on the root instance (hooks in a child scope would see only its routes). */
export function metricsHooks (app: FastifyInstance, metrics: NodeMetrics): void {
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched'
    metrics.observeRequest(req.method, req.is404 ? 'unmatched' : route, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
}

export function metricsRoutes (app: FastifyInstance, metrics: NodeMetrics, opts: { public: boolean }): void {
  app.get('/metrics', {
    config: { public: opts.public },
    schema: {
      summary: 'Prometheus metrics: HTTP latency by route, write batches, events, records, search latency, mesh frames and lag per peer, watcher progress, process figures',
      description: 'Text exposition format 0.0.4. Needs the API token when one is set, unless the node runs with META_CORE_METRICS_PUBLIC.',
      tags: ['system'],
      produces: ['text/plain']
    }
  }, async (_req, reply) => {
    const text = await metrics.text()
    return await reply.type(metrics.contentType).send(text)
  })
}
