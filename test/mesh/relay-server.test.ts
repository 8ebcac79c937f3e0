/**
 * The relay members run for each other (src/mesh/libp2p/relay-server.ts),
 * on real libp2p nodes over TCP on 127.0.0.1 with the private network: a
 * relayed connection has no per-connection cap (the stock relay cuts one
 * at 128 KiB), and the relay bounds itself instead: a member's bytes per
 * second, what waits in the relay for a receiver that does not read,
 * relayed connections per member, and reservations only while it serves.
 */
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { identify } from '@libp2p/identify'
import type { Connection, Stream } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p } from 'libp2p'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger, waitFor } from '../../src/common/index.js'
import { privateNetwork } from '../../src/mesh/libp2p/private-network.js'
import { DEFAULT_RELAY_LIMITS, RelayLimiter, type RelayLimits } from '../../src/mesh/libp2p/relay-server.js'
import { runNodeScript, type Cli } from '../helpers/node-cli.js'

const PROTO = '/meta-core/test/relay-bytes/1'
const MiB = 1024 * 1024
const secret = randomBytes(32)
const nodes: Libp2p[] = []
const stopped: Cli[] = []

afterEach(async () => {
  for (const c of stopped.splice(0)) {
    c.child.kill('SIGKILL')
    await c.exited
  }
  await Promise.all(nodes.splice(0).map(async n => { await n.stop() }))
})

