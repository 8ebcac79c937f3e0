/**
 * One SSE subscriber of one event stream.
 *
 * Delivery never misses and never repeats an entry: the connection keeps the
 * id of the last entry it sent (`lastSent`) and only ever sends entries with
 * a greater id. It is in one of two delivery modes:
 * - pumping: reads retained entries after `lastSent` from the store in pages,
 *   waiting for the socket to drain between pages, until a read comes back
 *   empty. Commits heard meanwhile need no handling: they are in the store
 *   and the next read returns them.
 * - idle (caught up): commits are written straight from the commit listener.
 *   The listener runs synchronously right after COMMIT, and the pump only
 *   goes idle right after an empty read with no await in between, so the
 *   first entry heard while idle is the successor of `lastSent`. If the
 *   socket pushes back, the connection falls back to pumping.
 * Memory per connection is therefore bounded by one page, whatever the
 * write rate or the reader's speed.
 */
import type { ServerResponse } from 'node:http'
import type { Cancel, Clock, Logger } from '../../common/index.js'
import {
  META_EVENTS, compareEventIds, formatEventId, parseEventId,
  type EventIdParts, type EventStreams, type ShownEntry
} from '../../records/index.js'
import { KEEP_ALIVE, formatEntry, formatEvent } from './sse-format.js'

/** Where a new subscriber starts. */
export type StartPosition =
  /** No Last-Event-ID: only entries committed after the connection opened. */
  | { kind: 'new' }
  /** Strictly after the client's cursor; a `gap` event first if retention trimmed past it. */
  | { kind: 'after', cursor: string }
  /** `meta:events` with cursor 0 / 0-0: one `set` per existing record key, then the live tail. */
  | { kind: 'snapshot' }

interface SseConnectionOptions {
  events: EventStreams
  stream: string
  res: ServerResponse
  /** A `:keep-alive` comment is sent after this much silence (spec: 30 s). */
  heartbeatMs: number
  log: Logger
  /** The heartbeat's timer and the snapshot's timestamp. */
  clock: Clock
  /** Called once when the connection is gone, whoever ended it. */
  onClosed: () => void
}

/** Entries (or snapshot keys) per store read: bounds memory and the time one read holds the event loop. */
const PAGE = 256

/** Longest client cursor echoed back in a gap event (the header is client input). */
const MAX_ECHO = 64

export class SseConnection {
  private readonly o: SseConnectionOptions
  private lastSent: EventIdParts = { ms: 0, seq: 0 }
  private mode: 'starting' | 'pumping' | 'idle' | 'closed' = 'starting'
  /**
   * True once `lastSent` is known to have been a retained entry (or at or
   * after the oldest retained one). Only then does the oldest retained id
   * moving past it mean entries were trimmed before we sent them.
   */
  private positionChecked = false
  /** The cursor as the client wrote it, echoed in the first gap event. */
  private requested: string | undefined
  private lastWriteAt: number
  private cancelHeartbeat: Cancel | undefined
  private drainWaiters: Array<() => void> = []

  constructor (opts: SseConnectionOptions) {
    this.o = opts
    this.lastWriteAt = opts.clock.monotonic()
    opts.res.on('close', () => { this.teardown() })
    opts.res.on('drain', () => { this.wakeDrainWaiters() })
    // A socket error ends this stream only; the client reconnects with its cursor.
    opts.res.on('error', (err) => { opts.log.debug('event stream socket error', { err }); this.teardown() })
  }

  get closed (): boolean {
    return this.mode === 'closed'
  }

