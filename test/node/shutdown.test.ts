/**
 * Graceful shutdown of a real node process (`node bin/meta-core.js`) under
 * write load: SIGTERM → it refuses new requests with a retryable 503, lets
 * the request in flight finish, ends its event streams, closes the store
 * and exits 0 within its 5 s budget; after a restart every write it
 * acknowledged is there.
 */
import net from 'node:net'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor, withTimeout } from '../../src/common/index.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'
import { testCid } from '../helpers/record-ops.js'
import { openSse } from '../helpers/sse-client.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-shutdown-')
const clis: Cli[] = []
afterAll(async () => {
  await reapClis(clis)
  tmp.cleanup()
})

const WRITERS = 8

function start (): Cli {
  const cli = runCli(['--port', '0', '--log-level', 'info', '--enable-file-watcher=false'], {
    META_CORE_DB_PATH: path.join(tmp.dir, 'db', 'm.db'), FILES_PATH: path.join(tmp.dir, 'files')
  })
  clis.push(cli)
  return cli
}

/**
 * A PATCH sent over a raw socket in two parts: the headers and half the
 * body now, the rest when `finish` is called, together with a second
 * request pipelined on the same connection. `Expect: 100-continue` makes
 * the server say when it has taken the request in (the 100 is written as
 * the request is handed to the routes), so the request is surely in flight
 * before the test signals the node.
 */
async function splitRequest (url: string, cid: string): Promise<{ finish: (second: string) => Promise<string> }> {
  const { hostname, port } = new URL(url)
  const body = JSON.stringify({ title: 'in flight at SIGTERM' })
  const socket = net.connect(Number(port), hostname)
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
  let received = ''
  socket.setEncoding('utf8')
  socket.on('data', (d: string) => { received += d })
  const closed = new Promise<void>(resolve => { socket.once('close', () => { resolve() }) })
  socket.write(`PATCH /meta/${cid} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 10)}`)
  await waitFor(() => received.includes('100 Continue'), { timeoutMs: 10_000, what: 'the node to take the request in (100 Continue)' })
  received = ''
  return {
    finish: async (second) => {
      socket.write(body.slice(10) + `GET /api/meta/${second} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`)
      await withTimeout(closed, 10_000, 'the server to answer both requests and close the connection')
      return received
    }
  }
}

describe('SIGTERM under write load', () => {
  it('refuses new requests with a retryable 503, finishes the one in flight, exits 0 within 5 s, and keeps every acknowledged write', async () => {
    const node = start()
    const url = await listeningUrl(node)
    const stream = await openSse(`${url}/api/events/meta`)
    expect(stream.status).toBe(200)

    const acked = new Map<string, string>()
    let refused = 0
    let stop = false
    let seq = 0
    const writer = async (w: number): Promise<void> => {
      while (!stop) {
        const cid = testCid(1_000_000 + w * 100_000 + seq++)
        const title = `write ${w}/${seq}`
        try {
          const r = await fetch(`${url}/meta/${cid}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title }) })
          const text = await r.text()
          if (r.status === 200) acked.set(cid, title)
          else if (r.status === 503) {
            expect(JSON.parse(text)).toMatchObject({ error: 'shutting_down', retryable: true })
            refused++
          } else throw new Error(`unexpected ${r.status}: ${text}`)
        } catch (err) {
          if (err instanceof Error && err.message.startsWith('unexpected')) throw err
          // Connection refused or reset once the node stopped listening: never acknowledged, so nothing to check.
          if (node.child.exitCode !== null || node.child.signalCode !== null) return
        }
      }
    }
    const writers = Array.from({ length: WRITERS }, async (_, w) => { await writer(w) })
    await waitFor(() => acked.size >= 200, { timeoutMs: 30_000, what: '200 acknowledged writes under load' })

    const inFlightCid = testCid(999)
    const split = await splitRequest(url, inFlightCid)
    const sentAt = Date.now()
    node.child.kill('SIGTERM')
    // The node notices the signal and starts refusing; the request already in flight is then completed.
    await waitFor(() => node.stderr().includes('SIGTERM: stopping'), { timeoutMs: 5000, what: 'the node to start stopping' })
    const raw = await split.finish(inFlightCid)
    const code = await withTimeout(node.exited, 10_000, 'the node to exit after SIGTERM')
    const tookMs = Date.now() - sentAt
    stop = true
    await Promise.all(writers)

    expect(code, node.stderr().slice(-2000)).toBe(0)
    // The node's own budget is 5 s (it exits 1 past it); the wall clock here also holds process teardown.
    expect(tookMs).toBeLessThan(5_000 + 2_000)
    expect(node.stderr()).toMatch(/stopped ms=\d+/)
    // The request in flight was answered 200; the one behind it on the same connection got the retryable 503.
    const answers = raw.split(/(?=HTTP\/1\.1 )/)
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /)
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /)
    expect(answers[1]).toContain('"retryable":true')
    expect(answers[1].toLowerCase()).toContain('connection: close')
    acked.set(inFlightCid, 'in flight at SIGTERM')
    // The event stream was ended by the node, not cut by the test.
    await waitFor(() => stream.ended, { timeoutMs: 5000, what: 'the SSE stream to end' })

    const again = start()
    const url2 = await listeningUrl(again)
    let missing = 0
    const all = [...acked]
    for (let i = 0; i < all.length; i += 16) {
      await Promise.all(all.slice(i, i + 16).map(async ([cid, title]) => {
        const r = await fetch(`${url2}/api/meta/${cid}`)
        const got = r.status === 200 ? (await r.json() as { metadata: { title?: string } }).metadata.title : undefined
        if (got !== title) missing++
      }))
    }
    expect(missing, `${missing} of ${acked.size} acknowledged writes lost (${refused} refused with 503)`).toBe(0)
    again.child.kill('SIGTERM')
    expect(await withTimeout(again.exited, 10_000, 'the restarted node to exit')).toBe(0)
  }, 90_000)
})
