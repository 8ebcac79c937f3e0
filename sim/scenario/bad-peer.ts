/**
 * A misbehaving node: a real member of the mesh (it runs the core, serves
 * pulls, relays gossip) that also publishes bad frames on the gossip topic,
 * signed with its own key (gossipsub's StrictSign: it cannot sign as
 * another node). Each frame is one of the behaviours below, in turn:
 *
 * - forged-origin: a push frame naming an honest node as origin;
 * - forged-entry: its own frame carrying an entry versioned by an honest node;
 * - malformed: bytes that are not a message;
 * - bad-root: an entry whose root is not a record id;
 * - far-future: an entry one hour ahead of every clock;
 * - replay-honest: an honest node's frame bytes re-published under its own name;
 * - replay-own: one of its own accepted frames, published again;
 * - resend-signed: an honest gossip message re-sent as is (same id: the
 *   seen cache drops it, it never reaches a validator within 2 minutes);
 * - oversized (every 10th round): a value over the 256 KiB limit.
 *
 * Every entry that must never be applied is registered as forbidden, so the
 * run counts any that reached an honest store (`forgedApplied`).
 */
import { encodeMessage } from '../../src/mesh/messages.js'
import { encodeUuidV7, formatHlc, type RemoteEntry } from '../../src/records/index.js'
import type { GossipMessage } from '../gossip/rpc.js'
import type { Prng } from '../../src/mesh/testing/index.js'
import type { ScenarioContext } from './scenario.js'

const BEHAVIOURS = ['forged-origin', 'forged-entry', 'malformed', 'bad-root', 'far-future', 'replay-honest', 'replay-own', 'resend-signed'] as const
export type Behaviour = typeof BEHAVIOURS[number] | 'oversized'

/** Adds one bad node to the mesh and schedules its frames from load start to load end. */
export function addBadPeer (ctx: ScenarioContext, rng: Prng): number {
  const { world } = ctx
  const bad = world.addNode()
  ctx.markBad(bad.index)
  bad.capture = true
  world.metrics.event({ kind: 'bad-peer', nodes: [bad.index] })
  const every = 1000 / Math.max(0.001, ctx.opts.badRate)
  const epoch = 1 // its crafted frames use their own epoch; its core never publishes (no client writes there)
  let seq = 0
  let round = 0
  const ownFrames: Uint8Array[] = []
  const honest = (): string => world.node(rng.int(ctx.honest)).peerId
  const rid = (): string => encodeUuidV7(bad.now(), BigInt(rng.u32()) << 42n | BigInt(rng.u32()))
  const hlcNow = (aheadMs = 0): string => formatHlc({ ms: Math.floor(bad.now() + aheadMs), counter: 0 })
  const entry = (origin: string, aheadMs = 0, field = 'forged'): RemoteEntry => {
    const e = { key: `file:${rid()}/${field}/${round}`, value: 'x', hlc: hlcNow(aheadMs), origin }
    ctx.forbid(e.key)
    return e
  }
  const push = (origin: string, entries: RemoteEntry[]): Uint8Array =>
    encodeMessage({ t: 'push', origin, epoch, seq: ++seq, entries })

  const frame = (b: Behaviour): Uint8Array | GossipMessage | undefined => {
    switch (b) {
      case 'forged-origin': {
        const victim = honest()
        return push(victim, [entry(victim)])
      }
      case 'forged-entry':
        return push(bad.peerId, [entry(honest())])
      case 'malformed':
        return rng.bytes(40 + rng.int(200))
      case 'bad-root': {
        // The wire format names roots by id; a crafted body can put anything there.
        const body = JSON.stringify({ t: 'push', o: bad.peerId, e: epoch, s: ++seq, b: { o: [bad.peerId], v: [[hlcNow(), 0]],
          r: [['not-a-root', -1, [[0, 'title', 'x']]]] } })
        return Uint8Array.from([1, 0, ...Buffer.from(body)])
      }
      case 'far-future':
        return push(bad.peerId, [entry(bad.peerId, 3_600_000)])
      case 'replay-honest': {
        const m = lastHonest()
        return m === undefined ? undefined : m.data
      }
      case 'replay-own': {
        // First a valid frame of its own (accepted: its entry is legitimate), later the same bytes again.
        if (ownFrames.length === 0 || rng.chance(0.5)) {
          const f = push(bad.peerId, [{ key: `file:${rid()}/title`, value: 'bad peer, legitimate write', hlc: hlcNow(), origin: bad.peerId }])
          ownFrames.push(f)
          return f
        }
        return rng.pick(ownFrames)
      }
      case 'resend-signed':
        return lastHonest()
      case 'oversized':
        return push(bad.peerId, [{ ...entry(bad.peerId), value: 'x'.repeat(256 * 1024 + 1) }])
    }
  }
  const lastHonest = (): GossipMessage | undefined => {
    for (let i = bad.captured.length - 1; i >= 0; i--) if (bad.captured[i].from !== bad.index) return bad.captured[i]
    return undefined
  }
  const tick = (): void => {
    if (world.sched.now >= ctx.loadEnd) return
    world.sched.after(every, tick)
    const router = bad.router
    if (router === undefined) return
    round++
    const b: Behaviour = round % 10 === 0 ? 'oversized' : BEHAVIOURS[round % BEHAVIOURS.length]
    const f = frame(b)
    if (f === undefined) return
    if (f instanceof Uint8Array) router.publish(world.topic, f)
    else router.republish(f)
    world.metrics.badFrames.set(b, (world.metrics.badFrames.get(b) ?? 0) + 1)
  }
  ctx.at(ctx.loadStart, tick)
  return bad.index
}
