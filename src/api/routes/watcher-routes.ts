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
import type { ScanSummary, WatcherStatus } from '../../watcher/types.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError, ComponentUnavailableError } from '../errors.js'
import { withErrors } from '../wire/kit.js'
import { ScanReply, WaitQuery, WatcherIdParams, WatcherList, WatcherPathId, WatcherView } from '../wire/watcher.js'

function describe (s: WatcherStatus): WatcherView {
  return { id: s.id ?? 'files', path: s.filesPath, ...s }
}

export function watcherRoutes (app: ApiScope, ctx: ApiContext): void {
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
    schema: { summary: 'The file watcher: status and scan progress', tags: ['watcher'], response: withErrors({ 200: WatcherList }) }
  }, async () => ({ watchers: [describe(watcher().status())], count: 1 }))

  app.get('/api/watchers/:id', {
    schema: { summary: 'One watcher (the node has one)', tags: ['watcher'], params: WatcherIdParams, response: withErrors({ 200: WatcherView }, 404) }
  }, async (req) => {
    checkId(req.params.id)
    return describe(watcher().status())
  })

  const scan = async (query: { wait?: string }, id: string | undefined): Promise<ScanReply> => {
    checkId(id)
    const summary = await run(async () => await watcher().scan(), waitOf(query))
    const fileCount = watcher().status().fileCount
    return { status: 'ok', message: summary === undefined ? 'Scan triggered' : 'Scan complete', fileCount, totalFiles: fileCount,
      ...(summary === undefined ? {} : { summary }) }
  }
  const reset = async (query: { wait?: string }, id: string | undefined): Promise<ScanReply> => {
    checkId(id)
    const summary = await run(async () => await watcher().reset(), waitOf(query))
    const s = watcher().status()
    return {
      status: 'ok',
      message: summary === undefined ? 'Reset triggered' : 'Reset complete',
      watcherId: s.id ?? 'files',
      fileCount: s.fileCount,
      totalFiles: s.fileCount,
      ...(summary === undefined ? {} : { summary })
    }
  }
  const scanSchema = {
    summary: 'Scan FILES_PATH now (?wait=true: answer when done, with the summary)',
    tags: ['watcher'],
    querystring: WaitQuery,
    response: withErrors({ 200: ScanReply }, 404)
  }
  const resetSchema = { ...scanSchema, summary: 'Clear file:events, append a reset event and rescan: every file is announced again as add' }
  // The original's spellings: one for the node's watcher, one for all of them (the same one), one by id.
  for (const url of ['/api/watchers/scan', '/api/watchers/scan-all']) app.post(url, { schema: scanSchema }, async (req) => await scan(req.query, undefined))
  app.post('/api/watchers/:id/scan', { schema: { ...scanSchema, params: WatcherPathId } }, async (req) => await scan(req.query, req.params.id))
  for (const url of ['/api/watchers/reset', '/api/watchers/reset-all']) app.post(url, { schema: resetSchema }, async (req) => await reset(req.query, undefined))
  app.post('/api/watchers/:id/reset', { schema: { ...resetSchema, params: WatcherPathId } }, async (req) => await reset(req.query, req.params.id))
}
