/**
 * Reads a libp2p stream chunk by chunk with backpressure. libp2p's own
 * byteStream/lpStream buffer everything that arrives and reset the stream
 * past 4 MiB, so a slow consumer (a video player that stopped reading)
 * would kill a transfer; this reader pauses the stream instead once
 * HIGH_WATER bytes wait unread (yamux then stops granting window and the
 * sender's writes wait for drain), and resumes it below half of that.
 *
 * While paused, yamux may still deliver what the window already allowed
 * (up to its 16 MiB maximum window); the stream's read buffer limit is
 * raised above that so those bytes are kept, not a reason to reset.
 */
import type { Stream } from '@libp2p/interface'
import { AbortedError, TimeoutError } from '../../common/index.js'

const HIGH_WATER = 1024 * 1024
/** yamux's largest stream window (16 MiB) plus slack. */
const READ_BUFFER_LIMIT = 20 * 1024 * 1024

export class StreamReader {
  private readonly chunks: Buffer[] = []
  private queued = 0
  private ended = false
  private error: Error | undefined
  private wake: (() => void) | undefined

  constructor (private readonly stream: Stream) {
    stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, READ_BUFFER_LIMIT)
    stream.addEventListener('message', (evt) => {
      // Views of what arrived, never a copy: a list (a muxer frame that spans decrypted messages) is kept as its parts.
      const d = evt.data
      if (d instanceof Uint8Array) {
        this.chunks.push(Buffer.from(d.buffer, d.byteOffset, d.byteLength))
      } else {
        for (const part of d) this.chunks.push(Buffer.from(part.buffer, part.byteOffset, part.byteLength))
      }
      this.queued += d.byteLength
      if (this.queued > HIGH_WATER && stream.readStatus === 'readable') stream.pause()
      this.notify()
    })
    stream.addEventListener('end', () => { this.ended = true; this.notify() })
    stream.addEventListener('close', (evt) => {
      this.error ??= evt.error
      this.ended = true
      this.notify()
    })
  }

  /** Puts bytes back in front (what was read past a frame). */
  unshift (b: Buffer): void {
    if (b.length === 0) return
    this.chunks.unshift(b)
    this.queued += b.length
  }

  /**
   * The next chunk, or undefined at a clean end of stream. Throws the
   * stream's error after a reset, TimeoutError when nothing arrived for
   * `idleMs`, AbortedError when `signal` fires.
   */
  async read (idleMs: number, signal?: AbortSignal): Promise<Buffer | undefined> {
    while (this.chunks.length === 0) {
      if (this.error !== undefined) throw this.error
      if (this.ended) return undefined
      await this.waitForData(idleMs, signal)
    }
    const b = this.chunks.shift()!
    this.queued -= b.length
    if (this.queued < HIGH_WATER / 2 && this.stream.readStatus === 'paused') this.stream.resume()
    return b
  }

  private async waitForData (idleMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) throw new AbortedError('aborted while reading a stream')
    await new Promise<void>((resolve, reject) => {
      const done = (err?: Error): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.wake = undefined
        if (err === undefined) resolve()
        else reject(err)
      }
      const onAbort = (): void => { done(new AbortedError('aborted while reading a stream')) }
      const timer = setTimeout(() => { done(new TimeoutError(`nothing arrived for ${idleMs} ms`)) }, idleMs)
      signal?.addEventListener('abort', onAbort, { once: true })
      this.wake = () => { done() }
    })
  }

  private notify (): void {
    this.wake?.()
  }
}
