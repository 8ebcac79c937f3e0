/**
 * The KV browser `/api/kv/*` (docs/design/original.md#routes) over our layout.
 *
 * Reads see the whole table (behind the token when one is set). Writes never
 * touch derived state directly: a `file:<rid>/<field>` key is written through
 * the record layer (so versions, aliases, counters, search rows and events
 * stay right); a key in the namespaces clients write as plain rows (the
 * original's other services: `btmagnet:`, `searchcov:`, `nzb:`, records'
 * CLIENT_NAMESPACES) goes through the record layer's door for node-local
 * rows; every other key is refused with a 400 `reserved_key` that says which
 * keys can be written. Key searches examine a bounded number of keys per
 * request and return a cursor to continue, so no request scans the whole
 * store.
 */
import { InvalidInputError } from '../../common/index.js'
import { prefixEnd } from '../../common/index.js'
import { UnknownRecordError, isRecordId } from '../../records/index.js'
import type { ApiContext, ApiScope } from '../context.js'
import { ApiError } from '../errors.js'
import { queryInt } from '../query-int.js'
import { clientFields, refuseLocationField } from '../location-fields.js'
import { withErrors } from '../wire/kit.js'
import {
  KeyAnswer, KeyDeleted, KeyParams, KeyQuery, KeySearch, KeySearchQuery, KeysPage, KeysQuery, KvInfo, TreeLevel, TreeQuery, ValueBody, ValueReply, ValueSearch,
    ValueSearchQuery
} from '../wire/kv.js'

/**
 * The raw store as this browser reads it (the node passes its kv store; the
 * API imports nothing of kv). Only these routes see raw keys, and only to
 * read them: writes go through the record layer.
 */
export interface RawKv {
  get: (k: string) => string | undefined
  keys: (lo: string, hi: string, limit?: number) => string[]
  range: (lo: string, hi: string, limit?: number) => Array<[string, string]>
}

/** The 1 KiB key limit peers enforce (docs/design/mesh-rules.md#trust). */
const MAX_KEY_BYTES = 1024
/** Keys examined per search request before it answers with a cursor. */
const SCAN_BUDGET = 20_000
/** Above every key the table can hold (the largest code point): the end of an unbounded range. */
const KEY_MAX = '\u{10FFFF}'
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f]/

function checkKey (key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidInputError('key must be a non-empty string', { code: 'invalid_key' })
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new InvalidInputError(`key is longer than ${MAX_KEY_BYTES} bytes`, { code: 'invalid_key' })
  if (CONTROL_RE.test(key)) throw new InvalidInputError('key contains a control character', { code: 'invalid_key' })
  return key
}

/** `file:<rid>/<field>` → its parts; 400 for a file: key of any other shape. */
function splitFileKey (key: string): { rid: string, field: string } {
  const rest = key.slice('file:'.length)
  const slash = rest.indexOf('/')
  const rid = slash < 0 ? rest : rest.slice(0, slash)
  if (slash < 0 || !isRecordId(rid)) throw new InvalidInputError('a file: key must be file:<record id>/<field>', { code: 'invalid_key' })
  return { rid, field: rest.slice(slash + 1) }
}

