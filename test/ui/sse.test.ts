/**
 * The page's event-stream client (ui/src/sse.ts): its parser against the
 * HTML standard's line endings and fields, and `follow` against a real
 * HTTP server on 127.0.0.1, which must wait the `retry:` the stream sent
 * before it reconnects, with Last-Event-ID.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/wait.js'
import { EventStreamParser, follow } from '../../ui/src/sse.js'
import type { StreamEvent } from '../../ui/src/wire.js'

function parse (chunks: string[]): { events: StreamEvent[], retries: number[] } {
  const events: StreamEvent[] = []
  const retries: number[] = []
  const p = new EventStreamParser(e => { events.push(e) }, ms => { retries.push(ms) })
  for (const c of chunks) p.push(c)
  return { events, retries }
}

const STREAM = 'id: 1-0\nevent: put\ndata: {"key":"a"}\n\n: a comment\nid: 1-1\ndata: {"key":\ndata: "b"}\n\nretry: 1500\ndata: 7\n\n'
const EXPECTED: StreamEvent[] = [
  { id: '1-0', event: 'put', data: { key: 'a' } },
  { id: '1-1', event: 'message', data: { key: 'b' } },
  { id: undefined, event: 'message', data: { value: '7' } }
]

describe('EventStreamParser', () => {
  it.each([['LF', '\n'], ['CRLF', '\r\n'], ['CR', '\r']])('reads events, comments and retry with %s line endings', (_name, eol) => {
    const { events, retries } = parse([STREAM.replaceAll('\n', eol)])
    expect(events).toEqual(EXPECTED)
    expect(retries).toEqual([1500])
  })

  it.each([['LF', '\n'], ['CRLF', '\r\n'], ['CR', '\r']])('gives the same events however the %s stream is cut into chunks', (_name, eol) => {
    const text = STREAM.replaceAll('\n', eol)
    expect(parse([...text]).events).toEqual(EXPECTED)
    for (let cut = 1; cut < text.length; cut++) expect(parse([text.slice(0, cut), text.slice(cut)]).events, `cut at ${cut}`).toEqual(EXPECTED)
  })

  it('a CRLF split between two chunks ends one line, not two', () => {
    // Were the CR and the LF two line ends, the blank line between would end the event before its data.
    expect(parse(['event: put\r', '\ndata: 1\r\n\r\n']).events).toEqual([{ id: undefined, event: 'put', data: { value: '1' } }])
  })

  it('ignores a retry that is not all digits, and an event without data', () => {
    const { events, retries } = parse(['retry: 12ms\nretry: -5\nevent: x\n\nretry:250\n\n'])
    expect(events).toEqual([])
    expect(retries).toEqual([250])
  })
})

describe('follow', () => {
  const servers: http.Server[] = []
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise(resolve => { s.closeAllConnections(); s.close(resolve) })
  })

  it('waits the retry the stream sent before it reconnects, and resumes from the last id', async () => {
    // The page reads its token for this origin from sessionStorage; in Node there is neither.
    Object.assign(globalThis, { location: { origin: 'http://127.0.0.1' } })
    const requests: Array<{ at: number, lastId: string | undefined }> = []
    const server = http.createServer((req, res) => {
      requests.push({ at: Date.now(), lastId: req.headers['last-event-id'] as string | undefined })
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      // The first connection sets a retry longer than the client's own first wait (500 ms), sends one event, and drops.
      if (requests.length === 1) res.end('retry: 1200\r\rid: 5-0\rdata: {"key":"k"}\r\r')
      else res.write(': held open\n\n')
    })
    servers.push(server)
    await new Promise<void>(resolve => { server.listen(0, '127.0.0.1', resolve) })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/events/meta`
    const events: StreamEvent[] = []
    const f = follow(url, e => { events.push(e) }, () => {})
    try {
      await waitFor(() => requests.length >= 2, { timeoutMs: 10_000, what: 'the client to reconnect' })
      expect(events).toEqual([{ id: '5-0', event: 'message', data: { key: 'k' } }])
      expect(requests[1].lastId).toBe('5-0')
      // At least the stream's retry after the drop (it read the event at once, then waited).
      expect(requests[1].at - requests[0].at).toBeGreaterThanOrEqual(1150)
    } finally {
      f.stop()
    }
  })
})
