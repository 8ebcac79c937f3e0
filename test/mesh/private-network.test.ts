/**
 * The private network (src/mesh/libp2p/private-network.ts).
 *
 * Churn: thousands of connections through one protector in one process,
 * honest ones (both ends protected, data both ways, 20 kept open and
 * talking) and hostile ones (a peer without the key sends a nonce, then
 * junk, then drops), and now and then one 256 KiB write. @libp2p/pnet dies
 * on this after about 3,500 handshakes (its `xsalsa20` ciphers leak in a
 * shared WebAssembly memory, and a large update grows it and leaves the
 * other ciphers' views stale, until `Memory.grow()` throws); ours must take
 * it with the heap flat.
 * `META_CORE_PNET_HANDSHAKES` sets the count (8,000), and
 * `META_CORE_PNET_PROTECTOR=stock` runs the same test on @libp2p/pnet,
 * which must fail.
 *
 * Compatibility: real libp2p nodes on 127.0.0.1, one with our protector and
 * one with @libp2p/pnet, exchange data both ways with the same swarm key and
 * never connect with different keys.
 */
import { createHash, randomBytes } from 'node:crypto'
import v8 from 'node:v8'
import vm from 'node:vm'
import { multiaddrConnectionPair } from '@libp2p/utils'
import type { ConnectionProtector, MessageStream } from '@libp2p/interface'
import type { Libp2p } from 'libp2p'
import { afterAll, describe, expect, it } from 'vitest'
import { parseSwarmKey, type SwarmKey } from '../../src/mesh/libp2p/swarm-key.js'
import { XSalsa20 } from '../../src/mesh/libp2p/xsalsa20.js'
import { echo, protectorFor, sink, startPlainNode, type ProtectorKind } from '../helpers/pnet-peers.js'

const HANDSHAKES = Number(process.env.META_CORE_PNET_HANDSHAKES ?? 8000)
const UNDER_TEST: ProtectorKind = process.env.META_CORE_PNET_PROTECTOR === 'stock' ? 'stock' : 'ours'
const KEY = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'5e'.repeat(32)}`)!
const OTHER_KEY = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'a7'.repeat(32)}`)!

/** The next message on `s`, within a deadline (a lost message must fail the test, not hang it). */
async function nextMessage (s: MessageStream, timeoutMs = 5_000): Promise<number> {
  return await new Promise((resolve, reject) => {
    const t = setTimeout(() => { reject(new Error('no message within the deadline')) }, timeoutMs)
    s.addEventListener('message', (evt) => { clearTimeout(t); resolve(evt.data.byteLength) }, { once: true })
  })
}

