/**
 * The byte protocol over libp2p streams (framing in ../bytes-wire.ts): this
 * node serves ranges of its own library's files to peers of its mesh, and
 * opens ranges on peers for its own clients.
 *
 * Serving: the file comes only from the `LocalFileOpener` (the node's rules
 * for its own copies). Per peer, at most `maxStreamsPerPeer` transfers run
 * at once and `bytesPerSecondPerPeer` are sent; beyond the stream limit, or
 * with more than a second of sending owed, the request is answered `busy`
 * with a retry hint. Writes wait for drain (the requester's pace); the
 * transfer stops when the requester resets or closes the stream. After the
 * last byte the file is checked again: one that changed while it was read
 * ends in a reset, never in a clean end the requester would take as whole.
 *
 * Only peers of this mesh reach the handler at all: the private network
 * (swarm key) refuses every other connection before any protocol runs.
 */
import type { Connection, Libp2p, PeerId, Stream } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import type { Logger } from '../../common/index.js'
import type { ByteSource, LocalFileOpener, OpenRangeOptions, PeerByteFigures, RemoteRange, Refusal } from '../bytes-service.js'
import { BYTES_PROTOCOL, BytesWireError, decodeHeader, decodeRequest, encodeFrame, splitFrame, type BytesHeader, type BytesRequest } from '../bytes-wire.js'
import { StreamReader } from './stream-reader.js'

export interface BytesLimits {
  /** Transfers one peer may run at once (a player seeking opens a few). */
  maxStreamsPerPeer: number
  /** Bytes per second sent to one peer. */
  bytesPerSecondPerPeer: number
  /** Requesting: a holder silent this long (no header, or no bytes while they are wanted) has stalled. */
  stallMs: number
}

export const DEFAULT_BYTES_LIMITS: BytesLimits = { maxStreamsPerPeer: 8, bytesPerSecondPerPeer: 512 * 1024 * 1024, stallMs: 5_000 }

/**
 * Bytes left queued in the stream before the next read from the file waits.
 * `stream.onDrain()` cannot be the wait: in @libp2p/utils 7.4 its promise is
 * never renewed once a first drain resolved it, so it stops waiting and the
 * whole file would pile up in memory; the 'drain' and 'idle' events are
 * watched instead.
 */
const WRITE_HIGH_WATER = 1024 * 1024
/** Bytes read from the file per send: large enough for throughput, small against yamux's 256 KiB initial window. */
const CHUNK_BYTES = 256 * 1024
/** A requester gets this long to send its request. */
const REQUEST_TIMEOUT_MS = 10_000
/** Retry hint when the stream limit is reached: a transfer of a few MB ends within it on a LAN. */
const BUSY_RETRY_MS = 500
/** Inbound streams libp2p accepts per connection for this protocol (our own per-peer limit answers `busy` below it). */
const MAX_PROTOCOL_STREAMS = 64

interface PeerState extends PeerByteFigures {
  tokens: number
  at: number
}

export class BytesProtocol implements ByteSource {
  private readonly peers = new Map<string, PeerState>()

  constructor (
    private readonly node: Libp2p,
    private readonly opener: LocalFileOpener | undefined,
    private readonly limits: BytesLimits,
    private readonly log: Logger
  ) {}

  async start (): Promise<void> {
    await this.node.handle(BYTES_PROTOCOL, async (stream: Stream, connection: Connection) => {
      await this.serve(stream, connection.remotePeer.toString())
    }, { maxInboundStreams: MAX_PROTOCOL_STREAMS, maxOutboundStreams: MAX_PROTOCOL_STREAMS })
  }

  figures (): PeerByteFigures[] {
    return [...this.peers.values()].map(({ tokens: _t, at: _a, ...f }) => f)
  }

  private peer (id: string): PeerState {
    let p = this.peers.get(id)
    if (p === undefined) {
      p = { peerId: id, bytesServed: 0, bytesFetched: 0, streamsServed: 0, busyRefusals: 0, servingNow: 0, fetchingNow: 0,
        tokens: this.limits.bytesPerSecondPerPeer, at: Date.now() }
      this.peers.set(id, p)
    }
    return p
  }

