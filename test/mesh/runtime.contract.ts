/**
 * The MeshRuntime contract (src/mesh/protocol/runtime.ts), as tests any
 * runtime must pass: the libp2p adapter, the virtual mesh and the
 * simulator's nodes each run them (runtime.contract.test.ts), so the three
 * cannot drift apart. Each rig gives node A's runtime (its own core muted)
 * connected to a peer B whose inbound side is a scripted endpoint, and a way
 * to let the runtime's time pass (virtual clocks are driven; real time is
 * waited for, every wait with a deadline).
 */
import { expect, it } from 'vitest'
import { MAX_MESSAGE_BYTES } from '../../src/mesh/messages.js'
import type { GossipVerdict, MeshEndpoint, MeshRuntime, PeerKey } from '../../src/mesh/protocol/index.js'

/** B as the runtime drives it: what it heard, and how it answers. */
export class ScriptedEndpoint implements MeshEndpoint {
  readonly frames: Array<{ signer: PeerKey, bytes: Uint8Array }> = []
  readonly requests: Array<{ peer: PeerKey, body: Uint8Array }> = []
  readonly connected = new Set<PeerKey>()
  serve: (peer: PeerKey, body: Uint8Array) => Promise<Uint8Array> = async (_peer, body) => body

  onGossip (signer: PeerKey, bytes: Uint8Array): GossipVerdict {
    this.frames.push({ signer, bytes: bytes.slice() })
    return 'accept'
  }

  async handleRequest (peer: PeerKey, body: Uint8Array): Promise<Uint8Array> {
    this.requests.push({ peer, body: body.slice() })
    return await this.serve(peer, body)
  }

  peerConnected (peer: PeerKey): void { this.connected.add(peer) }
  peerDisconnected (peer: PeerKey): void { this.connected.delete(peer) }
}

/** A core's runtime with its traffic cut off: the rig's cores keep their timers, but only the test sends. */
export function muted (rt: MeshRuntime): MeshRuntime {
  return { ...rt, publish: () => {}, request: async () => { throw new Error('muted: the contract test drives this runtime') } }
}

export interface RuntimeRig {
  /** Node A's runtime; A is connected to B. */
  a: MeshRuntime
  aId: PeerKey
  bId: PeerKey
  /** A peer A has no connection to and no address for. */
  strangerId: PeerKey
  b: ScriptedEndpoint
  /** Lets the runtime's time run until `done()` holds; fails after `ms` of it. */
  until: (done: () => boolean, what: string, ms?: number) => Promise<void>
  /** B goes away (its node stops): its connection to A closes. */
  stopPeer: () => Promise<void>
  close: () => Promise<void>
}

type Outcome<T> = { ok: true, value: T } | { ok: false, error: Error }

/** Watches `p` from now on (a rejection is handled at once), and runs the rig's time until it settles (at most `ms`). */
function watch<T> (rig: RuntimeRig, p: Promise<T>): (ms: number, what: string) => Promise<Outcome<T>> {
  let r: Outcome<T> | undefined
  p.then((value) => { r = { ok: true, value } }, (error: unknown) => { r = { ok: false, error: error as Error } })
  return async (ms, what) => {
    await rig.until(() => r !== undefined, what, ms)
    return r!
  }
}

async function outcome<T> (rig: RuntimeRig, p: Promise<T>, ms: number, what: string): Promise<Outcome<T>> {
  return await watch(rig, p)(ms, what)
}

/** Lets `ms` of the runtime's time pass: until a timer of that delay has run. */
async function passes (rig: RuntimeRig, ms: number): Promise<void> {
  let due = false
  rig.a.schedule(ms, () => { due = true })
  await rig.until(() => due, `a ${ms} ms timer`)
}

const clock = (rt: MeshRuntime): number => rt.monotonic?.() ?? rt.now()
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s)
const text = (b: Uint8Array): string => new TextDecoder().decode(b)

