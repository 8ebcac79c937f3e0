/**
 * Bare libp2p nodes (TCP on 127.0.0.1, noise, yamux) with a given
 * connection protector, and two protocols to push bytes through it: `echo`
 * (each length-prefixed message comes back) and `sink` (reads a byte count
 * and that many bytes, answers their SHA-256). For the private network's
 * compatibility tests and its throughput benchmark.
 */
import '../../src/mesh/libp2p/polyfill.js'
import { createHash } from 'node:crypto'
import { noise } from '@libp2p/noise'
import { preSharedKey } from '@libp2p/pnet'
import { tcp } from '@libp2p/tcp'
import { byteStream, lpStream } from '@libp2p/utils'
import { yamux } from '@libp2p/yamux'
import { createLibp2p, type Libp2p } from 'libp2p'
import type { ConnectionProtector } from '@libp2p/interface'
import { privateNetwork } from '../../src/mesh/libp2p/private-network.js'
import type { SwarmKey } from '../../src/mesh/libp2p/swarm-key.js'

const ECHO = '/test/echo/1.0.0'
const SINK = '/test/sink/1.0.0'
const MAX_MESSAGE = 4 * 1024 * 1024

export type ProtectorKind = 'ours' | 'stock'

/** Our protector or @libp2p/pnet's, for the same swarm key. */
export function protectorFor (kind: ProtectorKind, key: SwarmKey, timeoutMs?: number): () => ConnectionProtector {
  if (kind === 'ours') return privateNetwork({ secret: key.secret, timeoutMs })
  return preSharedKey({ psk: key.psk, timeout: timeoutMs })
}

/** A node with `protector` (none: a plain connection, the benchmark's baseline). */
export async function startPlainNode (protector?: () => ConnectionProtector): Promise<Libp2p> {
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    ...(protector !== undefined ? { connectionProtector: protector } : {})
  })
  await node.handle(ECHO, async (stream) => {
    const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE })
    try {
      for (;;) await lp.write(await lp.read())
    } catch {
      stream.abort(new Error('echo ended')) // read() throws at the end of the stream: that is the end of the test
    }
  })
  await node.handle(SINK, async (stream) => {
    try {
      const bytes = byteStream(stream)
      const head = (await bytes.read({ bytes: 8 })).subarray()
      const total = Number(new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0))
      const hash = createHash('sha256')
      for (let got = 0; got < total;) {
        const chunk = await bytes.read()
        if (chunk === null) throw new Error('sink: the stream ended early')
        hash.update(chunk.subarray())
        got += chunk.byteLength
      }
      await bytes.write(hash.digest())
      await stream.close()
    } catch (err) {
      stream.abort(err as Error) // the sender's read of the digest fails: that is the test's failure
    }
  })
  return node
}

/** Sends each message over one echo stream and returns what came back. */
export async function echo (from: Libp2p, to: Libp2p, messages: Uint8Array[], timeoutMs = 20_000): Promise<Uint8Array[]> {
  const signal = AbortSignal.timeout(timeoutMs)
  const stream = await from.dialProtocol(to.getMultiaddrs()[0], ECHO, { signal })
  const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE })
  const back: Uint8Array[] = []
  for (const m of messages) {
    await lp.write(m, { signal })
    back.push((await lp.read({ signal })).subarray())
  }
  await stream.close({ signal })
  return back
}

/** Streams `total` bytes of `chunk` repeated to the sink; resolves with the sink's SHA-256 of them. */
export async function sink (from: Libp2p, to: Libp2p, chunk: Uint8Array, total: number, timeoutMs = 120_000): Promise<Buffer> {
  const signal = AbortSignal.timeout(timeoutMs)
  const stream = await from.dialProtocol(to.getMultiaddrs()[0], SINK, { signal })
  const bytes = byteStream(stream)
  const head = new Uint8Array(8)
  new DataView(head.buffer).setBigUint64(0, BigInt(total))
  await bytes.write(head, { signal })
  for (let sent = 0; sent < total; sent += chunk.length) await bytes.write(chunk.subarray(0, Math.min(chunk.length, total - sent)), { signal })
  const digest = await bytes.read({ bytes: 32, signal })
  await stream.close({ signal })
  return Buffer.from(digest.subarray())
}
