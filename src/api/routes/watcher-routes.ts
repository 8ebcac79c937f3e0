/**
 * `/api/watchers` (docs/design/original.md#routes): the file watcher's status, a manual scan and a
 * reset. A node has one watcher (over FILES_PATH); the original's per-id and
 * `-all` spellings are accepted and all name it.
 *
 * Decision: like the original, scan and reset answer at once ("triggered")
 * and the work runs on; `?wait=true` waits for it and adds its `summary`
 * (counts of files added, changed, deleted, renamed). Progress is on
 * `GET /api/watchers` meanwhile.
 */
import type { FastifyInstance } from 'fastify'
import type { ScanSummary, WatcherStatus } from '../../watcher/types.js'
import type { ApiContext } from '../context.js'
import { ApiError, ComponentUnavailableError } from '../errors.js'
import { withErrors } from '../schemas.js'

const anyObject = { type: 'object', additionalProperties: true } as const
const waitQuery = {
  type: 'object',
  properties: { wait: { type: 'string', enum: ['true', 'false', '1', '0'] } },
  additionalProperties: false
} as const
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 200 } } } as const

type Q = { Querystring: { wait?: string }, Params: { id?: string } }

function describe (s: WatcherStatus): Record<string, unknown> {
  return { id: s.id ?? 'files', path: s.filesPath, ...s }
}

export function watcherRoutes (app: FastifyInstance, ctx: ApiContext): void {
  const watcher = (): NonNullable<ApiContext['watcher']> => {
    if (ctx.watcher === undefined) throw new ComponentUnavailableError('watcher')
    return ctx.watcher
  }
  const checkId = (id: string | undefined): void => {
    const own = watcher().status().id ?? 'files'
    if (id !== undefined && id !== own) throw new ApiError(404, 'not_found', `no watcher ${JSON.stringify(id.slice(0, 80))}`)
  }
  /** Starts `work`; with wait, answers when it is done. A failure of work nobody waits for is logged (the status shows it too). */
  const run = async (work: () => Promise<ScanSummary>, wait: boolean): Promise<ScanSummary | undefined> => {
    const p = work()
    if (wait) return await p
    p.catch((err: unknown) => { ctx.log.error('watcher work failed', { err: err instanceof Error ? err.message : String(err) }) })
    return undefined
  }
  const waitOf = (q: { wait?: string }): boolean => q.wait === 'true' || q.wait === '1'

  app.get('/api/watchers', {
    schema: { summary: 'The file watcher: status and scan progress', tags: ['watcher'], response: withErrors({ 200: anyObject }) }
  }, async () => ({ watchers: [describe(watcher().status())], count: 1 }))

  app.get<Q>('/api/watchers/:id', {
    schema: { summary: 'One watcher (the node has one)', tags: ['watcher'], params: idParams, response: withErrors({ 200: anyObject }, 404) }
  }, async (req) => {
    checkId(req.params.id)
    return describe(watcher().status())
  })

  const scan = async (req: { query: { wait?: string }, params: { id?: string } }): Promise<Record<string, unknown>> => {
    checkId(req.params.id)
    const summary = await run(async () => await watcher().scan(), waitOf(req.query))
    const fileCount = watcher().status().fileCount
    return { status: 'ok', message: summary === undefined ? 'Scan triggered' : 'Scan complete', fileCount, totalFiles: fileCount, ...(summary === undefined ? {} : { summary }) }
  }
  const reset = async (req: { query: { wait?: string }, params: { id?: string } }): Promise<Record<string, unknown>> => {
    checkId(req.params.id)
    const summary = await run(async () => await watcher().reset(), waitOf(req.query))
    const s = watcher().status()
    return { status: 'ok', message: summary === undefined ? 'Reset triggered' : 'Reset complete', watcherId: s.id ?? 'files', fileCount: s.fileCount, totalFiles: s.fileCount, ...(summary === undefined ? {} : { summary }) }
  }
  for (const url of ['/api/watchers/scan', '/api/watchers/scan-all', '/api/watchers/:id/scan']) {
    app.post<Q>(url, {
      schema: { summary: 'Scan FILES_PATH now (?wait=true: answer when done, with the summary)', tags: ['watcher'], querystring: waitQuery, response: withErrors({ 200: anyObject }, 404) }
    }, scan)
  }
  for (const url of ['/api/watchers/reset', '/api/watchers/reset-all', '/api/watchers/:id/reset']) {
    app.post<Q>(url, {
      schema: { summary: 'Clear file:events, append a reset event and rescan: every file is announced again as add', tags: ['watcher'], querystring: waitQuery, response: withErrors({ 200: anyObject }, 404) }
    }, reset)
  }
}
