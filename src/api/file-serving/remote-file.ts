/**
 * `/file/<cid>` for a record whose bytes this node does not hold: streamed
 * from a peer that does (the record's `holders/<peerId>` members), over the
 * mesh's byte protocol, with the headers a local copy gets (send-file.ts)
 * and `X-Meta-Core-Served-By` naming the node the bytes came from.
 *
 * - One round trip to the holder before the first byte: the range is decided
 *   from the record's size (the content's, the same on every holder); a
 *   conditional request (If-None-Match, If-Modified-Since, If-Range) asks
 *   the holder's size and mtime first, since its answer depends on them.
 * - Holders are tried connected first. A holder that refuses (busy, no
 *   servable copy), cannot be reached, fails or stalls is left for the
 *   next, before the reply starts and mid-body alike: the next one is asked
 *   for the rest, from the offset already sent. Holders all busy get one
 *   more round after their retry hint; none left is a retryable 503.
 * - A holder whose file has another size than the first one's is not the
 *   same content: it is skipped.
 * - Integrity (stream-check.ts): while a transfer that can be checked
 *   streams, its last chunk is held back until the check passes. A mismatch
 *   ends the response with an error (the client never gets a whole, wrong
 *   file), is counted and logged, and the holders that sent the bytes are
 *   not asked for this record again while the node runs.
 */
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { delay, type Clock, type Logger } from '../../common/index.js'
import type { ByteSource, RemoteRange } from '../../mesh/index.js'
import type { RecordDocument } from '../../records/index.js'
import { ApiError, UnknownCidError } from '../errors.js'
import type { BytesMetrics } from '../metrics/bytes-metrics.js'
import type { ByteCache, CacheWriter } from './byte-cache.js'
import { decideRange } from './byte-range.js'
import { planFileReply } from './send-file.js'
import { StreamCheck } from './stream-check.js'

const SERVED_BY_HEADER = 'x-meta-core-served-by'
const HOLDERS_PREFIX = 'holders/'
/** Longest wait on a busy holder's retry hint before asking it again. */
const MAX_BUSY_WAIT_MS = 2_000
/** Records with distrusted holders kept in memory; past it the oldest entry goes (it is asked again, and checked again). */
const MAX_DISTRUSTED = 10_000

interface Span { start: number, end: number, size: number }

/**
 * The bytes a GET will answer with, from the record's `sizeByte` (the
 * content's size, the same on every holder), when nothing but the holder's
 * size could change that: no conditional header (those need its mtime), a
 * satisfiable range, a non-empty file. Undefined otherwise.
 */
function directSpan (req: FastifyRequest, doc: RecordDocument): Span | undefined {
  if (req.method !== 'GET') return undefined
  const h = req.headers
  if (h['if-none-match'] !== undefined || h['if-modified-since'] !== undefined || h['if-range'] !== undefined) return undefined
  const raw = doc.metadata.sizeByte
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) return undefined
  const size = Number(raw)
  if (size === 0) return undefined
  const d = decideRange(h.range, size)
  if (d.kind === 'unsatisfiable') return undefined
  return d.kind === 'full' ? { start: 0, end: size - 1, size } : { start: d.start, end: d.end, size }
}

/** The order holders are asked in, for one request. */
class HolderQueue {
  private readonly busy: Array<{ peer: string, retryAfterMs: number }> = []
  private rounds = 0

  constructor (private readonly pending: string[], private readonly clock: Clock) {}

  async next (signal: AbortSignal): Promise<string | undefined> {
    if (this.pending.length === 0 && this.busy.length > 0 && this.rounds === 0) {
      this.rounds++
      const wait = Math.min(MAX_BUSY_WAIT_MS, ...this.busy.map(b => b.retryAfterMs))
      await delay(this.clock, wait)
      signal.throwIfAborted()
      this.pending.push(...this.busy.splice(0).map(b => b.peer))
    }
    return this.pending.shift()
  }

  wasBusy (peer: string, retryAfterMs: number): void {
    this.busy.push({ peer, retryAfterMs })
  }

  get anyBusy (): boolean {
    return this.busy.length > 0
  }
}

export class RemoteFiles {
  private readonly distrusted = new Map<string, Set<string>>()

  constructor (
    private readonly bytes: ByteSource, private readonly metrics: BytesMetrics, private readonly log: Logger, private readonly clock: Clock,
    private readonly cache?: ByteCache
  ) {}

  /** Holder ids of the record, other than this node (which has no copy, or it would have served it). */
  static holdersOf (doc: RecordDocument): string[] {
    return Object.keys(doc.metadata).filter(k => k.startsWith(HOLDERS_PREFIX) && doc.metadata[k] === 'true').map(k => k.slice(HOLDERS_PREFIX.length))
  }