/** Declares the contract's tests; `rig()` builds a fresh rig per test, closed after it. */
export function runtimeContract (rig: () => Promise<RuntimeRig>): void {
  const withRig = (name: string, fn: (r: RuntimeRig) => Promise<void>, timeoutMs = 60_000): void => {
    it(name, async () => {
      const r = await rig()
      try {
        await fn(r)
      } finally {
        await r.close()
      }
    }, timeoutMs)
  }

  withRig('schedule never runs within the call, runs once after its delay, and cancelling is idempotent before or after it ran', async (r) => {
    let ran = 0
    let cancelledRan = 0
    let ranAt = 0
    const t0 = clock(r.a)
    const cancel = r.a.schedule(30, () => { ran++; ranAt = clock(r.a) })
    const zero = r.a.schedule(0, () => { ran++ })
    expect(ran).toBe(0) // not synchronously, not even with a delay of 0
    const never = r.a.schedule(5, () => { cancelledRan++ })
    never()
    never()
    await passes(r, 80)
    expect(ran).toBe(2)
    expect(cancelledRan).toBe(0)
    expect(ranAt - t0).toBeGreaterThanOrEqual(29) // timers may round to the millisecond
    cancel()
    cancel()
    zero()
    await passes(r, 40)
    expect(ran).toBe(2)
  })

  withRig('now is whole wall-clock milliseconds, monotonic never goes back and both advance with time, random is in [0, 1)', async (r) => {
    const n0 = r.a.now()
    const m0 = clock(r.a)
    expect(Number.isInteger(n0)).toBe(true)
    expect(n0).toBeGreaterThan(Date.UTC(2020, 0, 1))
    let done = false
    r.a.schedule(50, () => { done = true })
    let last = m0
    let backwards = 0
    await r.until(() => {
      const m = clock(r.a)
      if (m < last) backwards++
      last = m
      return done
    }, 'a 50 ms timer')
    expect(backwards).toBe(0)
    expect(clock(r.a) - m0).toBeGreaterThanOrEqual(49)
    expect(r.a.now() - n0).toBeGreaterThanOrEqual(45)
    const xs = Array.from({ length: 1000 }, () => r.a.random())
    expect(xs.every(x => x >= 0 && x < 1)).toBe(true)
    expect(new Set(xs).size).toBeGreaterThan(990)
  })

  withRig('publish never throws, and a frame published while connected reaches the peer, signed by the publisher', async (r) => {
    const frame = bytes(`frame from ${r.aId}`)
    expect(() => { r.a.publish(frame) }).not.toThrow()
    // Publish may drop a frame (no subscriber yet): publish again until one arrives, within a deadline.
    const heard = (): boolean => r.b.frames.some(f => f.signer === r.aId && text(f.bytes) === text(frame))
    let cancel = (): void => {}
    const again = (): void => { r.a.publish(frame); cancel = r.a.schedule(200, again) }
    cancel = r.a.schedule(200, again)
    await r.until(heard, 'the frame at the peer', 20_000)
    cancel()
    await r.stopPeer()
    expect(() => { r.a.publish(bytes('to nobody')) }).not.toThrow()
  })

  withRig('request delivers the body to the peer\'s handleRequest, from the requester, and resolves with its reply', async (r) => {
    r.b.serve = async (_peer, body) => bytes(`re: ${text(body)}`)
    const res = await outcome(r, r.a.request(r.bId, bytes('pull 1'), { timeoutMs: 10_000 }), 10_000, 'the reply')
    expect(res.ok ? text(res.value) : res.error.message).toBe('re: pull 1')
    expect(r.b.requests.map(q => ({ peer: q.peer, body: text(q.body) }))).toEqual([{ peer: r.aId, body: 'pull 1' }])
  })

  withRig('request rejects for a peer it has no connection to, without waiting for its timeout', async (r) => {
    const t0 = clock(r.a)
    const res = await outcome(r, r.a.request(r.strangerId, bytes('pull'), { timeoutMs: 60_000 }), 10_000, 'the refusal')
    expect(res.ok).toBe(false)
    expect(clock(r.a) - t0).toBeLessThan(10_000)
  })

  withRig('request rejects at its timeout when the peer does not answer', async (r) => {
    let release = (): void => {}
    r.b.serve = async () => await new Promise<Uint8Array>((resolve) => { release = () => { resolve(bytes('late')) } })
    const t0 = clock(r.a)
    const res = await outcome(r, r.a.request(r.bId, bytes('pull'), { timeoutMs: 300 }), 10_000, 'the timeout')
    release()
    expect(res.ok).toBe(false)
    expect(clock(r.a) - t0).toBeGreaterThanOrEqual(299)
  })

  withRig('request rejects when the connection closes while it waits, before its timeout', async (r) => {
    r.b.serve = async () => await new Promise<Uint8Array>(() => {})
    const t0 = clock(r.a)
    const settled = watch(r, r.a.request(r.bId, bytes('pull'), { timeoutMs: 60_000 }))
    await r.until(() => r.b.requests.length > 0, 'the request at the peer')
    await r.stopPeer()
    const res = await settled(20_000, 'the failure')
    expect(res.ok).toBe(false)
    expect(clock(r.a) - t0).toBeLessThan(30_000)
  })

  withRig('request resolves with a reply of MAX_MESSAGE_BYTES and rejects one byte more', async (r) => {
    r.b.serve = async (_peer, body) => new Uint8Array(MAX_MESSAGE_BYTES + (text(body) === 'big' ? 1 : 0)).fill(7)
    const fits = await outcome(r, r.a.request(r.bId, bytes('max'), { timeoutMs: 20_000 }), 20_000, 'the largest reply')
    expect(fits.ok ? fits.value.length : fits.error.message).toBe(MAX_MESSAGE_BYTES)
    const over = await outcome(r, r.a.request(r.bId, bytes('big'), { timeoutMs: 20_000 }), 20_000, 'the refusal of a reply too large')
    expect(over.ok).toBe(false)
  })
}
