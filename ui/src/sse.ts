/**
 * Follows one of the node's event streams (`/api/events/meta`,
 * `/api/events/files`). Read with fetch rather than EventSource, because
 * EventSource cannot send the `Authorization` header a node with a token
 * needs. After a drop it reconnects with `Last-Event-ID` set to the last id
 * it saw, so nothing is missed or repeated (docs/api.md, Event streams);
 * a refusal (401) waits until the token changes. A `retry:` field the node
 * sends sets the first wait after a drop, as in EventSource.
 */
import { getToken, onTokenChange } from './token.js'
import type { StreamEvent } from './wire.js'

export type StreamState = 'connecting' | 'live' | 'retrying' | 'unauthorized'

export interface Follow {
  stop: () => void
}

/** Waits between reconnects: quick after one drop, at most this long while the node stays away. */
const MAX_BACKOFF_MS = 10_000
/** The first wait after a drop until the stream sends its own `retry:` (ms). */
const DEFAULT_RETRY_MS = 500

export function follow (path: string, onEvent: (e: StreamEvent) => void, onState: (s: StreamState) => void): Follow {
  let stopped = false
  let lastId: string | undefined
  let ctl: AbortController | undefined
  let wake: (() => void) | undefined
  const unsubscribe = onTokenChange(() => { ctl?.abort(); wake?.() })

  const sleep = async (ms: number): Promise<void> => {
    await new Promise<void>(resolve => {
      const t = setTimeout(resolve, ms)
      wake = () => { clearTimeout(t); resolve() }
    })
    wake = undefined
  }

  const run = async (): Promise<void> => {
    // The stream's `retry:` (ms), kept across reconnects; doubled per failed try up to MAX_BACKOFF_MS.
    let retryMs = DEFAULT_RETRY_MS
    let backoff = retryMs
    while (!stopped) {
      onState('connecting')
      ctl = new AbortController()
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream' }
        const token = getToken()
        if (token !== undefined) headers.authorization = `Bearer ${token}`
        if (lastId !== undefined) headers['last-event-id'] = lastId
        const res = await fetch(path, { headers, signal: ctl.signal, cache: 'no-store' })
        if (res.status === 401) {
          onState('unauthorized')
          await sleep(60_000) // or until the token changes
          continue
        }
        if (!res.ok || res.body === null) throw new Error(`status ${res.status}`)
        onState('live')
        backoff = retryMs
        const parser = new EventStreamParser(e => {
          if (e.id !== undefined) lastId = e.id
          onEvent(e)
        }, ms => { retryMs = ms; backoff = ms })
        await read(res.body, parser)
      } catch { /* a drop or an aborted fetch: reconnect below, from lastId */ }
      if (stopped) break
      onState('retrying')
      await sleep(backoff)
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
    }
  }
  void run()
  return {
    stop () {
      stopped = true
      unsubscribe()
      ctl?.abort()
      wake?.()
    }
  }
}

async function read (body: ReadableStream<Uint8Array>, parser: EventStreamParser): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    parser.push(decoder.decode(value, { stream: true }))
  }
}

/**
 * Parses `text/event-stream` as the HTML standard does: lines end with CRLF,
 * LF or a CR alone (a CR at the end of a chunk may be the first half of a
 * CRLF split across two); `id`, `event`, `data` and `retry` fields; a blank
 * line ends an event (one with no data is not dispatched); `:` lines are
 * comments; a `retry` of ASCII digits is the reconnection time in ms.
 */
export class EventStreamParser {
  private buf = ''
  /** The last chunk ended with a CR: an LF that starts the next one belongs to it. */
  private afterCr = false
  private id: string | undefined
  private event = 'message'
  private data: string[] = []

  constructor (private readonly emit: (e: StreamEvent) => void, private readonly onRetry: (ms: number) => void = () => {}) {}

  push (text: string): void {
    if (this.afterCr && text.startsWith('\n')) text = text.slice(1)
    this.afterCr = false
    this.buf += text
    let start = 0
    for (;;) {
      const cr = this.buf.indexOf('\r', start)
      const lf = this.buf.indexOf('\n', start)
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf)
      if (end < 0) break
      const line = this.buf.slice(start, end)
      if (this.buf[end] === '\r') {
        if (end + 1 === this.buf.length) {
          // A CR at the end of what has arrived: the line ends here, and an LF that comes next is part of it.
          this.afterCr = true
          start = end + 1
        } else {
          start = this.buf[end + 1] === '\n' ? end + 2 : end + 1
        }
      } else {
        start = end + 1
      }
      this.line(line)
    }
    this.buf = this.buf.slice(start)
  }

  private line (line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.emit({ id: this.id, event: this.event, data: parseData(this.data.join('\n')) })
      this.id = undefined
      this.event = 'message'
      this.data = []
      return
    }
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const name = colon < 0 ? line : line.slice(0, colon)
    const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (name === 'id') this.id = val
    else if (name === 'event') this.event = val
    else if (name === 'data') this.data.push(val)
    else if (name === 'retry' && /^[0-9]+$/.test(val)) this.onRetry(Number(val))
  }
}

function parseData (s: string): Record<string, string> {
  try {
    const o = JSON.parse(s) as unknown
    return o !== null && typeof o === 'object' ? o as Record<string, string> : { value: String(o) }
  } catch {
    return { value: s }
  }
}