export function kvRoutes (app: ApiScope, ctx: ApiContext): void {
  const { kv, records } = ctx

  app.get('/api/kv/info', {
    schema: {
      summary: 'Store figures (keyCount and totalSize come from the background sweep; null before it first ends)',
      tags: ['kv'],
      response: withErrors({ 200: KvInfo })
    }
  }, async () => {
    const f = ctx.sweep.figures()
    return {
      prefix: 'file:',
      fileCount: records.countRecords(),
      keyCount: f?.fileKeys ?? null,
      totalSize: f === undefined ? null : Number(f.totalSize),
      memoryUsage: process.memoryUsage().rss,
      sweptAt: f?.sweptAt ?? null
    }
  })

  app.get('/api/kv/keys', {
    schema: {
      summary: 'Record keys (file:<root>) in id order; cursor "0" starts, and comes back "0" at the end',
      tags: ['kv'],
      querystring: KeysQuery,
      response: withErrors({ 200: KeysPage })
    }
  }, async (req) => {
    const count = queryInt(req.query.count, 'count', 50, 1, 1000)
    const cur = req.query.cursor
    const after = cur === undefined || cur === '' || cur === '0' ? undefined : cur
    const page = records.listRoots({ after, limit: count + 1 })
    const hasMore = page.length > count
    const keys = page.slice(0, count)
    return { keys: keys.map(r => `file:${r}`), cursor: hasMore ? keys[keys.length - 1] : '0', hasMore }
  })

  app.get('/api/kv/key/*', {
    schema: {
      summary: 'A record as its flat map (key file:<root>), or a plain key\'s value',
      tags: ['kv'],
      params: KeyParams,
      response: withErrors({ 200: KeyAnswer }, 404)
    }
  }, async (req) => {
    const key = checkKey(req.params['*'])
    const m = /^file:([^/]+)$/.exec(key)
    if (m !== null) {
      if (!isRecordId(m[1])) throw new InvalidInputError('a record key is file:<record id>', { code: 'invalid_key' })
      // One root's own rows, as stored (not its group's merge): this is the raw browser.
      const lo = `file:${m[1]}/`
      const rows = kv.range(lo, prefixEnd(lo))
      if (rows.length === 0) throw new UnknownRecordError(m[1])
      return { key, type: 'hash', value: Object.fromEntries(rows.map(([k, v]) => [k.slice(lo.length), v])) }
    }
    const v = kv.get(key)
    if (v === undefined) throw new ApiError(404, 'not_found', 'no such key')
    return { key, type: 'string', value: v }
  })

  app.get('/api/kv/tree', {
    schema: {
      summary: 'One level of the key space under a prefix: branches (prefixes ending in the delimiter) and leaves (keys)',
      tags: ['kv'],
      querystring: TreeQuery,
      response: withErrors({ 200: TreeLevel })
    }
  }, async (req) => {
    const prefix = req.query.prefix ?? ''
    const delimiter = req.query.delimiter ?? '/'
    const max = queryInt(req.query.max, 'max', 500, 1, 5000)
    const hi = prefix === '' ? KEY_MAX : prefixEnd(prefix)
    // The cursor is the last branch or leaf sent. A leaf never holds the delimiter past the prefix, so a cursor that does is a branch.
    const cur = req.query.cursor
    let lo = prefix
    if (cur !== undefined && cur !== '' && cur !== '0' && cur >= prefix) {
      lo = cur.indexOf(delimiter, prefix.length) >= 0 ? prefixEnd(cur) : cur + '\u0000'
    }
    const branches: string[] = []
    const leaves: string[] = []
    let last: string | undefined
    // Skip-scan: one indexed read per branch or leaf, however many keys a branch holds.
    while (branches.length + leaves.length < max) {
      const next = kv.keys(lo, hi, 1)[0]
      if (next === undefined) break
      const d = next.indexOf(delimiter, prefix.length)
      if (d < 0) {
        leaves.push(next)
        last = next
        lo = next + '\u0000'
      } else {
        const branch = next.slice(0, d + 1)
        branches.push(branch)
        last = branch
        lo = prefixEnd(branch)
      }
    }
    const hasMore = last !== undefined && kv.keys(lo, hi, 1).length > 0
    return { prefix, delimiter, branches, leaves, cursor: hasMore && last !== undefined ? last : '0', hasMore }
  })

  app.get('/api/kv/search', {
    schema: {
      summary: `Keys whose name contains a substring (case-insensitive), examining at most ${SCAN_BUDGET} keys per request`,
      tags: ['kv'],
      querystring: KeySearchQuery,
      response: withErrors({ 200: KeySearch })
    }
  }, async (req) => {
    const contains = (req.query.contains ?? '').toLowerCase()
    const prefix = req.query.prefix ?? 'file:'
    const limit = queryInt(req.query.limit, 'limit', 500, 1, 5000)
    const r = scan(ctx, prefix, req.query.cursor, limit, (k) => k.toLowerCase().includes(contains))
    return { contains, keys: r.hits.map(([k]) => k), truncated: r.cursor !== undefined, cursor: r.cursor ?? '0' }
  })

  app.get('/api/kv/find', {
    schema: {
      summary: `Record fields whose value contains a substring (case-insensitive), examining at most ${SCAN_BUDGET} keys per request`,
      tags: ['kv'],
      querystring: ValueSearchQuery,
      response: withErrors({ 200: ValueSearch })
    }
  }, async (req) => {
    const contains = (req.query.contains ?? '').toLowerCase()
    const fields = (req.query.fields ?? '').split(',').map(s => s.trim()).filter(s => s !== '')
    const limit = queryInt(req.query.limit, 'limit', 200, 1, 5000)
    const r = scan(ctx, 'file:', req.query.cursor, limit, (k, v) =>
      (fields.length === 0 || fields.some(f => k.endsWith('/' + f))) && v.toLowerCase().includes(contains))
    return { contains, fields, matches: r.hits.map(([key, value]) => ({ key, value })), truncated: r.cursor !== undefined, cursor: r.cursor ?? '0' }
  })

  app.get('/api/kv/value', {
    schema: { summary: 'One key\'s value', tags: ['kv'], querystring: KeyQuery, response: withErrors({ 200: ValueReply }) }
  }, async (req) => {
    const key = checkKey(req.query.key)
    const v = kv.get(key)
    return { key, type: v === undefined ? 'none' : 'string', value: v ?? null, exists: v !== undefined }
  })

  app.put('/api/kv/value', {
    schema: {
      summary: 'Write one key: file:<rid>/<field> through the record layer, btmagnet:, searchcov: and nzb: keys as plain rows; any other key is refused (400 reserved_key)',
      tags: ['kv'],
      body: ValueBody,
      response: withErrors({ 200: ValueReply }, 413, 415)
    }
  }, async (req) => {
    const key = checkKey(req.body.key)
    const { value } = req.body
    if (key.startsWith('file:')) {
      const { rid, field } = splitFileKey(key)
      const fields = clientFields(records, rid, { [field]: value })
      if (Object.keys(fields).length > 0) await records.mergeFlat(rid, fields)
    } else {
      await records.clientRows.write(tx => { tx.put(key, value) })
    }
    return { key, type: 'string', value, exists: true }
  })

  app.delete('/api/kv/value', {
    schema: {
      summary: 'Delete one key (file: keys through the record layer; the same keys as PUT can be deleted)',
      tags: ['kv'],
      querystring: KeyQuery,
      response: withErrors({ 200: KeyDeleted })
    }
  }, async (req) => {
    const key = checkKey(req.query.key)
    if (key.startsWith('file:')) {
      const { rid, field } = splitFileKey(key)
      refuseLocationField(field)
      const r = await records.deleteProperty(rid, field)
      return { key, deleted: r.deleted }
    }
    const deleted = await records.clientRows.write(tx => {
      const had = tx.get(key) !== undefined
      tx.delete(key)
      return had
    })
    return { key, deleted }
  })
}

