/**
 * What one gossip frame, or a flood of them, may cost a node: a small
 * deflated frame cannot inflate to more than the frame limit nor carry more
 * than its entries; the frames waiting to be applied are bounded in bytes
 * over all signers; and a signer gets state (counters, a sequence, a line
 * on /api/mesh) only once it sent a valid frame, within an LRU bound.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { decodeMessage, encodeMessage, FRAME_LIMITS, MAX_MESSAGE_BYTES, WireError } from '../../src/mesh/index.js'
import { formatHlc, type RemoteEntry } from '../../src/records/index.js'
import { BOMB_RID, deflateBomb, junkFrame } from '../helpers/hostile-frames.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const EVIL = 'peerEvil'

function entries (c: VirtualCluster, origin: string, n: number, field = 'f'): RemoteEntry[] {
  const hlc = formatHlc({ ms: c.mesh.now(), counter: 0 })
  return Array.from({ length: n }, (_, i) => ({ key: `file:${BOMB_RID}/${field}${i}`, value: 'v', hlc, origin }))
}

function push (origin: string, seq: number, es: RemoteEntry[]): Uint8Array {
  return encodeMessage({ t: 'push', origin, epoch: 1, seq, entries: es })
}

describe('frame limits', () => {
  it('refuses a small deflated frame that inflates past the frame limit, without inflating all of it', async () => {
    const c = cluster = await virtualCluster(1, { seed: 41 })
    const a = c.nodes[0]
    a.core.peerConnected(EVIL)
    // 900,000 valid entries, 7 MiB of JSON, in about 10 KiB on the wire.
    const bomb = deflateBomb(EVIL, 1, 900_000, c.mesh.now())
    expect(bomb.length).toBeLessThan(16 * 1024)
    const t0 = performance.now()
    expect(a.core.onGossip(EVIL, bomb)).toBe('reject')
    expect(performance.now() - t0).toBeLessThan(500)
    expect(() => decodeMessage(bomb, FRAME_LIMITS)).toThrow(/inflate within the 1048576-byte limit/)
    // Ten times larger (80 MB inflated) still stops at the limit: zlib inflates chunk by chunk.
    const big = deflateBomb(EVIL, 1, 10_000_000)
    const t1 = performance.now()
    expect(() => decodeMessage(big, FRAME_LIMITS)).toThrow(WireError)
    expect(performance.now() - t1).toBeLessThan(500)
    await c.mesh.settle()
    expect(a.store.kv.prefix('file:')).toEqual([])
    expect(c.nodes[0].core.status().peers.find(p => p.peerId === EVIL)).toMatchObject({ framesRejected: 1 })
  })

  it('refuses a frame of more entries than the per-frame limit, however small it inflates', async () => {
    const c = cluster = await virtualCluster(1, { seed: 42 })
    const a = c.nodes[0]
    const limit = FRAME_LIMITS.maxEntries
    expect(() => decodeMessage(deflateBomb(EVIL, 1, limit + 1), FRAME_LIMITS)).toThrow(`more than ${limit} entries`)
    expect(a.core.onGossip(EVIL, deflateBomb(EVIL, 1, limit + 1, c.mesh.now()))).toBe('reject')
    expect(a.core.onGossip(EVIL, push(EVIL, 1, entries(c, EVIL, limit)))).toBe('accept')
    // Pull pages keep their own, larger limits.
    expect(decodeMessage(encodeMessage({ t: 'changes', log: 'l', entries: entries(c, EVIL, limit + 1), next: null, head: null, gap: false })).t).toBe('changes')
  })

  it('bounds the frames waiting to be applied by bytes over all signers, dropping (and pulling) past it', async () => {
    const c = cluster = await virtualCluster(1, { seed: 43, mesh: { maxQueuedBytes: 10_000 } })
    const a = c.nodes[0]
    // Fresh signers, one frame each: the per-signer frame bound never trips.
    const verdicts = Array.from({ length: 10 }, (_, i) => {
      const signer = `peerFresh${i}`
      return a.core.onGossip(signer, push(signer, 1, entries(c, signer, 60))) // 60 × about 45 bytes
    })
    expect(verdicts.filter(v => v === 'accept').length).toBe(3)
    expect(verdicts.slice(3).every(v => v === 'ignore')).toBe(true)
    await c.mesh.settle()
    // Once applied, the queue is free again.
    expect(a.core.onGossip('peerLate', push('peerLate', 1, entries(c, 'peerLate', 60)))).toBe('accept')
  })

  it('the pusher splits what it sends so that every frame is within the limits', async () => {
    const published: Uint8Array[] = []
    const c = cluster = await virtualCluster(2, {
      seed: 44,
      mesh: { antiEntropyMs: 3_600_000, flushBytes: 8 * 1024 * 1024 },
      runtime: (id, rt) => id !== 'peerA' ? rt : { ...rt, publish: (frame) => { published.push(frame); rt.publish(frame) } }
    })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(1_000)
    // 600 fields of about 1,800 bytes of control characters each: a raw 256 KiB chunk whose JSON is about 6 times larger.
    const value = '\u0001'.repeat(1800)
    await a.store.records.mergeFlat(BOMB_RID, Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`f${i}`, value])))
    await c.mesh.runFor(500)
    expect(published.length).toBeGreaterThan(1)
    for (const f of published) expect(decodeMessage(f, FRAME_LIMITS).t).toBe('push')
    expect(c.mesh.counters.verdicts.reject).toBe(0)
    expect(Object.keys(b.store.records.getFlat(BOMB_RID) ?? {}).length).toBe(600)
  })
})

describe('state per signer', () => {
  it('keeps no state for signers of junk: it stays off the status, counted against the relay', async () => {
    const c = cluster = await virtualCluster(2, { seed: 45 })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(100)
    for (let i = 0; i < 2_000; i++) {
      const signer = `peerJunk${i}`
      const bytes = i % 10 !== 0 ? junkFrame(i) : deflateBomb(signer, 1, 10_001, c.mesh.now())
      expect(a.core.onGossip(signer, bytes, b.id)).toBe('reject')
    }
    const peers = a.core.status().peers
    expect(peers.map(p => p.peerId)).toEqual([b.id])
    expect(peers[0]).toMatchObject({ relayedRejected: 2_000, framesRejected: 0 })
  })

  it('keeps state for signers of valid frames, the least recently heard evicted past the bound', async () => {
    const c = cluster = await virtualCluster(2, { seed: 46, mesh: { maxSigners: 10 } })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(100)
    for (let i = 0; i < 50; i++) {
      const signer = `peerValid${i}`
      expect(a.core.onGossip(signer, push(signer, 1, entries(c, signer, 1, `s${i}-`)), b.id)).toBe('accept')
    }
    await c.mesh.settle()
    const ids = a.core.status().peers.map(p => p.peerId)
    // The connected peer stays; of the others, the ten heard from last.
    expect(ids.sort()).toEqual([b.id, ...Array.from({ length: 10 }, (_, i) => `peerValid${40 + i}`)].sort())
    // An evicted signer is welcome again: its next frame starts a new entry (a gap: we pull, never refuse).
    expect(a.core.onGossip('peerValid0', push('peerValid0', 2, entries(c, 'peerValid0', 1, 'again')), b.id)).toBe('accept')
    expect(a.core.status().peers.find(p => p.peerId === 'peerValid0')).toMatchObject({ framesIn: 1, framesRejected: 0 })
  })

  it('a frame over 1 MiB on the wire, or past the limits, never creates an entry', async () => {
    const c = cluster = await virtualCluster(1, { seed: 47 })
    const a = c.nodes[0]
    expect(a.core.onGossip('peerHuge', new Uint8Array(MAX_MESSAGE_BYTES + 1))).toBe('reject')
    expect(a.core.status().peers).toEqual([])
  })
})
