/**
 * The mesh's wire messages: one versioned, discriminated union, encoded by
 * `encodeMessage` and decoded (and validated) by `decodeMessage`, the only
 * way bytes from a peer become a message. Every size and grammar limit a
 * peer must respect is checked here, before anything reaches the store.
 *
 * Envelope: one byte of wire version (1), one byte of flags (bit 0: the body
 * is deflate-raw compressed), then the body as UTF-8 JSON with short keys.
 * Entries travel grouped, so a record written in one go names its root id
 * once and its version (16-hex HLC and origin) once, and each origin string
 * once per message:
 *
 *   block = { o: [origin…], v: [[hlc, originIndex]…],
 *             r: [[rid, rootTombstoneVersionIndex | -1, [[versionIndex, name, value|null, name, value|null…]…]]…] }
 *
 * A decoded message carries plain `RemoteEntry` lists again.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { MetaCoreError } from '../common/index.js'
import { MAX_REMOTE_KEY_BYTES, MAX_VALUE_LENGTH, ORIGIN_RE, type RemoteEntry } from '../records/index.js'

export const WIRE_VERSION = 1
/** Largest message on the wire (a gossip frame or a pull page), compressed or not. */
export const MAX_MESSAGE_BYTES = 1024 * 1024
/** Largest body after decompression: a page is built to about 1 MiB of keys and values, and JSON escaping can add to that. */
const MAX_DECODED_BYTES = 8 * 1024 * 1024
/** Most entries one message may carry (a page holds at most `pageKeys`, 20,000 by default). */
const MAX_MESSAGE_ENTRIES = 100_000

/** What a message may inflate to and how many entries it may carry; the decoder stops as soon as either is passed. */
interface DecodeLimits {
  maxInflatedBytes: number
  maxEntries: number
}

/**
 * A gossip frame is at most 1 MiB inflated too, and carries at most 10,000
 * entries: the pusher builds frames of about 256 KiB of keys and values
 * (6,400 entries of the smallest kind at most) and splits any it encodes
 * past either bound, while a frame anyone can publish is relayed to every
 * peer, so its decoding and screening must stay cheap.
 */
export const FRAME_LIMITS: Readonly<DecodeLimits> = { maxInflatedBytes: MAX_MESSAGE_BYTES, maxEntries: 10_000 }
/** Pull replies and requests: a peer answers what we asked for, in pages of about 1 MiB of keys and values. */
const PAGE_LIMITS: Readonly<DecodeLimits> = { maxInflatedBytes: MAX_DECODED_BYTES, maxEntries: MAX_MESSAGE_ENTRIES }
/** Bodies smaller than this are sent as they are: deflate saves nothing worth its CPU on them. */
const COMPRESS_FROM_BYTES = 512
/** Cursors and log ids are short opaque strings; anything longer is not ours. */
const MAX_TOKEN_LENGTH = 128
const FLAG_DEFLATE = 1
const HLC_RE = /^[0-9a-f]{16}$/

/** A push frame: entries its origin wrote, with the origin's frame sequence `(epoch, seq)`. */
interface PushMessage { t: 'push', origin: string, epoch: number, seq: number, entries: RemoteEntry[] }
/** Pull request: the changes of the peer's log after `cursor`, if `log` is still the peer's log. */
export interface PullMessage { t: 'pull', log: string | null, cursor: string | null, maxBytes: number }
/**
 * Snapshot request: the peer's replicated range after position `after` (null: from the start).
 * `split` (first page only): also give about this many equal slices of the range (`splits`), so a
 * joining node can copy them from several peers; peers that predate it ignore it.
 */
export interface SnapMessage { t: 'snap', after: string | null, maxBytes: number, split?: number }
/** Pull reply. `gap`: the cursor cannot be served (trimmed, or another log): reconcile. `clock`: the server's wall clock (ms), a clock sample. */
export interface ChangesMessage { t: 'changes', log: string, entries: RemoteEntry[], next: string | null, head: string | null, gap: boolean, clock?: number }
/** Snapshot reply. `head` is the log head captured before the snapshot started (sent with the first page); `next` null ends the range. */
/** `records`: on a range's first page, how many records the peer holds (the joining node's time left); absent from older peers. */
/** `splits`: when asked (`split`), the positions that cut the range into slices of about equal roots, in increasing order. */
/** `end`: on a range's first page, its last root key then (`file:<rid>`); absent from older peers. */
export interface SnapshotMessage { t: 'snapshot', log: string, entries: RemoteEntry[], next: string | null, head: string | null, clock?: number,
  records?: number, splits?: string[], end?: string }