  /**
   * Sends the headers and starts delivery. Everything up to the first await
   * runs synchronously, so the start position (the head for `new`, the head
   * captured before a snapshot) is fixed before any later commit can run.
   */
  start (pos: StartPosition): void {
    const { res } = this.o
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'access-control-allow-origin': '*'
    })
    res.flushHeaders()
    if (res.destroyed || res.socket === null || res.socket.destroyed) {
      // The client left before we took over: its close event may already be gone.
      this.teardown()
      return
    }
    res.socket.setNoDelay(true)
    this.scheduleHeartbeat()
    this.begin(pos).catch((err: unknown) => { this.fail(err) })
  }

  /** Entries of this connection's stream from one commit, in id order. */
  notify (entries: readonly ShownEntry[]): void {
    if (this.mode !== 'idle') return // pumping or starting: the next store read picks them up
    for (const e of entries) {
      const id = parseEventId(e.id)
      if (compareEventIds(id, this.lastSent) <= 0) continue
      this.lastSent = id
      if (e.fields === null) continue // an entry clients are not shown: it only moves the position
      const ok = this.write(formatEntry(e.id, e.fields))
      if (!ok) {
        // The socket pushes back: stop holding entries in memory and read the rest from the store once it drains.
        this.o.log.debug('event stream reader is slow: reading from the store until it catches up', { stream: this.o.stream, after: e.id })
        this.startPump()
        return
      }
    }
  }

  /** Ends the response (server shutdown). */
  close (): void {
    if (this.mode === 'closed') return
    this.o.res.end()
    this.teardown()
  }

  // ---------------------------------------------------------------- delivery

  private async begin (pos: StartPosition): Promise<void> {
    const { events, stream } = this.o
    if (pos.kind === 'new') {
      const head = events.head(stream)
      if (head !== undefined) this.lastSent = parseEventId(head)
    } else if (pos.kind === 'after') {
      this.lastSent = parseEventId(pos.cursor)
      this.requested = pos.cursor.slice(0, MAX_ECHO)
      this.positionChecked = true // the original's rule (docs/design/original.md#sse): a cursor older than the oldest retained entry gets a gap
    } else {
      await this.snapshot()
    }
    this.startPump()
  }

  private startPump (): void {
    if (this.mode === 'closed') return // the client left during the snapshot: nothing to resume
    this.mode = 'pumping'
    this.pump().catch((err: unknown) => { this.fail(err) })
  }

  private async pump (): Promise<void> {
    const { events, stream } = this.o
    for (;;) {
      if (this.mode === 'closed') return
      if (this.o.res.writableNeedDrain) {
        await this.drained()
        continue
      }
      const first = events.first(stream)
      if (first !== undefined && compareEventIds(this.lastSent, parseEventId(first)) < 0 && this.positionChecked) {
        this.write(formatEvent('gap', JSON.stringify({
          requested: this.requested ?? formatEventId(this.lastSent),
          resumeFrom: first,
          reason: 'retention'
        })))
      }
      this.positionChecked = true
      this.requested = undefined
      const page = events.read(stream, this.lastSent, PAGE)
      if (page.length === 0) {
        // Caught up. No await between this read and going idle, so no commit can slip between them.
        this.mode = 'idle'
        return
      }
      for (const e of page) {
        if (e.fields !== null) this.write(formatEntry(e.id, e.fields))
        this.lastSent = parseEventId(e.id)
      }
    }
  }

  /**
   * One `set` per existing record key, read in pages so the store is never
   * held in memory, then the live tail from the head captured first. Only the
   * last snapshot event carries an id (that head): a consumer that drops
   * mid-snapshot has no cursor and asks for a fresh snapshot.
   */
  private async snapshot (): Promise<void> {
    const { events } = this.o
    const head = events.head(META_EVENTS)
    const first = events.first(META_EVENTS)
    if (head !== undefined) this.lastSent = parseEventId(head)
    // If the head is retained, trimming past it during a long snapshot is a real loss and must show as a gap.
    this.positionChecked = head !== undefined && first !== undefined && compareEventIds(parseEventId(first), this.lastSent) <= 0
    const ts = String(this.o.clock.now())
    let held: string | undefined
    let after: string | undefined
    for (;;) {
      if (this.mode === 'closed') return
      if (this.o.res.writableNeedDrain) await this.drained()
      const keys = events.recordKeys(after, PAGE)
      for (const k of keys) {
        if (held !== undefined) this.write(formatEvent('set', JSON.stringify({ key: held, ts })))
        held = k
      }
      if (keys.length < PAGE) break
      after = keys[keys.length - 1]
    }
    if (held !== undefined) this.write(formatEvent('set', JSON.stringify({ key: held, ts }), formatEventId(this.lastSent)))
  }

  // ---------------------------------------------------------------- socket

  private write (chunk: string): boolean {
    if (this.mode === 'closed') return false
    this.lastWriteAt = this.o.clock.monotonic()
    return this.o.res.write(chunk)
  }

  private async drained (): Promise<void> {
    if (this.mode === 'closed' || !this.o.res.writableNeedDrain) return
    await new Promise<void>(resolve => { this.drainWaiters.push(resolve) })
  }

  private wakeDrainWaiters (): void {
    const ws = this.drainWaiters
    this.drainWaiters = []
    for (const w of ws) w()
  }

  private scheduleHeartbeat (): void {
    const { clock } = this.o
    const due = this.lastWriteAt + this.o.heartbeatMs - clock.monotonic()
    // The open connection keeps the process alive, not its heartbeat.
    this.cancelHeartbeat = clock.schedule(Math.max(1, due), () => {
      if (this.mode === 'closed') return
      if (clock.monotonic() - this.lastWriteAt >= this.o.heartbeatMs && !this.o.res.writableNeedDrain) this.write(KEEP_ALIVE)
      this.scheduleHeartbeat()
    })
  }

  /**
   * A read failed (the store closed under us, I/O error): end the stream; the
   * client reconnects with its cursor, as with any dropped connection.
   */
  private fail (err: unknown): void {
    if (this.mode === 'closed') return
    this.o.log.warn('event stream ended after an error', { stream: this.o.stream, err })
    this.close()
  }

  private teardown (): void {
    if (this.mode === 'closed') return
    this.mode = 'closed'
    this.cancelHeartbeat?.()
    this.wakeDrainWaiters()
    this.o.onClosed()
  }
}