  async serve (req: FastifyRequest, reply: FastifyReply, doc: RecordDocument, cid: string): Promise<FastifyReply> {
    const t0 = performance.now()
    const banned = this.distrusted.get(doc.rid)
    const ranked = this.bytes.rankHolders(RemoteFiles.holdersOf(doc)).filter(p => banned?.has(p) !== true)
    if (ranked.length === 0) throw new UnknownCidError('file does not exist on disk')
    const ac = new AbortController()
    reply.raw.once('close', () => { ac.abort() })
    const queue = new HolderQueue(ranked, this.clock)

    // Without conditional headers, the record's size decides the range and the holder is asked for it at once
    // (one round trip); otherwise the holder's size and mtime come first (a header-only request).
    const guess = directSpan(req, doc)
    const first = await this.openFirst(queue, cid, guess, ac.signal)
    if (first === undefined) {
      throw new ApiError(503, 'holders_unavailable', queue.anyBusy ? 'every node holding this file is busy' : 'no node holding this file can serve it now', {
        retryable: true,
        headers: { 'retry-after': '1' }
      })
    }
    const { size, mtimeMs, ext } = first.range.header
    let plan: ReturnType<typeof planFileReply>
    try {
      plan = planFileReply(req, reply, { size, mtimeMs, name: `file${ext}` })
    } catch (err) {
      first.range.cancel() // a 416: the holder's size was not the record's
      throw err
    }
    reply.header(SERVED_BY_HEADER, first.peer)
    const wanted = plan.kind === 'bytes' && req.method !== 'HEAD' && plan.length > 0 ? plan : undefined
    // The open range is used only when it is exactly the reply's (it is, unless the record's size was not the file's).
    const reuse = wanted !== undefined && guess !== undefined && wanted.start === guess.start && wanted.end === guess.end && size === guess.size
    if (!reuse) first.range.cancel()
    if (wanted === undefined) return reply.send()
    const body = this.body(queue, { peer: first.peer, range: reuse ? first.range : undefined }, doc, cid, size, wanted.start, wanted.end, ac.signal, t0)
    return reply.send(Readable.from(body, { objectMode: false }))
  }

  /** The first holder that answers with a header, its range open (`span`), or header-only without one. */
  private async openFirst (queue: HolderQueue, cid: string, span: Span | undefined, signal: AbortSignal): Promise<{ peer: string,
    range: RemoteRange } | undefined> {
    for (;;) {
      const peer = await queue.next(signal)
      if (peer === undefined) return undefined
      try {
        const r = await this.bytes.openRange(peer, cid, span?.start ?? 0, span === undefined ? 0 : span.end - span.start + 1, { signal })
        if (r.ok) return { peer, range: r }
        if (r.code === 'busy') queue.wasBusy(peer, r.retryAfterMs ?? 0)
        else this.metrics.failover('refused')
      } catch (err) {
        if (signal.aborted) throw err
        this.metrics.failover('unreachable')
        this.log.debug('holder unreachable', { peer, cid, err })
      }
    }
  }

  private async * body (queue: HolderQueue, first: { peer: string, range: RemoteRange | undefined }, doc: RecordDocument, cid: string, size: number,
    start: number, end: number, signal: AbortSignal, t0: number): AsyncGenerator<Buffer> {
    const check = new StreamCheck(doc.cids, size, start, end)
    const withhold = check.checked.length > 0
    // Only a whole file that is checked as it streams is kept: the cache holds nothing unproven.
    const keep: CacheWriter | undefined = withhold && start === 0 && end === size - 1 ? await this.cache?.writer(doc.rid, size) : undefined
    let kept = false
    try {
      yield * this.stream(queue, first, doc, cid, size, start, end, signal, t0, check, keep)
      kept = keep !== undefined
      if (keep !== undefined) await keep.commit()
    } finally {
      if (keep !== undefined && !kept) await keep.abort()
    }
  }

  private async * stream (queue: HolderQueue, first: { peer: string, range: RemoteRange | undefined }, doc: RecordDocument, cid: string, size: number,
    start: number, end: number, signal: AbortSignal, t0: number, check: StreamCheck, keep: CacheWriter | undefined): AsyncGenerator<Buffer> {
    const withhold = check.checked.length > 0
    const senders = new Set<string>()
    let held: Buffer | undefined
    let pos = start
    let firstByte = true
    let peer: string | undefined = first.peer
    let opened = first.range
    while (pos <= end) {
      if (peer === undefined) throw new Error(`no holder left after ${pos - start} of ${end - start + 1} bytes`)
      try {
        const r = opened ?? await this.bytes.openRange(peer, cid, pos, end - pos + 1, { signal })
        opened = undefined
        if (!r.ok) {
          if (r.code === 'busy') queue.wasBusy(peer, r.retryAfterMs ?? 0)
          else this.metrics.failover('refused')
        } else if (r.header.size !== size) {
          r.cancel()
          this.metrics.failover('other-size')
        } else {
          senders.add(peer)
          for await (const chunk of r.body) {
            check.update(chunk, pos)
            await keep?.write(chunk)
            pos += chunk.length
            if (firstByte) { firstByte = false; this.metrics.firstByte((performance.now() - t0) / 1000) }
            if (!withhold) { yield chunk; continue }
            if (held !== undefined) yield held
            held = chunk
          }
          if (pos > end) break
        }
      } catch (err) {
        if (signal.aborted) return // the client went away: the holder's stream is closed with the body
        this.metrics.failover(err instanceof Error && err.name === 'TimeoutError' ? 'stalled' : 'failed')
        this.log.info('holder failed mid-transfer: asking the next one', { peer, cid, at: pos, err: err instanceof Error ? err.message : String(err) })
      }
      peer = await queue.next(signal)
    }
    if (!withhold) return
    const bad = check.mismatches()
    if (bad.length > 0) {
      for (const p of senders) {
        this.distrust(doc.rid, p)
        this.metrics.integrityFailure(p)
      }
      this.log.warn('bytes from a peer did not match the record\'s CIDs: the response is cut and the holder not used again for it', { cid, mismatched: bad, holders: [...senders] })
      throw new Error('bytes from the holder did not match the record\'s CIDs')
    }
    if (held !== undefined) yield held
  }

  private distrust (rid: string, peer: string): void {
    let s = this.distrusted.get(rid)
    if (s === undefined) {
      if (this.distrusted.size >= MAX_DISTRUSTED) this.distrusted.delete(this.distrusted.keys().next().value!)
      s = new Set()
      this.distrusted.set(rid, s)
    }
    s.add(peer)
  }
}