/**
 * A range of a reconciliation (reconcile.ts): the roots whose position
 * starts with hex prefix `p` (0 to 8 digits), given either by their
 * fingerprint (`fp`, 32 hex, and `n` roots) or by the list of their roots
 * (`items`: record id and the first 16 hex of its hash, in position order).
 */
export type ReconRange = { p: string, fp: string, n: number } | { p: string, items: Array<[string, string]> }
/** Reconciliation request: the sender's ranges, answered in order (see reconcile.ts). */
export interface ReconMessage { t: 'recon', ranges: ReconRange[] }
/**
 * Reconciliation reply: the responder's ranges for those that differ (split
 * into sub-ranges, or listed), `diff` the roots found to differ in ranges the
 * request listed, `taken` how many of the request's ranges it answered (the
 * rest are to be sent again), and the responder's log id and head read
 * before its fingerprints (the cursor once reconciled).
 */
export interface ReconReplyMessage { t: 'recond', log: string, head: string | null, ranges: ReconRange[], diff: string[], taken: number, clock?: number }
/**
 * Key-level comparison of roots known to differ (their hashes, over values
 * and versions, differ): `rids`, and the sender's versions of their keys
 * (`entries`, values left out: every value is null).
 */
export interface RootsMessage { t: 'roots', rids: string[], entries: RemoteEntry[] }
/**
 * Its reply: the responder's entries the sender's versions do not cover, the keys it wants (the sender's are
 * newer), and how many of `rids` it answered. A root whose versions are the same on both sides differs in a
 * value held at an equal version: all its entries are sent and all its keys wanted (reconcile.ts).
 */
export interface RootsReplyMessage { t: 'rootsd', entries: RemoteEntry[], want: string[], taken: number, clock?: number }
/** Entries a reconciliation found the peer lacks (the keys its `rootsd` reply wanted). */
export interface GiveMessage { t: 'give', entries: RemoteEntry[] }
/** Reply to `give`: how many of its entries took a new version. */
export interface TakenMessage { t: 'taken', applied: number }
type ErrorCode = 'busy' | 'blocked' | 'bad-request' | 'internal'
/** A refusal. It carries no clock: a sample comes only from a valid reply (clock-guard.ts). */
export interface ErrorMessage { t: 'error', code: ErrorCode, message: string, retryAfterMs?: number }

export type Message = PushMessage | PullMessage | SnapMessage | ChangesMessage | SnapshotMessage | ErrorMessage |
ReconMessage | ReconReplyMessage | RootsMessage | RootsReplyMessage | GiveMessage | TakenMessage
export type RequestMessage = PullMessage | SnapMessage | ReconMessage | RootsMessage | GiveMessage

/** Most ranges one reconciliation message carries. */
export const MAX_RECON_RANGES = 8192
/** Most roots one reconciliation message lists (in its ranges and its diff together), and most roots a `roots` request names. */
export const MAX_RECON_ROOTS = 50_000
/** Split positions a snapshot reply may carry (a range cut into at most 64 slices). */
export const MAX_SPLITS = 63

const ERROR_CODES: readonly ErrorCode[] = ['busy', 'blocked', 'bad-request', 'internal']

/** Bytes from a peer that are not a valid message: the message is refused whole. */
export class WireError extends MetaCoreError {
  constructor (message: string, options?: { cause?: unknown }) {
    super('bad_message', message, options)
  }
}

// ------------------------------------------------------------------ encode

type Block = { o: string[], v: Array<[string, number]>, r: Array<[string, number, Array<Array<string | number | null>>]> }

