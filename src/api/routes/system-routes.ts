/**
 * `/health`, `/status`, `/api/stats`, `/api/schema` (docs/design/original.md#routes). All answer
 * from counters and the background sweep: none scans the store per request.
 */
import fs from 'node:fs'
import type { ApiContext, ApiScope } from '../context.js'
import { healthOf } from '../health.js'
import { withErrors } from '../wire/kit.js'
import { Health, HealthQuery, Stats, Status, StoreSchema, type FieldSchema } from '../wire/system.js'

/** `/health` must answer even when storage is gone: it reports, it does not fail. */
function storageUp (ctx: ApiContext): boolean {
  return ctx.records.available()
}

/** `/api/schema` from the value-type counters the record layer keeps in every write transaction. */
function schemaFromCounters (ctx: ApiContext): Record<string, FieldSchema> {
  const fields: Record<string, FieldSchema> = {}
  const acc = new Map<string, { keyHints: Set<string>, prims: Set<string>, hints: Set<string>, breakdown: Record<string, number> }>()
  for (const t of ctx.records.schemaCounters()) {
    const n = t.count
    let a = acc.get(t.field)
    if (a === undefined) { a = { keyHints: new Set(), prims: new Set(), hints: new Set(), breakdown: {} }; acc.set(t.field, a) }
    if (t.keyHint !== '') a.keyHints.add(t.keyHint)
    if (t.prim !== 'undefined') { a.prims.add(t.prim); a.hints.add(t.hint) }
    const label = t.hint === '' ? t.prim : `${t.prim}:${t.hint}`
    a.breakdown[label] = (a.breakdown[label] ?? 0) + n
  }
  for (const [name, a] of acc) {
    const f: FieldSchema = { type: a.prims.size === 0 ? 'undefined' : a.prims.size === 1 ? [...a.prims][0] : 'mixed', breakdown: a.breakdown }
    if (a.hints.size === 1 && !a.hints.has('')) f.hint = [...a.hints][0]
    if (a.keyHints.size === 1) f.key_hint = [...a.keyHints][0]
    fields[name] = f
  }
  return fields
}

export function systemRoutes (app: ApiScope, ctx: ApiContext): void {
  app.get('/health', {
    config: { public: true },
    schema: {
      summary: 'Health: ok, or degraded with its reasons (storage unavailable, clock out of bound, no peer reached for a minute, the watcher\'s last scan failed). ' +
        '200 either way, as the original; ?strict=1 answers 503 when degraded',
      tags: ['system'],
      security: [],
      querystring: HealthQuery,
      response: { 200: Health, 503: Health }
    }
  }, async (req, reply) => {
    const h = healthOf(ctx)
    const strict = req.query.strict === '1' || req.query.strict === 'true'
    if (strict && h.status !== 'ok') reply.code(503)
    return h
  })

  app.get('/status', {
    schema: { summary: 'Service status and counts', tags: ['system'], response: withErrors({ 200: Status }) }
  }, async () => {
    const up = storageUp(ctx)
    return {
      status: up ? 'ok' : 'degraded',
      storage: up,
      redis: up,
      serviceName: ctx.serviceName,
      version: ctx.version,
      nodeId: ctx.records.nodeId,
      uptimeSeconds: Math.floor((ctx.clock.now() - ctx.startedAt) / 1000),
      fileCount: up ? ctx.records.countRecords() : 0,
      eventStreams: ctx.hub.size,
      search: ctx.search !== undefined,
      watcher: ctx.watcher?.status() ?? null
    }
  })

  app.get('/api/stats', {
    schema: {
      summary: 'Store figures; the expensive half comes from a background sweep and is null until the first one ends',
      tags: ['system'],
      response: withErrors({ 200: Stats })
    }
  }, async () => {
    const records = ctx.records.countRecords()
    const f = ctx.sweep.figures()
    return {
      records,
      redisKeys: f?.fileKeys ?? null,
      redisMemory: storeBytes(ctx.records.storePath),
      identities: null,
      files: f === undefined ? null : { count: f.fileCount, totalSize: Number(f.totalSize) },
      udlUsers: null,
      sweptAt: f?.sweptAt ?? null,
      sweeping: ctx.sweep.sweeping
    }
  })

  app.get('/api/schema', {
    schema: { summary: 'Per-field value types, from counters kept with every write', tags: ['system'], response: withErrors({ 200: StoreSchema }) }
  }, async () => ({ fields: schemaFromCounters(ctx), generated_at: new Date().toISOString(), source: 'counters' }))
}

function storeBytes (dbPath: string): number | null {
  let total = 0
  let any = false
  // The store file, search's index file beside it (`<store>-search`), and their WALs.
  for (const p of [dbPath, dbPath + '-wal', dbPath + '-search', dbPath + '-search-wal']) {
    try {
      total += fs.statSync(p).size
      any = true
    } catch { /* an absent WAL (or an in-memory store) adds nothing */ }
  }
  return any ? total : null
}