  /** Refills the peer's byte bucket (one second's worth at most) and returns how many ms of sending it owes. */
  private owedMs (p: PeerState): number {
    const now = Date.now()
    const rate = this.limits.bytesPerSecondPerPeer
    p.tokens = Math.min(rate, p.tokens + ((now - p.at) / 1000) * rate)
    p.at = now
    return p.tokens >= 0 ? 0 : Math.ceil((-p.tokens / rate) * 1000)
  }

  // ------------------------------------------------------------------ serving

  private async serve (stream: Stream, peerId: string): Promise<void> {
    const reader = new StreamReader(stream)
    const gone = new AbortController()
    stream.addEventListener('close', () => { gone.abort() })
    const p = this.peer(peerId)
    let req: BytesRequest
    try {
      req = decodeRequest(await readFrame(reader, REQUEST_TIMEOUT_MS, gone.signal))
    } catch (err) {
      this.log.debug('bytes request refused', { peer: peerId, err })
      await this.refuse(stream, { ok: false, code: 'bad-request', message: 'malformed request' })
      return
    }
    const owed = this.owedMs(p)
    if (p.servingNow >= this.limits.maxStreamsPerPeer || owed > 1000) {
      p.busyRefusals++
      await this.refuse(stream, { ok: false, code: 'busy', message: 'too many transfers from this peer', retryAfterMs: Math.max(BUSY_RETRY_MS, owed) })
      return
    }
    p.servingNow++
    try {
      await this.sendRange(stream, req, p, gone.signal)
    } catch (err) {
      // A requester that went away, or a file that failed to read: this stream only; the requester fails over.
      this.log.debug('bytes transfer ended early', { peer: peerId, cid: req.cid, err })
      stream.abort(err instanceof Error ? err : new Error(String(err)))
    } finally {
      p.servingNow--
    }
  }