/** A forced full collection's heap size (a flat line means connections and ciphers are freed). */
function heapAfterGc (): number {
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc') as () => void
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

interface ChurnResult {
  handshakes: number
  hostile: number
  /** Heap after the run less heap after the first 1,000 handshakes, both after a full collection. */
  heapGrowthBytes: number
  /** Live cipher instances (ours) with 20 connections open, then after they closed. */
  liveCiphersOpen: number
  liveCiphersClosed: number
}

/** Live instances of our cipher after a full collection. */
function liveCiphers (): number {
  return v8.queryObjects(XSalsa20, { format: 'count' })
}

/** Runs `handshakes` protect() calls through `protector`, one in four from a hostile peer. */
async function churn (protector: ConnectionProtector, handshakes: number): Promise<ChurnResult> {
  const open: Array<[MessageStream, MessageStream]> = []
  const payload = randomBytes(1024)
  let done = 0
  let hostile = 0
  let heapAtWarm = 0
  try {
    for (let i = 0; done < handshakes; i++) {
      const [a, b] = multiaddrConnectionPair()
      if (i % 4 === 3) {
        // Without the key: answer the nonce exchange, send junk, drop. The node deciphers the junk all the same.
        const protecting = protector.protect(a)
        b.send(randomBytes(24))
        const victim = await protecting
        const junk = nextMessage(victim)
        b.send(randomBytes(300))
        await junk
        b.abort(new Error('hostile peer gone'))
        hostile++
        done++
      } else {
        const [pa, pb] = await Promise.all([protector.protect(a), protector.protect(b)])
        const there = nextMessage(pb)
        pa.send(payload)
        expect(await there).toBe(payload.length)
        const back = nextMessage(pa)
        pb.send(payload.subarray(0, 100))
        expect(await back).toBe(100)
        open.push([pa, pb])
        done += 2
      }
      // Keep the older connections talking: with @libp2p/pnet, they are the ones whose cipher views go stale.
      for (const [x, y] of open.slice(-3)) {
        const got = nextMessage(y)
        x.send(payload.subarray(0, 16))
        await got
      }
      if (i % 500 === 499 && open.length > 0) {
        // Now and then a large write: one cipher update of 256 KiB.
        const [x, y] = open[0]
        const got = nextMessage(y)
        x.send(randomBytes(256 * 1024))
        await got
      }
      if (open.length > 20) for (const s of open.shift()!) s.abort(new Error('closed by the test'))
      // Back to the event loop now and then, as a node on TCP is: the in-memory pairs deliver through microtasks,
      // and their queues release closed connections from timers, which only run when the loop turns.
      if (i % 16 === 15) await new Promise(resolve => setImmediate(resolve))
      if (heapAtWarm === 0 && done >= 1000) heapAtWarm = heapAfterGc()
    }
  } catch (err) {
    throw new Error(`after ${done} handshakes: ${(err as Error).message}`, { cause: err })
  }
  const liveCiphersOpen = liveCiphers()
  for (const pair of open) for (const s of pair) s.abort(new Error('closed by the test'))
  open.length = 0
  // A fixed wait on purpose: the aborts release their ciphers from timers, and what is measured is what
  // is left after they ran (the stock protector leaks, so there is no count to wait for).
  await new Promise(resolve => setTimeout(resolve, 50))
  return { handshakes: done, hostile, heapGrowthBytes: heapAfterGc() - heapAtWarm, liveCiphersOpen, liveCiphersClosed: liveCiphers() }
}

describe(`private network (${UNDER_TEST === 'ours' ? 'ours' : '@libp2p/pnet'})`, () => {
  it(`takes ${HANDSHAKES} handshakes, one connection in four hostile, without crashing or growing`, async () => {
    const result = await churn(protectorFor(UNDER_TEST, KEY)(), HANDSHAKES)
    expect(result.handshakes).toBeGreaterThanOrEqual(HANDSHAKES)
    expect(result.hostile).toBeGreaterThan(HANDSHAKES / 8)
    // Ciphers live as long as their connection: 20 open pairs hold 80 (a leak would be two per handshake).
    expect(result.liveCiphersOpen).toBeLessThan(400)
    expect(result.liveCiphersClosed).toBeLessThan(20)
    // A leak of one connection's objects (a few KiB each) over ~7,000 handshakes would be tens of MiB.
    expect(result.heapGrowthBytes).toBeLessThan(8 * 1024 * 1024)
  }, 120_000)
})

describe('wire compatibility with @libp2p/pnet (TCP on 127.0.0.1)', () => {
  const nodes: Libp2p[] = []
  const start = async (kind: ProtectorKind, key: SwarmKey): Promise<Libp2p> => {
    const n = await startPlainNode(protectorFor(kind, key))
    nodes.push(n)
    return n
  }
  afterAll(async () => { await Promise.all(nodes.map(async n => { await n.stop() })) })

  it('a node with our protector and one with the stock protector exchange data both ways with the same key', async () => {
    const ours = await start('ours', KEY)
    const stock = await start('stock', KEY)
    const messages = [randomBytes(1), randomBytes(63), randomBytes(64), randomBytes(65), randomBytes(100_000), randomBytes(1_500_000)]
    for (const [from, to] of [[ours, stock], [stock, ours]]) {
      const back = await echo(from, to, messages)
      expect(back.map(b => Buffer.from(b).toString('hex'))).toEqual(messages.map(m => m.toString('hex')))
    }
    // Bulk one way, as a pull page goes: the digest the other side computed matches.
    const chunk = randomBytes(64 * 1024 + 7)
    const total = 8 * 1024 * 1024
    const expected = createHash('sha256')
    for (let sent = 0; sent < total; sent += chunk.length) expected.update(chunk.subarray(0, Math.min(chunk.length, total - sent)))
    expect((await sink(ours, stock, chunk, total)).toString('hex')).toBe(expected.copy().digest('hex'))
    expect((await sink(stock, ours, chunk, total)).toString('hex')).toBe(expected.digest('hex'))
  })

  it('nodes with different keys never connect, whichever protector each runs', async () => {
    const pairs: Array<[ProtectorKind, ProtectorKind]> = [['ours', 'stock'], ['stock', 'ours'], ['ours', 'ours']]
    for (const [a, b] of pairs) {
      const dialer = await start(a, KEY)
      const listener = await start(b, OTHER_KEY)
      await expect(echo(dialer, listener, [randomBytes(10)], 5_000), `${a} → ${b}`).rejects.toThrow()
      expect(dialer.getConnections().length + listener.getConnections().length, `${a} → ${b}`).toBe(0)
    }
  })
})