async function node (opts: { relay?: RelayLimiter, reserve?: boolean } = {}): Promise<Libp2p> {
  const n = await createLibp2p({
    privateKey: await generateKeyPair('Ed25519'),
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0', ...(opts.reserve === true ? ['/p2p-circuit'] : [])] },
    transports: [tcp(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: privateNetwork({ secret }),
    services: { identify: identify(), ...(opts.relay === undefined ? {} : { relay: opts.relay.server() }) }
  })
  nodes.push(n)
  return n
}

/** A relay with these limits, two members holding reservations on it, and the second's relayed address. */
async function relayed (limits: Partial<RelayLimits> = {}, serves = true): Promise<{ limiter: RelayLimiter, a: Libp2p, b: Libp2p, bAddr: Multiaddr | undefined,
  relay: Libp2p }> {
  const limiter = new RelayLimiter({ ...DEFAULT_RELAY_LIMITS, ...limits }, () => serves, silentLogger)
  const relay = await node({ relay: limiter })
  const a = await node({ reserve: true })
  const b = await node({ reserve: true })
  await a.dial(relay.getMultiaddrs()[0])
  await b.dial(relay.getMultiaddrs()[0])
  const circuit = (): Multiaddr | undefined => b.getMultiaddrs().find(m => m.toString().includes('/p2p-circuit'))
  if (serves) await waitFor(() => circuit() !== undefined, { timeoutMs: 10_000, what: 'a reservation on the relay' })
  return { limiter, a, b, bAddr: circuit(), relay }
}

/** Sends `bytes` on a new stream over `conn`; resolves with the ms it took the receiver to read them all. */
async function send (conn: Connection, bytes: number, received: () => number): Promise<number> {
  const s = await conn.newStream(PROTO)
  const chunk = randomBytes(256 * 1024)
  const t0 = Date.now()
  for (let sent = 0; sent < bytes; sent += chunk.byteLength) {
    if (!s.send(chunk)) await new Promise(resolve => s.addEventListener('drain', resolve, { once: true }))
  }
  await waitFor(() => received() >= bytes, { timeoutMs: 30_000, intervalMs: 10, what: `${bytes} bytes received` })
  return Date.now() - t0
}

function counting (n: Libp2p): () => number {
  let got = 0
  void n.handle(PROTO, (stream: Stream) => { stream.addEventListener('message', (e) => { got += e.data.byteLength }) })
  return () => got
}

describe('the relay members run for each other', () => {
  it('relays far past the stock relay\'s 128 KiB on one connection, end to end through the private network', async () => {
    const { a, b, bAddr, limiter } = await relayed()
    const got = counting(b)
    const conn = await a.dial(bAddr!)
    expect(conn.direct).toBe(false)
    expect(conn.limits).toBeUndefined()
    await send(conn, 8 * MiB, got)
    const v = limiter.view()
    expect(v).toMatchObject({ serving: true, reservations: 2, circuits: 1 })
    expect(v.bytesRelayed).toBeGreaterThanOrEqual(8 * MiB)
    expect(v.peers.find(p => p.peerId === a.peerId.toString())?.bytesIn).toBeGreaterThanOrEqual(8 * MiB)
    expect(v.peers.find(p => p.peerId === b.peerId.toString())?.bytesOut).toBeGreaterThanOrEqual(8 * MiB)
  })

  it('holds a member to its bytes per second', async () => {
    const { a, b, bAddr, limiter } = await relayed({ bytesPerSecondPerPeer: 4 * MiB })
    const got = counting(b)
    const ms = await send(await a.dial(bAddr!), 32 * MiB, got)
    // A second's budget, and what the relay's yamux window had granted when the stream was paused (up to 16 MiB), pass
    // at once; the rest waits: at least (32 - 4 - 16) MiB at 4 MiB/s.
    expect(ms).toBeGreaterThan(3_000)
    expect(limiter.view().throttled).toBeGreaterThan(0)
  })

  it('keeps about 1 MiB per relayed connection for a receiver that reads nothing at all, holding the sender back', async () => {
    const limiter = new RelayLimiter(DEFAULT_RELAY_LIMITS, () => true, silentLogger)
    const relay = await node({ relay: limiter })
    const a = await node()
    // The receiver in a process of its own, stopped once its streams are open: it reads nothing, not even its socket.
    const b = runNodeScript(['--import', 'tsx', path.resolve(import.meta.dirname, '../helpers/relay-member.ts'), relay.getMultiaddrs()[0].toString(),
      secret.toString('hex'), PROTO])
    stopped.push(b)
    await waitFor(() => b.stdout().includes('circuit') || b.child.exitCode !== null, { timeoutMs: 20_000, what: `the receiver's reservation (${b.stderr().slice(-300)})` })
    const conn = await a.dial(multiaddr(JSON.parse(b.stdout()).circuit as string))
    // Many streams: each may send what the receiver's window allowed at its opening (256 KiB) before it reads anything.
    const streams = await Promise.all(Array.from({ length: 48 }, async () => await conn.newStream(PROTO)))
    b.child.kill('SIGSTOP')
    const chunk = randomBytes(64 * 1024)
    for (const s of streams) {
      void (async () => {
        for (let i = 0; i < 64; i++) if (!s.send(chunk)) await new Promise(resolve => s.addEventListener('drain', resolve, { once: true }))
      })().catch(() => {})
    }
    // A fixed span on purpose: what is checked is how much the relay took in and held while the receiver cannot
    // read, which grows for as long as the sender pushes: no event says it stopped.
    await new Promise(resolve => setTimeout(resolve, 2_000))
    // What the relay took in from the sender and has not handed on: without its backpressure, all that the streams'
    // windows allow (about 8 MiB of the 12 here, past what the stopped receiver's socket buffers took).
    const v = limiter.view()
    const taken = v.peers.find(p => p.peerId === a.peerId.toString())?.bytesIn ?? 0
    const handed = v.peers.find(p => p.peerId !== a.peerId.toString())?.bytesOut ?? 0
    expect(taken).toBeGreaterThan(0)
    expect(taken - handed).toBeLessThan(2 * MiB)
    expect(limiter.view().circuits).toBe(1)
    for (const s of streams) s.abort(new Error('done'))
  })

  it('refuses a relayed connection past a member\'s limit, and reservations while it does not serve', async () => {
    const { a, b, bAddr, limiter, relay } = await relayed({ maxCircuitsPerPeer: 1 })
    counting(b)
    await a.dial(bAddr!)
    const c = await node()
    await c.dial(relay.getMultiaddrs()[0])
    await expect(c.dial(bAddr!)).rejects.toThrow()
    expect(limiter.view()).toMatchObject({ circuits: 1, refusedCircuits: 1 })

    const idle = await relayed({}, false)
    await waitFor(() => idle.limiter.view().refusedReservations > 0, { timeoutMs: 10_000, what: 'the idle relay to refuse a reservation' })
    expect(idle.b.getMultiaddrs().some(m => m.toString().includes('/p2p-circuit'))).toBe(false)
    expect(idle.limiter.view()).toMatchObject({ serving: false, reservations: 0 })
  })
})
