/**
 * Publishing push frames on the gossip topic, without losing the ones that
 * reach nobody.
 *
 * gossipsub sends a frame only to the peers it knows subscribe to the topic,
 * and learns that from each peer's first RPC after the connection is up. A
 * node that writes right after it connected (a node joining, a node back
 * from a restart), or whose peers are slow to open their gossip streams
 * under load, publishes to nobody: the frame is gone, and with no later
 * frame to show its sequence number missing, its entries wait for the next
 * anti-entropy pull (15 s by default). So a frame that reached no peer while
 * this node has connections is held and published again as soon as a peer
 * subscribes, or at the next retry tick, for a bounded time; after that,
 * pulls repair as before. A node with no connection holds nothing: every
 * connection starts with a pull.
 */
import type { Logger } from '../../common/index.js'

export interface FramePublisherDeps {
  /** Publishes on the topic; resolves with how many peers the frame was sent to. */
  publish: (frame: Uint8Array) => Promise<number>
  /** Peers this node is connected to now. */
  connections: () => number
  now: () => number
  schedule: (delayMs: number, fn: () => void) => () => void
  log: Logger
}

export interface FramePublisherLimits {
  /** A held frame is dropped (pulls repair) this long after it was first published. */
  holdMs: number
  /** Retry period while frames are held and no subscription arrived. */
  retryMs: number
  /** Bytes of frames held at once; beyond, the oldest go. */
  maxBytes: number
}

export const FRAME_PUBLISHER_LIMITS: FramePublisherLimits = { holdMs: 30_000, retryMs: 1_000, maxBytes: 8 * 1024 * 1024 }

/** `order`: when it was sent, so frames whose publishes fail out of order are held in sending order. */
interface Held { frame: Uint8Array, since: number, order: number }

export class FramePublisher {
  /** Frames published to no peer, in publish order. */
  private held: Held[] = []
  private heldBytes = 0
  private cancelRetry: (() => void) | undefined
  private retrying = false
  private stopped = false
  private sent = 0
  readonly stats = { unheard: 0, republished: 0, dropped: 0 }

  constructor (private readonly deps: FramePublisherDeps, private readonly limits: FramePublisherLimits = FRAME_PUBLISHER_LIMITS) {}

  /** Fire-and-forget, as the core's runtime asks: never throws. */
  send (frame: Uint8Array): void {
    // Frames go out in order: while older ones are held, a new one waits behind them.
    const h = { frame, since: this.deps.now(), order: this.sent++ }
    if (this.held.length > 0) this.hold(h)
    else void this.attempt(h)
  }

  /** A peer subscribed to the topic: it can hear what is held now. */
  peerSubscribed (): void {
    if (this.held.length > 0) void this.flush()
  }

  get heldFrames (): number {
    return this.held.length
  }

  stop (): void {
    this.stopped = true
    this.cancelRetry?.()
    this.held = []
    this.heldBytes = 0
  }

  /** Publishes one frame; false when it reached nobody and is held again. */
  private async attempt (h: Held): Promise<boolean> {
    let recipients: number
    try {
      recipients = await this.deps.publish(h.frame)
    } catch (err) {
      this.deps.log.debug('publish failed', { err })
      recipients = 0
    }
    if (recipients > 0 || this.stopped) return true
    this.stats.unheard++
    if (this.deps.connections() === 0) return true // no connection: its first pull brings what the frame carried
    this.hold(h)
    return false
  }

  private hold (h: Held): void {
    let i = this.held.length
    while (i > 0 && this.held[i - 1].order > h.order) i--
    this.held.splice(i, 0, h)
    this.heldBytes += h.frame.length
    while (this.heldBytes > this.limits.maxBytes && this.held.length > 1) this.drop(this.held.shift()!)
    this.cancelRetry ??= this.deps.schedule(this.limits.retryMs, () => {
      this.cancelRetry = undefined
      void this.flush()
    })
  }

  private drop (h: Held): void {
    this.heldBytes -= h.frame.length
    this.stats.dropped++
  }

  /** Publishes the held frames in order, stopping at the first that reaches nobody again. */
  private async flush (): Promise<void> {
    if (this.retrying || this.stopped) return
    this.retrying = true
    try {
      while (this.held.length > 0 && !this.stopped) {
        const h = this.held.shift()!
        this.heldBytes -= h.frame.length
        if (this.deps.now() - h.since > this.limits.holdMs) {
          this.stats.dropped++
          continue
        }
        this.stats.republished++
        if (!await this.attempt(h)) break
      }
    } finally {
      this.retrying = false
    }
  }
}