function encodeBlock (entries: readonly RemoteEntry[]): Block {
  const origins = new Map<string, number>()
  const versions = new Map<string, number>()
  const block: Block = { o: [], v: [], r: [] }
  const roots = new Map<string, { row: [string, number, Array<Array<string | number | null>>], groups: Map<number, Array<string | number | null>> }>()
  const versionIndex = (hlc: string, origin: string): number => {
    let oi = origins.get(origin)
    if (oi === undefined) { oi = block.o.length; origins.set(origin, oi); block.o.push(origin) }
    const key = hlc + oi
    let vi = versions.get(key)
    if (vi === undefined) { vi = block.v.length; versions.set(key, vi); block.v.push([hlc, oi]) }
    return vi
  }
  for (const e of entries) {
    const rest = e.key.slice(5)
    const slash = rest.indexOf('/')
    const rid = slash < 0 ? rest : rest.slice(0, slash)
    let root = roots.get(rid)
    if (root === undefined) {
      root = { row: [rid, -1, []], groups: new Map() }
      roots.set(rid, root)
      block.r.push(root.row)
    }
    const vi = versionIndex(e.hlc, e.origin)
    if (slash < 0) {
      root.row[1] = vi
      continue
    }
    let g = root.groups.get(vi)
    if (g === undefined) { g = [vi]; root.groups.set(vi, g); root.row[2].push(g) }
    g.push(rest.slice(slash + 1), e.value)
  }
  return block
}

function body (m: Message): unknown {
  switch (m.t) {
    case 'push': return { t: m.t, o: m.origin, e: m.epoch, s: m.seq, b: encodeBlock(m.entries) }
    case 'pull': return { t: m.t, l: m.log, c: m.cursor, m: m.maxBytes }
    case 'snap': return { t: m.t, a: m.after, m: m.maxBytes, s: m.split }
    case 'changes': return { t: m.t, l: m.log, b: encodeBlock(m.entries), n: m.next, h: m.head, g: m.gap, w: m.clock }
    case 'snapshot': return { t: m.t, l: m.log, b: encodeBlock(m.entries), n: m.next, h: m.head, w: m.clock, c: m.records, x: m.splits, e: m.end }
    case 'recon': return { t: m.t, r: m.ranges.map(rangeBody) }
    case 'recond': return { t: m.t, l: m.log, h: m.head, r: m.ranges.map(rangeBody), d: m.diff, k: m.taken, w: m.clock }
    case 'roots': return { t: m.t, i: m.rids, b: encodeBlock(m.entries) }
    case 'rootsd': return { t: m.t, b: encodeBlock(m.entries), x: m.want, k: m.taken, w: m.clock }
    case 'give': return { t: m.t, b: encodeBlock(m.entries) }
    case 'taken': return { t: m.t, n: m.applied }
    case 'error': return { t: m.t, c: m.code, m: m.message, r: m.retryAfterMs }
  }
}

/** Encodes a message; bodies past a few hundred bytes are deflated when that makes them smaller. */
export function encodeMessage (m: Message): Uint8Array {
  return encodeSized(m).bytes
}

/** Encodes a message, and says how many bytes its body takes once inflated (what `DecodeLimits.maxInflatedBytes` bounds). */
export function encodeSized (m: Message): { bytes: Uint8Array, bodyBytes: number } {
  const json = Buffer.from(JSON.stringify(body(m)))
  let flags = 0
  let payload: Buffer = json
  if (json.length >= COMPRESS_FROM_BYTES) {
    const z = deflateRawSync(json)
    if (z.length < json.length) { payload = z; flags |= FLAG_DEFLATE }
  }
  const out = new Uint8Array(payload.length + 2)
  out[0] = WIRE_VERSION
  out[1] = flags
  out.set(payload, 2)
  return { bytes: out, bodyBytes: json.length }
}

function rangeBody (r: ReconRange): unknown {
  return 'fp' in r ? [r.p, r.fp, r.n] : [r.p, r.items]
}

// ------------------------------------------------------------------ decode

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Decodes and validates bytes from a peer. Throws WireError for anything
 * that is not a well-formed message of this wire version within the limits:
 * size, key grammar (only `file:` keys, at most 1 KiB), value size, HLC and
 * origin format. Record-level grammar (root ids, field names) is the
 * store's check, run by the protocol core before applying.
 */
