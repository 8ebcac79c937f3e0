/**
 * Fans committed stream entries out to the open SSE connections, and ends
 * them all when the server closes (fastify's `preClose`, so `app.close()`
 * is not held open by streams that never finish on their own).
 */
import type { ServerResponse } from 'node:http'
import type { Clock, Logger } from '../../common/index.js'
import type { EventStreams, ShownEntry } from '../../records/index.js'
import { SseConnection, type StartPosition } from './sse-connection.js'

interface SseHubOptions {
  events: EventStreams
  heartbeatMs: number
  log: Logger
  clock: Clock
}

export class SseHub {
  private readonly o: SseHubOptions
  private readonly byStream = new Map<string, Set<SseConnection>>()
  private unsubscribe: (() => void) | undefined
  private closing = false

  constructor (opts: SseHubOptions) {
    this.o = opts
    // Only the entries of streams someone follows are shaped and handed over: a commit nobody follows costs nothing here.
    this.unsubscribe = opts.events.onCommit(entries => { this.dispatch(entries) }, stream => (this.byStream.get(stream)?.size ?? 0) > 0)
  }

  /** Number of open connections (for /status). */
  get size (): number {
    let n = 0
    for (const s of this.byStream.values()) n += s.size
    return n
  }

  /** Takes over `res` as an event stream of `stream`, starting at `pos`. */
  open (stream: string, res: ServerResponse, pos: StartPosition): SseConnection {
    let set = this.byStream.get(stream)
    if (set === undefined) { set = new Set(); this.byStream.set(stream, set) }
    const conns = set
    const conn = new SseConnection({
      events: this.o.events,
      stream,
      res,
      heartbeatMs: this.o.heartbeatMs,
      clock: this.o.clock,
      log: this.o.log,
      onClosed: () => { conns.delete(conn) }
    })
    conns.add(conn)
    conn.start(pos)
    if (this.closing) conn.close()
    return conn
  }

  /** Ends every open stream; streams opened from now on end at once. */
  closeAll (): void {
    this.closing = true
    for (const set of this.byStream.values()) {
      for (const c of [...set]) c.close()
    }
  }

  /** Stops listening to commits. */
  dispose (): void {
    this.closeAll()
    this.unsubscribe?.()
    this.unsubscribe = undefined
  }

  private dispatch (entries: readonly ShownEntry[]): void {
    if (this.byStream.size === 0) return
    // Entries of one commit may interleave streams; hand each connection its stream's entries in order.
    const per = new Map<string, ShownEntry[]>()
    for (const e of entries) {
      if (!this.byStream.has(e.stream)) continue
      let l = per.get(e.stream)
      if (l === undefined) { l = []; per.set(e.stream, l) }
      l.push(e)
    }
    for (const [stream, list] of per) {
      for (const c of [...(this.byStream.get(stream) ?? [])]) {
        try {
          c.notify(list)
        } catch (err) {
          // One broken socket must not stop delivery to the others; that connection ends and its client reconnects.
          this.o.log.warn('event delivery failed', { stream, err })
          c.close()
        }
      }
    }
  }
}