  private async refuse (stream: Stream, h: Refusal): Promise<void> {
    try {
      stream.send(encodeFrame(h))
      await stream.close({ signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)))
    }
  }

  private async sendRange (stream: Stream, req: BytesRequest, p: PeerState, signal: AbortSignal): Promise<void> {
    const file = this.opener === undefined ? undefined : await this.opener(req.cid)
    if (file === undefined) {
      await this.refuse(stream, { ok: false, code: 'not-found', message: 'no copy of this CID here' })
      return
    }
    try {
      const length = Math.max(0, Math.min(req.length, file.size - req.offset))
      stream.send(encodeFrame({ ok: true, size: file.size, mtimeMs: file.mtimeMs, length, ext: file.ext }))
      if (length > 0) p.streamsServed++
      let pos = req.offset
      const end = req.offset + length
      while (pos < end) {
        const n = Math.min(CHUNK_BYTES, end - pos)
        const buf = Buffer.allocUnsafe(n)
        const { bytesRead } = await file.fh.read(buf, 0, n, pos)
        // A file that shrank under us: the requester sees a reset, not a short clean end.
        if (bytesRead === 0) throw new Error('file ended before the range did')
        signal.throwIfAborted()
        stream.send(bytesRead === n ? buf : buf.subarray(0, bytesRead))
        await waitForRoom(stream, signal)
        pos += bytesRead
        p.bytesServed += bytesRead
        p.tokens -= bytesRead
        const owed = this.owedMs(p)
        if (owed > 0) await sleepUnlessAborted(owed, signal)
      }
      if (length > 0) {
        const st = await file.fh.stat()
        if (st.size !== file.size || st.mtimeMs !== file.mtimeMs) throw new Error('file changed while it was sent')
      }
      await stream.close({ signal })
    } finally {
      await file.fh.close()
    }
  }

  // ------------------------------------------------------------------ requesting

  rankHolders (peers: readonly string[]): string[] {
    const self = this.node.peerId.toString()
    const scored: Array<[string, number]> = []
    for (const id of new Set(peers)) {
      if (id === self) continue
      let pid: PeerId
      try {
        pid = peerIdFromString(id)
      } catch {
        continue // a holder id that is no peer id (a standalone node's `node-<hex>`) cannot be dialed
      }
      const connected = this.node.getConnections(pid).length > 0
      scored.push([id, connected ? 0 : 1])
    }
    return scored.sort((a, b) => a[1] - b[1]).map(s => s[0])
  }

  async openRange (peer: string, cid: string, offset: number, length: number, opts: OpenRangeOptions = {}): Promise<RemoteRange | Refusal> {
    const idleMs = opts.idleMs ?? this.limits.stallMs
    const req: BytesRequest = { v: 1, cid, offset, length }
    const dialSignal = opts.signal === undefined ? AbortSignal.timeout(idleMs) : AbortSignal.any([opts.signal, AbortSignal.timeout(idleMs)])
    const stream = await this.node.dialProtocol(peerIdFromString(peer), BYTES_PROTOCOL, { signal: dialSignal })
    const reader = new StreamReader(stream)
    let header: BytesHeader
    try {
      stream.send(encodeFrame(req))
      header = decodeHeader(await readFrame(reader, idleMs, opts.signal), req)
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)))
      throw err
    }
    if (!header.ok || header.length === 0) {
      void stream.close().catch(() => { stream.abort(new Error('closing after the header failed')) })
      return header.ok ? { ok: true, header, body: emptyBody(), cancel: () => {} } : header
    }
    const p = this.peer(peer)
    const total = header.length
    const body = async function * (): AsyncGenerator<Buffer> {
      let got = 0
      let clean = false
      p.fetchingNow++
      try {
        while (got < total) {
          const chunk = await reader.read(idleMs, opts.signal)
          if (chunk === undefined) throw new BytesWireError(`holder ended after ${got} of ${total} bytes`)
          if (got + chunk.length > total) throw new BytesWireError('holder sent more bytes than announced')
          got += chunk.length
          p.bytesFetched += chunk.length
          yield chunk
        }
        clean = true
      } finally {
        p.fetchingNow--
        if (clean) void stream.close().catch(() => { stream.abort(new Error('close failed')) })
        else stream.abort(new Error('requester stopped reading'))
      }
    }
    return { ok: true, header, body: body(), cancel: () => { stream.abort(new Error('cancelled')) } }
  }
}

async function readFrame (reader: StreamReader, idleMs: number, signal?: AbortSignal): Promise<unknown> {
  let buf: Buffer = Buffer.alloc(0)
  for (;;) {
    const chunk = await reader.read(idleMs, signal)
    if (chunk === undefined) throw new BytesWireError('stream ended before a whole frame')
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
    const f = splitFrame(buf)
    if (f !== undefined) {
      reader.unshift(f.rest)
      return f.json
    }
  }
}

function emptyBody (): AsyncIterable<Buffer> {
  return { [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) }
}

/** Waits until the stream's write queue is below WRITE_HIGH_WATER (the peer's flow control lets it go). */
async function waitForRoom (stream: Stream, signal: AbortSignal): Promise<void> {
  while (stream.writeBufferLength > WRITE_HIGH_WATER) {
    signal.throwIfAborted()
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stream.removeEventListener('drain', done)
        stream.removeEventListener('idle', done)
        signal.removeEventListener('abort', done)
        resolve()
      }
      stream.addEventListener('drain', done)
      stream.addEventListener('idle', done)
      // A stream that closes aborts `signal` (serve() listens for 'close').
      signal.addEventListener('abort', done, { once: true })
    })
    // 'drain' comes before the queue is flushed (a microtask later): let that run before looking again.
    await new Promise(resolve => setImmediate(resolve))
  }
  signal.throwIfAborted()
}

async function sleepUnlessAborted (ms: number, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    const t = setTimeout(done, ms)
    function done (): void { clearTimeout(t); signal.removeEventListener('abort', done); resolve() }
    signal.addEventListener('abort', done, { once: true })
  })
  signal.throwIfAborted()
}