export function decodeMessage (bytes: Uint8Array, limits: Readonly<DecodeLimits> = PAGE_LIMITS): Message {
  if (!(bytes instanceof Uint8Array)) throw new WireError('not bytes')
  if (bytes.length > MAX_MESSAGE_BYTES) throw new WireError(`message of ${bytes.length} bytes is over the ${MAX_MESSAGE_BYTES}-byte limit`)
  if (bytes.length < 2) throw new WireError('message too short')
  if (bytes[0] !== WIRE_VERSION) throw new WireError(`unsupported wire version ${bytes[0]}`)
  const flags = bytes[1]
  if ((flags & ~FLAG_DEFLATE) !== 0) throw new WireError('unknown flags')
  let raw: Uint8Array = bytes.subarray(2)
  if ((flags & FLAG_DEFLATE) !== 0) {
    try {
      // zlib inflates chunk by chunk and stops at the first chunk past the limit: a small bomb costs at most the limit.
      raw = inflateRawSync(raw, { maxOutputLength: limits.maxInflatedBytes })
    } catch (err) {
      throw new WireError(`body does not inflate within the ${limits.maxInflatedBytes}-byte limit`, { cause: err })
    }
  } else if (raw.length > limits.maxInflatedBytes) {
    throw new WireError(`body of ${raw.length} bytes is over the ${limits.maxInflatedBytes}-byte limit`)
  }
  let o: unknown
  try {
    o = JSON.parse(utf8.decode(raw))
  } catch (err) {
    throw new WireError('body is not JSON', { cause: err })
  }
  if (!isObject(o)) throw new WireError('body is not an object')
  switch (o.t) {
    case 'push': {
      const origin = str(o.o, 'origin')
      if (!ORIGIN_RE.test(origin)) throw new WireError('bad origin')
      return { t: 'push', origin, epoch: count(o.e, 'epoch'), seq: count(o.s, 'seq'), entries: decodeBlock(o.b, limits.maxEntries) }
    }
    case 'pull':
      return { t: 'pull', log: optToken(o.l, 'log'), cursor: optToken(o.c, 'cursor'), maxBytes: pageSize(o.m) }
    case 'snap': {
      const m: SnapMessage = { t: 'snap', after: optToken(o.a, 'after', MAX_REMOTE_KEY_BYTES), maxBytes: pageSize(o.m) }
      if (o.s !== undefined && o.s !== null) {
        m.split = count(o.s, 'split')
        if (m.split < 1 || m.split > MAX_SPLITS + 1) throw new WireError('split out of range')
      }
      return m
    }
    case 'changes':
      if (typeof o.g !== 'boolean') throw new WireError('gap must be a boolean')
      return withClock({ t: 'changes', log: token(o.l, 'log'), entries: decodeBlock(o.b, limits.maxEntries), next: optToken(o.n, 'next'),
        head: optToken(o.h, 'head'), gap: o.g }, o.w)
    case 'snapshot': {
      const m: SnapshotMessage = withClock({ t: 'snapshot', log: token(o.l, 'log'), entries: decodeBlock(o.b, limits.maxEntries),
        next: optToken(o.n, 'next', MAX_REMOTE_KEY_BYTES), head: optToken(o.h, 'head') }, o.w)
      if (o.c !== undefined) m.records = count(o.c, 'records')
      if (o.x !== undefined && o.x !== null) m.splits = splitList(o.x)
      if (o.e !== undefined && o.e !== null) m.end = token(o.e, 'end', MAX_REMOTE_KEY_BYTES)
      return m
    }
    case 'recon':
      return { t: 'recon', ranges: decodeRanges(o.r, { roots: 0 }) }
    case 'recond': {
      const budget = { roots: 0 }
      const ranges = decodeRanges(o.r, budget)
      const diff = rids(o.d, 'diff', MAX_RECON_ROOTS - budget.roots)
      return withClock({ t: 'recond', log: token(o.l, 'log'), head: optToken(o.h, 'head'), ranges, diff, taken: count(o.k, 'taken') }, o.w)
    }
    case 'roots':
      return { t: 'roots', rids: rids(o.i, 'rids', MAX_RECON_ROOTS), entries: decodeBlock(o.b, limits.maxEntries) }
    case 'rootsd': {
      if (!Array.isArray(o.x) || o.x.length > limits.maxEntries) throw new WireError('bad wanted keys')
      const want = o.x.map((k: unknown) => {
        if (typeof k !== 'string' || !k.startsWith('file:') || k.length > MAX_REMOTE_KEY_BYTES) throw new WireError('bad wanted key')
        return k
      })
      return withClock({ t: 'rootsd', entries: decodeBlock(o.b, limits.maxEntries), want, taken: count(o.k, 'taken') }, o.w)
    }
    case 'give':
      return { t: 'give', entries: decodeBlock(o.b, limits.maxEntries) }
    case 'taken':
      return { t: 'taken', applied: count(o.n, 'applied') }
    case 'error': {
      const code = str(o.c, 'code') as ErrorCode
      if (!ERROR_CODES.includes(code)) throw new WireError('unknown error code')
      const message = str(o.m, 'message').slice(0, 500)
      const out: ErrorMessage = { t: 'error', code, message }
      if (o.r !== undefined) out.retryAfterMs = count(o.r, 'retryAfterMs')
      return out
    }
    default:
      throw new WireError('unknown message type')
  }
}

