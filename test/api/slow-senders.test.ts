/**
 * A client that sends its request slowly (slowloris) is cut once the
 * request timeout passes, within about a second of it, never held for
 * twice the time (Node checks deadlines only every 30 s by default, which
 * let a 30 s timeout hold a socket about 60 s). Real sockets on 127.0.0.1,
 * with a short timeout so the test stays quick.
 */
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const TIMEOUT_MS = 1500
let h: ApiHarness
let port: number

beforeAll(async () => {
  h = await startApi({ requestTimeoutMs: TIMEOUT_MS })
  port = Number(new URL(await h.listen()).port)
})
afterAll(async () => { await h.close() })

/** Sends the request line, then one header line every `everyMs`, never ending the headers; resolves with how long the server kept the socket. */
async function slowloris (everyMs: number): Promise<{ ms: number, answer: string }> {
  return await new Promise((resolve, reject) => {
    const t0 = performance.now()
    let answer = ''
    const s = net.connect(port, '127.0.0.1', () => { s.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n') })
    const timer = setInterval(() => { if (!s.destroyed) s.write(`X-Slow-${Math.floor(performance.now())}: a\r\n`) }, everyMs)
    s.on('data', (b: Buffer) => { answer += b.toString() })
    s.on('error', () => {}) // a reset after the server gave up is what this test waits for
    s.on('close', () => { clearInterval(timer); resolve({ ms: performance.now() - t0, answer }) })
    setTimeout(() => { clearInterval(timer); s.destroy(); reject(new Error('the server never cut the slow sender')) }, 20_000).unref()
  })
}

describe('slow senders', () => {
  it('are cut soon after the request timeout, headers trickling in or not', async () => {
    const [trickle, silent] = await Promise.all([slowloris(200), slowloris(60_000)])
    for (const r of [trickle, silent]) {
      expect(r.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 100)
      // Generous for a loaded machine, yet far below twice the timeout plus Node's 30 s default check interval.
      expect(r.ms).toBeLessThan(TIMEOUT_MS + 6000)
      expect(r.answer).toMatch(/^HTTP\/1\.1 408|^$/)
    }
    // Well-behaved clients on the same server are unaffected.
    expect((await fetch(`${h.url}/health`)).status).toBe(200)
  })
})
