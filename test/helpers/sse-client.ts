/**
 * A minimal SSE reader over real HTTP (127.0.0.1) for tests: parses the
 * stream as it arrives and keeps every event and comment, so tests can wait
 * for what they expect with a deadline.
 */
import http from 'node:http'
import { waitFor } from '../../src/common/index.js'

export interface SseEvent {
  id?: string
  event: string
  data: string
}

export interface SseClient {
  status: number
  headers: http.IncomingHttpHeaders
  events: SseEvent[]
  comments: string[]
  /** True once the server ended the response (or the socket closed). */
  ended: boolean
  waitForEvents: (n: number, timeoutMs?: number) => Promise<void>
  close: () => void
}

export interface SseOptions {
  /** Stop reading for this long after the first bytes arrive, so the server meets backpressure. */
  pauseFirstMs?: number
}

export async function openSse (url: string, headers: Record<string, string> = {}, opts: SseOptions = {}): Promise<SseClient> {
  return await new Promise<SseClient>((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const c: SseClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        comments: [],
        ended: false,
        async waitForEvents (n, timeoutMs = 10_000) {
          await waitFor(() => c.events.length >= n || c.ended, { timeoutMs, what: `${n} SSE events (have ${c.events.length})` })
          if (c.events.length < n) throw new Error(`stream ended after ${c.events.length} of ${n} events`)
        },
        close () { req.destroy() }
      }
      let buf = ''
      let paused = false
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (opts.pauseFirstMs !== undefined && !paused) {
          paused = true
          res.pause()
          // The slow reader the option asks for, not a wait: the stream is not read for that long.
          setTimeout(() => { res.resume() }, opts.pauseFirstMs)
        }
        buf += chunk
        for (;;) {
          const end = buf.indexOf('\n\n')
          if (end < 0) break
          const block = buf.slice(0, end)
          buf = buf.slice(end + 2)
          const ev: SseEvent = { event: 'message', data: '' }
          let isEvent = false
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) { c.comments.push(line.slice(1)); continue }
            const colon = line.indexOf(':')
            const field = colon < 0 ? line : line.slice(0, colon)
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
            isEvent = true
            if (field === 'id') ev.id = value
            else if (field === 'event') ev.event = value
            else if (field === 'data') ev.data = ev.data === '' ? value : ev.data + '\n' + value
          }
          if (isEvent) c.events.push(ev)
        }
      })
      res.on('end', () => { c.ended = true })
      res.on('close', () => { c.ended = true })
      res.on('error', () => { c.ended = true })
      resolve(c)
    })
    req.on('error', reject)
  })
}