const PREFIX_RE = /^[0-9a-f]{0,8}$/
const FP_RE = /^[0-9a-f]{32}$/
const ITEM_HASH_RE = /^[0-9a-f]{16}$/
/** Root ids are 26 characters; anything much longer is not one (the store checks the grammar of what it applies). */
const MAX_RID_LENGTH = 64

function rid (x: unknown): string {
  if (typeof x !== 'string' || x.length === 0 || x.length > MAX_RID_LENGTH || x.includes('/')) throw new WireError('bad root id')
  return x
}

function rids (x: unknown, what: string, max: number): string[] {
  if (!Array.isArray(x) || x.length > max) throw new WireError(`bad ${what}`)
  return x.map(rid)
}

/** A reconciliation's ranges; `budget.roots` counts the roots they list (at most MAX_RECON_ROOTS). */
function decodeRanges (x: unknown, budget: { roots: number }): ReconRange[] {
  if (!Array.isArray(x) || x.length > MAX_RECON_RANGES) throw new WireError('bad ranges')
  return x.map((r: unknown): ReconRange => {
    if (!Array.isArray(r) || typeof r[0] !== 'string' || !PREFIX_RE.test(r[0])) throw new WireError('bad range')
    const p = r[0]
    if (r.length === 3 && typeof r[1] === 'string') {
      if (!FP_RE.test(r[1])) throw new WireError('bad fingerprint')
      return { p, fp: r[1], n: count(r[2], 'range count') }
    }
    if (r.length !== 2 || !Array.isArray(r[1])) throw new WireError('bad range')
    budget.roots += r[1].length
    if (budget.roots > MAX_RECON_ROOTS) throw new WireError(`more than ${MAX_RECON_ROOTS} roots`)
    const items = (r[1] as unknown[]).map((it): [string, string] => {
      if (!Array.isArray(it) || it.length !== 2 || typeof it[1] !== 'string' || !ITEM_HASH_RE.test(it[1])) throw new WireError('bad range item')
      return [rid(it[0]), it[1]]
    })
    return { p, items }
  })
}

/** A reply's `w`: the serving peer's wall clock in ms, which peers measure their clock offset with (absent from older peers). */
function withClock<T extends ChangesMessage | SnapshotMessage | ReconReplyMessage | RootsReplyMessage> (m: T, w: unknown): T {
  if (w !== undefined) m.clock = count(w, 'clock')
  return m
}