/**
 * Walks keys after `cursor` (or from `prefix`) within `prefix`, keeping those
 * `pred` accepts, until `limit` hits or SCAN_BUDGET keys examined. The
 * answer's `cursor` is the last key examined, undefined when the range is
 * exhausted.
 */
function scan (ctx: ApiContext, prefix: string, cursor: string | undefined, limit: number, pred: (k: string, v: string) => boolean):
{ hits: Array<[string, string]>, cursor: string | undefined } {
  const hi = prefix === '' ? KEY_MAX : prefixEnd(prefix)
  let lo = cursor === undefined || cursor === '' || cursor === '0' || cursor < prefix ? prefix : cursor + '\u0000'
  const hits: Array<[string, string]> = []
  let examined = 0
  let last: string | undefined
  const more = (): string | undefined => (last !== undefined && ctx.kv.keys(lo, hi, 1).length > 0 ? last : undefined)
  while (examined < SCAN_BUDGET) {
    const rows = ctx.kv.range(lo, hi, Math.min(1000, SCAN_BUDGET - examined))
    if (rows.length === 0) return { hits, cursor: undefined }
    for (const [k, v] of rows) {
      examined++
      last = k
      lo = k + '\u0000'
      if (pred(k, v)) {
        hits.push([k, v])
        if (hits.length >= limit) return { hits, cursor: more() }
      }
    }
  }
  return { hits, cursor: more() }
}
