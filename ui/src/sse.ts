/**
 * Follows one of the node's event streams (`/api/events/meta`,
 * `/api/events/files`). Read with fetch rather than EventSource, because
 * EventSource cannot send the `Authorization` header a node with a token
 * needs. After a drop it reconnects with `Last-Event-ID` set to the last id
 * it saw, so nothing is missed or repeated (docs/api.md, Event streams);
 * a refusal (401) waits until the token changes.
 */
import { getToken, onTokenChange } from './token.js'
import type { StreamEvent } from './wire.js'

export type StreamState = 'connecting' | 'live' | 'retrying' | 'unauthorized'

export interface Follow {
  stop: () => void
}

/** Waits between reconnects: quick after one drop, at most this long while the node stays away. */
const MAX_BACKOFF_MS = 10_000

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
    let backoff = 500
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
        backoff = 500
        await read(res.body, e => {
          if (e.id !== undefined) lastId = e.id
          onEvent(e)
        })
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

/** Parses `text/event-stream` (id, event, data lines; a blank line ends an event; `:` lines are comments). */
async function read (body: ReadableStream<Uint8Array>, emit: (e: StreamEvent) => void): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buf = ''
  let id: string | undefined
  let event = 'message'
  let data = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buf += decoder.decode(value, { stream: true })
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '')
      buf = buf.slice(nl + 1)
      if (line === '') {
        if (data !== '') emit({ id, event, data: parseData(data) })
        id = undefined
        event = 'message'
        data = ''
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const name = colon < 0 ? line : line.slice(0, colon)
      const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (name === 'id') id = val
      else if (name === 'event') event = val
      else if (name === 'data') data = data === '' ? val : `${data}\n${val}`
    }
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