function decodeBlock (b: unknown, maxEntries: number): RemoteEntry[] {
  if (!isObject(b) || !Array.isArray(b.o) || !Array.isArray(b.v) || !Array.isArray(b.r)) throw new WireError('bad entry block')
  const origins = b.o.map((x: unknown) => {
    if (typeof x !== 'string' || !ORIGIN_RE.test(x)) throw new WireError('bad origin')
    return x
  })
  const versions = b.v.map((x: unknown): [string, string] => {
    if (!Array.isArray(x) || x.length !== 2 || typeof x[0] !== 'string' || !HLC_RE.test(x[0])) throw new WireError('bad version')
    const oi = x[1] as unknown
    if (typeof oi !== 'number' || !Number.isInteger(oi) || oi < 0 || oi >= origins.length) throw new WireError('bad origin index')
    return [x[0], origins[oi]]
  })
  const version = (vi: unknown): [string, string] => {
    if (typeof vi !== 'number' || !Number.isInteger(vi) || vi < 0 || vi >= versions.length) throw new WireError('bad version index')
    return versions[vi]
  }
  const out: RemoteEntry[] = []
  const tooMany = (): WireError => new WireError(`more than ${maxEntries} entries`)
  if (b.r.length > maxEntries) throw tooMany()
  for (const row of b.r as unknown[]) {
    if (!Array.isArray(row) || row.length !== 3 || typeof row[0] !== 'string' || !Array.isArray(row[2])) throw new WireError('bad root group')
    const rid = row[0]
    if (rid.length === 0 || rid.includes('/')) throw new WireError('bad root id')
    if (row[1] !== -1) {
      const [hlc, origin] = version(row[1])
      if (out.length >= maxEntries) throw tooMany()
      out.push(checkSize({ key: `file:${rid}`, value: null, hlc, origin }))
    }
    for (const g of row[2] as unknown[]) {
      if (!Array.isArray(g) || g.length < 3 || g.length % 2 !== 1) throw new WireError('bad version group')
      if (out.length + (g.length - 1) / 2 > maxEntries) throw tooMany()
      const [hlc, origin] = version(g[0])
      for (let i = 1; i < g.length; i += 2) {
        const name = g[i] as unknown
        const value = g[i + 1] as unknown
        if (typeof name !== 'string' || name.length === 0) throw new WireError('bad field name')
        if (value !== null && typeof value !== 'string') throw new WireError('bad value')
        out.push(checkSize({ key: `file:${rid}/${name}`, value, hlc, origin }))
      }
    }
  }
  return out
}

function checkSize (e: RemoteEntry): RemoteEntry {
  // UTF-16 length bounds the UTF-8 length from below and at a third from above: count bytes only when it matters.
  if (e.key.length * 3 > MAX_REMOTE_KEY_BYTES && Buffer.byteLength(e.key) > MAX_REMOTE_KEY_BYTES) throw new WireError('key longer than 1 KiB')
  if (e.value !== null && e.value.length > MAX_VALUE_LENGTH) throw new WireError('value longer than 256 KiB')
  return e
}

function isObject (x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

function str (x: unknown, what: string): string {
  if (typeof x !== 'string') throw new WireError(`${what} must be a string`)
  return x
}

function token (x: unknown, what: string, max = MAX_TOKEN_LENGTH): string {
  const s = str(x, what)
  if (s.length === 0 || s.length > max) throw new WireError(`${what} has a bad length`)
  return s
}

function optToken (x: unknown, what: string, max = MAX_TOKEN_LENGTH): string | null {
  return x === null ? null : token(x, what, max)
}

/** The positions a range is split at: increasing, at most MAX_SPLITS. */
function splitList (x: unknown): string[] {
  if (!Array.isArray(x) || x.length > MAX_SPLITS) throw new WireError('splits must be a list of at most ' + String(MAX_SPLITS))
  const out = x.map(k => token(k, 'split', MAX_REMOTE_KEY_BYTES))
  for (let i = 1; i < out.length; i++) if (out[i] <= out[i - 1]) throw new WireError('splits must increase')
  return out
}

function count (x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) throw new WireError(`${what} must be a non-negative integer`)
  return x
}

function pageSize (x: unknown): number {
  const n = count(x, 'maxBytes')
  if (n < 1 || n > MAX_MESSAGE_BYTES) throw new WireError('maxBytes out of range')
  return n
}

/** About how many bytes an entry adds to a page: what budgets count (the encoded size is checked exactly afterwards). */
export function entryWeight (e: RemoteEntry): number {
  return e.key.length + (e.value === null ? 0 : e.value.length) + 8
}
