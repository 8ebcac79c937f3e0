/**
 * A push frame that reached no peer while the node has connections is held
 * and published again once a peer subscribes (or at the retry tick), in
 * order, for a bounded time; with no connection nothing is held. The
 * gossip topic is scripted here (who is subscribed, who is connected): the
 * network edge; the real-stack test runs it on real gossipsub.
 */
import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { FramePublisher, type FramePublisherLimits } from '../../src/mesh/libp2p/frame-publisher.js'
import { ManualClock } from '../helpers/manual-clock.js'

const LIMITS: FramePublisherLimits = { holdMs: 30_000, retryMs: 1_000, maxBytes: 64 }

function topic (): { subscribers: number, connected: number, delivered: string[], publisher: FramePublisher, clock: ManualClock, settle: () => Promise<void> } {
  const clock = new ManualClock(0)
  const t = {
    subscribers: 0,
    connected: 1,
    delivered: [] as string[],
    clock,
    settle: async () => { for (let i = 0; i < 20; i++) await Promise.resolve() },
    publisher: undefined as unknown as FramePublisher
  }
  t.publisher = new FramePublisher({
    publish: async (frame) => {
      if (t.subscribers > 0) t.delivered.push(Buffer.from(frame).toString())
      return t.subscribers
    },
    connections: () => t.connected,
    now: clock.now,
    schedule: clock.schedule,
    log: silentLogger
  }, LIMITS)
  return t
}

const f = (s: string): Uint8Array => Buffer.from(s)

describe('frame publisher', () => {
  it('publishes a frame no peer heard again when a peer subscribes, in order, with later frames behind it', async () => {
    const t = topic()
    t.publisher.send(f('1'))
    await t.settle()
    expect(t.publisher.heldFrames).toBe(1)
    t.publisher.send(f('2')) // waits behind the held one: frames leave in order
    await t.settle()
    expect(t.delivered).toEqual([])
    t.subscribers = 1
    t.publisher.peerSubscribed()
    await t.settle()
    expect(t.delivered).toEqual(['1', '2'])
    expect(t.publisher.heldFrames).toBe(0)
    t.publisher.send(f('3'))
    await t.settle()
    expect(t.delivered).toEqual(['1', '2', '3'])
  })

  it('retries at its tick when no subscription is announced, and gives up after the hold time', async () => {
    const t = topic()
    t.publisher.send(f('a'))
    await t.settle()
    t.clock.runNext(LIMITS.retryMs)
    await t.settle()
    expect(t.publisher.heldFrames).toBe(1) // still nobody
    t.subscribers = 1
    t.clock.runNext(2 * LIMITS.retryMs)
    await t.settle()
    expect(t.delivered).toEqual(['a'])

    t.subscribers = 0
    t.publisher.send(f('b'))
    await t.settle()
    for (let at = 3 * LIMITS.retryMs; at <= LIMITS.holdMs + 5 * LIMITS.retryMs; at += LIMITS.retryMs) {
      t.clock.runNext(at)
      await t.settle()
    }
    expect(t.publisher.heldFrames).toBe(0) // dropped: pulls repair
    expect(t.publisher.stats.dropped).toBe(1)
    t.subscribers = 1
    t.publisher.peerSubscribed()
    await t.settle()
    expect(t.delivered).toEqual(['a'])
  })

  it('holds nothing without a connection (its first pull brings it), and at most maxBytes', async () => {
    const t = topic()
    t.connected = 0
    t.publisher.send(f('x'))
    await t.settle()
    expect(t.publisher.heldFrames).toBe(0)
    t.connected = 1
    for (let i = 0; i < 10; i++) t.publisher.send(f(`${i}`.repeat(16)))
    await t.settle()
    expect(t.publisher.heldFrames).toBe(4) // 64 bytes of 16-byte frames: the oldest went
    t.subscribers = 1
    t.publisher.peerSubscribed()
    await t.settle()
    expect(t.delivered).toEqual(['6', '7', '8', '9'].map(d => d.repeat(16)))
  })
})
