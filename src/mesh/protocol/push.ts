/**
 * Push: the changes this node originated, batched into frames and published
 * on the gossip topic. A frame leaves `flushMs` after the first change it
 * carries, or at once when `flushBytes` of changes are waiting. Each frame
 * takes the next sequence number of this start's epoch, so receivers notice
 * a missing frame and pull.
 *
 * Only entries whose origin is this node are pushed: a remote change this
 * node applied reaches its other peers through their pulls (and through the
 * origin's own frame, which gossipsub relays).
 */
import { encodeSized, entryWeight, FRAME_LIMITS, MAX_MESSAGE_BYTES } from '../messages.js'
import type { MeshOptions } from './options.js'
import type { MeshRuntime, RemoteEntry } from './runtime.js'

/** Raw bytes of entries per frame before encoding: far enough under the 1 MiB frame limit that deflate never matters. */
const FRAME_ENTRY_BYTES = 256 * 1024

interface PushStats {
  framesOut: number
  bytesOut: number
  publishFailures: number
}

export class Pusher {
  readonly stats: PushStats = { framesOut: 0, bytesOut: 0, publishFailures: 0 }
  private readonly buffer = new Map<string, RemoteEntry>()
  private bytes = 0
  private cancelTimer: (() => void) | undefined
  private seq = 0

  constructor (
    private readonly rt: MeshRuntime,
    private readonly selfId: string,
    private readonly epoch: number,
    private readonly opts: Pick<MeshOptions, 'flushMs' | 'flushBytes'>,
    private readonly onError: (err: unknown) => void
  ) {}

  get lastSeq (): number {
    return this.seq
  }

  /** Takes committed changes (local and remote); keeps this node's own. */
  add (changes: readonly RemoteEntry[]): void {
    for (const e of changes) {
      if (e.origin !== this.selfId) continue
      const cur = this.buffer.get(e.key)
      if (cur !== undefined && cur.hlc > e.hlc) continue
      this.buffer.set(e.key, e)
      this.bytes += entryWeight(e)
      if (this.bytes >= this.opts.flushBytes) this.flush()
    }
    if (this.buffer.size > 0 && this.cancelTimer === undefined) {
      this.cancelTimer = this.rt.schedule(this.opts.flushMs, () => {
        this.cancelTimer = undefined
        this.flush()
      })
    }
  }

  /** Publishes everything waiting now. */
  flush (): void {
    this.cancelTimer?.()
    this.cancelTimer = undefined
    if (this.buffer.size === 0) return
    const entries = [...this.buffer.values()]
    this.buffer.clear()
    this.bytes = 0
    let chunk: RemoteEntry[] = []
    let size = 0
    for (const e of entries) {
      const w = entryWeight(e)
      if (chunk.length > 0 && (size + w > FRAME_ENTRY_BYTES || chunk.length >= FRAME_LIMITS.maxEntries)) {
        this.publish(chunk)
        chunk = []
        size = 0
      }
      chunk.push(e)
      size += w
    }
    if (chunk.length > 0) this.publish(chunk)
  }

  private publish (entries: RemoteEntry[]): void {
    const seq = this.seq + 1
    const { bytes: frame, bodyBytes } = encodeSized({ t: 'push', origin: this.selfId, epoch: this.epoch, seq, entries })
    if (frame.length > MAX_MESSAGE_BYTES || bodyBytes > FRAME_LIMITS.maxInflatedBytes) {
      // Only a pathological batch gets here (a chunk holds at most 256 KiB of raw entries plus one entry of
      // at most ~770 KiB, which JSON escaping can blow up); split it rather than send what every peer would refuse.
      if (entries.length > 1) {
        const half = Math.ceil(entries.length / 2)
        this.publish(entries.slice(0, half))
        this.publish(entries.slice(half))
      } else {
        this.onError(new Error(`one entry encodes to ${Math.max(frame.length, bodyBytes)} bytes, over the frame limit; left to the pull path`))
      }
      return
    }
    this.seq = seq
    try {
      this.rt.publish(frame)
      this.stats.framesOut++
      this.stats.bytesOut += frame.length
    } catch (err) {
      // A frame that cannot be published (no peer subscribed yet) is not lost: peers pull it, and the
      // skipped sequence number makes the next frame's receivers pull at once.
      this.stats.publishFailures++
      this.onError(err)
    }
  }

  stop (): void {
    this.flush()
  }
}
