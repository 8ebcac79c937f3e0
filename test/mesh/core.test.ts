/**
 * The mesh core's handling of what peers send, on real stores over the
 * virtual mesh: every kind of bad frame is refused whole, counted against
 * its signer and leaves the store untouched; sequences catch replays and
 * gaps; limits hold; restarts take a new epoch.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { decodeMessage, encodeMessage, MAX_MESSAGE_BYTES, type PeerStatus } from '../../src/mesh/index.js'
import { formatHlc, parseHlc, type RemoteEntry } from '../../src/records/index.js'
import { virtualCluster, type VirtualCluster } from '../helpers/virtual-cluster.js'

let cluster: VirtualCluster | undefined
afterEach(async () => { await cluster?.close(); cluster = undefined })

const RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
const EVIL = 'peerEvil'

async function twoNodes (opts: Parameters<typeof virtualCluster>[1] = { seed: 1 }): Promise<VirtualCluster> {
  cluster = await virtualCluster(2, opts)
  return cluster
}

function entry (c: VirtualCluster, field: string, value: string | null, origin = EVIL, aheadMs = 0): RemoteEntry {
  return { key: `file:${RID}/${field}`, value, hlc: formatHlc({ ms: c.mesh.now() + aheadMs, counter: 0 }), origin }
}

function frame (origin: string, seq: number, entries: RemoteEntry[], epoch = 1): Uint8Array {
  return encodeMessage({ t: 'push', origin, epoch, seq, entries })
}

function peerStatus (c: VirtualCluster, i: number, peer: string): PeerStatus {
  const p = c.nodes[i].core.status().peers.find(x => x.peerId === peer)
  if (p === undefined) throw new Error(`no status for ${peer}`)
  return p
}

describe('gossip frames', () => {
  it('accepts a valid frame and applies it', async () => {
    const c = await twoNodes()
    const a = c.nodes[0]
    expect(a.core.onGossip(EVIL, frame(EVIL, 1, [entry(c, 'title', 'hello')]))).toBe('accept')
    await c.mesh.settle()
    expect(a.store.records.getFlat(RID)).toEqual({ title: 'hello' })
    expect(peerStatus(c, 0, EVIL)).toMatchObject({ framesIn: 1, framesRejected: 0 })
  })

  it('refuses forged, malformed, oversized, non-record, replayed and far-future frames whole, and counts them', async () => {
    const c = await twoNodes()
    const a = c.nodes[0]
    a.core.peerConnected(EVIL) // a connected peer: its refusals are counted against it
    const good = entry(c, 'title', 'ok')
    const bad: Array<[string, Uint8Array, Partial<PeerStatus>]> = [
      ['frame origin is not the signer', frame(c.nodes[1].id, 1, [entry(c, 'x', '1', c.nodes[1].id)]), { forged: 1 }],
      ['an entry of another origin', frame(EVIL, 2, [good, entry(c, 'x', '1', c.nodes[1].id)]), { forged: 2 }],
      ['garbage', new Uint8Array([1, 0, 1, 2, 3]), {}],
      ['over 1 MiB', new Uint8Array(MAX_MESSAGE_BYTES + 10), {}],
      ['a root that is not a record id', frame(EVIL, 3, [good, { ...good, key: 'file:cid:bafy/x' }]), {}],
      ['a deprecated field', frame(EVIL, 4, [good, { ...good, key: `file:${RID}/cid_sha256` }]), {}],
      ['a pull request on the gossip topic', encodeMessage({ t: 'pull', log: null, cursor: null, maxBytes: 10 }), {}],
      ['entries 60 s ahead', frame(EVIL, 5, [good, entry(c, 'future', 'x', EVIL, 60_000)]), { driftRefusals: 1 }],
      // A run of entries sharing one clock value ahead, then one in time: the run is counted, the entry after it is not.
      ['a run of entries ahead, then one in time', frame(EVIL, 6, [entry(c, 'f1', 'x', EVIL, 60_000), entry(c, 'f2', 'x', EVIL, 60_000), good]), { driftRefusals: 3 }]
    ]
    const hlcBefore = a.replica.clock()
    for (const [what, bytes, counts] of bad) {
      // Drift may be our own clock's fault, and is never the relay's: refused without a gossipsub penalty.
      expect(a.core.onGossip(EVIL, bytes), what).toBe(counts.driftRefusals === undefined ? 'reject' : 'ignore')
      expect(peerStatus(c, 0, EVIL), what).toMatchObject(counts)
    }
    await c.mesh.settle()
    expect(peerStatus(c, 0, EVIL)).toMatchObject({ framesIn: bad.length, framesRejected: bad.length })
    // Nothing of any of them reached the store, and the far-future version did not move the clock.
    expect(a.store.kv.prefix('file:')).toEqual([])
    expect(a.replica.clock()).toBe(hlcBefore)
    expect(parseHlc(a.replica.clock())!.ms).toBeLessThan(c.mesh.now() + 60_000)

    // A replay of an accepted frame is refused.
    const ok = frame(EVIL, 10, [good])
    expect(a.core.onGossip(EVIL, ok)).toBe('accept')
    expect(a.core.onGossip(EVIL, ok)).toBe('reject')
    expect(peerStatus(c, 0, EVIL)).toMatchObject({ replays: 1 })
    // …and so is a frame of an older epoch.
    expect(a.core.onGossip(EVIL, frame(EVIL, 11, [good], 0))).toBe('reject')
    expect(peerStatus(c, 0, EVIL)).toMatchObject({ replays: 2 })
  })

  it('pulls at once when an origin\'s frame sequence jumps', async () => {
    const c = await twoNodes({ seed: 2, mesh: { antiEntropyMs: 3_600_000 } })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(1_000) // first sync (both empty)
    // B writes twice; the first frame is lost on the way to A.
    await b.store.records.mergeFlat(RID, { title: 'one' })
    await c.mesh.runFor(5) // before B's flush
    const pulls = peerStatus(c, 0, b.id).pagesIn
    c.mesh.setLoss('gossip', 1)
    await c.mesh.runFor(200)
    c.mesh.setLoss('gossip', 0)
    await b.store.records.mergeFlat(RID, { year: '2001' })
    await c.mesh.runFor(500)
    // The second frame (seq 2 after seq 0 seen) made A pull from B, long before the next anti-entropy tick.
    expect(peerStatus(c, 0, b.id).pagesIn).toBeGreaterThan(pulls)
    expect(a.store.records.getFlat(RID)).toEqual({ title: 'one', year: '2001' })
  })

  it('drops frames past the per-peer queue limit instead of queueing them, and pulls instead', async () => {
    const c = await twoNodes({ seed: 3, mesh: { maxQueuedFrames: 2 } })
    const a = c.nodes[0]
    const verdicts = [1, 2, 3, 4].map(seq => a.core.onGossip(EVIL, frame(EVIL, seq, [entry(c, `f${seq}`, 'v')])))
    expect(verdicts).toEqual(['accept', 'accept', 'ignore', 'ignore'])
    expect(peerStatus(c, 0, EVIL).framesDropped).toBe(2)
    await c.mesh.settle()
    expect(Object.keys(a.store.records.getFlat(RID)!).sort()).toEqual(['f1', 'f2'])
  })

  it('refuses everything from a blocked peer', async () => {
    const c = await virtualCluster(2, { seed: 4, mesh: { blockedPeers: [EVIL] } })
    cluster = c
    const a = c.nodes[0]
    // Its own frames relayed by an honest peer are dropped without punishing the relay; relayed by it, refused.
    expect(a.core.onGossip(EVIL, frame(EVIL, 1, [entry(c, 'title', 'x')]), c.nodes[1].id)).toBe('ignore')
    expect(a.core.onGossip(c.nodes[1].id, frame(c.nodes[1].id, 1, [entry(c, 'title', 'x', c.nodes[1].id)]), EVIL)).toBe('reject')
    const reply = decodeMessage(await a.core.handleRequest(EVIL, encodeMessage({ t: 'snap', after: null, maxBytes: 1000 })))
    expect(reply).toMatchObject({ t: 'error', code: 'blocked' })
    expect(a.store.kv.prefix('file:')).toEqual([])
  })
})

describe('serving pulls', () => {
  it('answers a bad request with an error and counts it, and limits pages served per peer', async () => {
    const c = await twoNodes({ seed: 5, mesh: { servePageBurst: 3, servePagesPerSecond: 1 } })
    const a = c.nodes[0]
    const bad = decodeMessage(await a.core.handleRequest(EVIL, new Uint8Array([1, 0, 9])))
    expect(bad).toMatchObject({ t: 'error', code: 'bad-request' })
    const notRequest = decodeMessage(await a.core.handleRequest(EVIL, frame(EVIL, 1, [])))
    expect(notRequest).toMatchObject({ t: 'error', code: 'bad-request' })
    const snap = decodeMessage(await a.core.handleRequest(EVIL, encodeMessage({ t: 'snap', after: null, maxBytes: 1000 })))
    expect(snap).toMatchObject({ t: 'snapshot', entries: [], next: null })
    const busy = decodeMessage(await a.core.handleRequest(EVIL, encodeMessage({ t: 'snap', after: null, maxBytes: 1000 })))
    expect(busy).toMatchObject({ t: 'error', code: 'busy' })
    expect((busy as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0)
    expect(peerStatus(c, 0, EVIL)).toMatchObject({ framesRejected: 2, pagesServed: 1, busyRefusals: 1 })
    await c.mesh.runFor(1_000)
    expect(decodeMessage(await a.core.handleRequest(EVIL, encodeMessage({ t: 'pull', log: 'other', cursor: '1-1',
      maxBytes: 1000 })))).toMatchObject({ t: 'changes', gap: true })
  })

  it('answers a cursor of another log, or one the log no longer holds, with a gap, and the puller reconciles', async () => {
    const c = await twoNodes({ seed: 6, mesh: { antiEntropyMs: 2_000 }, store: { streamRetention: 20, trimEvery: 5 } })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(1_000)
    expect(peerStatus(c, 0, b.id).resyncs).toBe(1) // never synced: the first pull is a resync
    await b.store.records.mergeFlat(RID, { title: 'seen' })
    await c.mesh.runFor(3_000)
    expect(a.store.records.getFlat(RID)).toEqual({ title: 'seen' })
    const resyncs = peerStatus(c, 0, b.id).resyncs
    // Apart, B writes more than its log keeps; its frames reach nobody.
    c.mesh.disconnect(a.id, b.id)
    for (let i = 0; i < 60; i++) {
      await b.store.records.mergeFlat(RID, { [`f${i % 30}`]: `v${i}` })
      await c.mesh.runFor(10)
    }
    expect(b.store.kv.streamLength('meta:events')).toBeLessThan(40)
    c.mesh.connect(a.id, b.id)
    await c.mesh.runFor(3_000)
    // Not a full copy: the keys A lacks, found by reconciliation.
    expect(peerStatus(c, 0, b.id).resyncs).toBe(resyncs)
    expect(peerStatus(c, 0, b.id).reconciles).toBe(1)
    // The 30 keys A lacked, once: B's own reconciliation with A, run at the same time, gave way to A's.
    expect(peerStatus(c, 0, b.id).reconKeysIn).toBe(30)
    expect(new Set(c.digests()).size).toBe(1)
    expect(Object.keys(a.store.records.getFlat(RID)!).length).toBe(31)
  })
})

describe('pulls', () => {
  it('answers busy a pull from a peer it is resyncing from (its own records would come back), and still serves it range pages', async () => {
    // B copies A's range in small pages; its requests after the first page never come back (the copy stays under way).
    let snaps = 0
    const c = await twoNodes({
      seed: 3,
      mesh: { pageBytes: 1_000, antiEntropyMs: 60_000 },
      runtime: (id, rt) => id !== 'peerB'
        ? rt
        : {
            ...rt,
            request: async (peer, body, o) => {
              const m = decodeMessage(body)
              if (m.t === 'snap' && snaps++ > 0) return await new Promise<Uint8Array>(() => {})
              return await rt.request(peer, body, o)
            }
          }
    })
    const [a, b] = c.nodes
    // Holding nothing, B serves anyone's pull: two nodes meeting with empty stores must not hold each other off.
    expect(decodeMessage(await b.core.handleRequest(a.id, encodeMessage({ t: 'pull', log: null, cursor: null, maxBytes: 1000 }))).t).toBe('changes')
    for (let i = 0; i < 20; i++) await a.store.records.mergeFlat(`01M8ME6YDNEBQ9WHRFBFD4HM${String(i).padStart(2, '0')}`, { title: `record ${i}`, note: 'x'.repeat(100) })
    c.mesh.connectAll()
    await c.mesh.runUntil(() => snaps > 1, 10_000, 'B to copy A\'s first page')
    await c.mesh.runFor(100)
    expect(peerStatus(c, 1, a.id).resyncing).toBe(true)
    const pull = decodeMessage(await b.core.handleRequest(a.id, encodeMessage({ t: 'pull', log: null, cursor: null, maxBytes: 1000 })))
    expect(pull).toMatchObject({ t: 'error', code: 'busy', message: 'resyncing from you' })
    const snap = decodeMessage(await b.core.handleRequest(a.id, encodeMessage({ t: 'snap', after: null, maxBytes: 1000 })))
    expect(snap.t).toBe('snapshot')
    // A peer it is not resyncing from pulls as ever.
    const other = decodeMessage(await b.core.handleRequest('peerOther', encodeMessage({ t: 'pull', log: null, cursor: null, maxBytes: 1000 })))
    expect(other.t).toBe('changes')
  })

  it('asks for the next page before applying the one in hand, so the peer prepares it meanwhile, and ends with the same records', async () => {
    // For each snapshot request after the first: had B already applied the page that ends where it starts?
    const pageApplied: boolean[] = []
    const appliedEnds = new Set<string>()
    let requests = 0
    // For each changes request: had B applied every changes page it had received? (Keys ending pages received, not yet applied.)
    const changesApplied: boolean[] = []
    const unapplied = new Set<string>()
    const c = await twoNodes({
      seed: 11,
      mesh: { pageBytes: 2_000, antiEntropyMs: 60_000 },
      runtime: (id, rt) => id !== 'peerB'
        ? rt
        : {
            ...rt,
            request: async (peer, body, o) => {
              const m = decodeMessage(body)
              if (m.t === 'pull' || m.t === 'snap') requests++
              if (m.t === 'snap' && m.after !== null) pageApplied.push(appliedEnds.has(m.after))
              if (m.t === 'pull' && m.cursor !== null) changesApplied.push(unapplied.size === 0)
              const reply = await rt.request(peer, body, o)
              const r = decodeMessage(reply)
              if (r.t === 'changes' && r.entries.length > 0) unapplied.add(r.entries[r.entries.length - 1].key)
              return reply
            }
          }
    })
    const [a, b] = c.nodes
    for (let i = 0; i < 30; i++) {
      await a.store.records.mergeFlat(`01M8ME6YDNEBQ9WHRFBFD4HM${String(i).padStart(2, '0')}`, { title: `record ${i}`, year: String(1990 + i), note: 'x'.repeat(100) })
    }
    const apply = b.replica.apply.bind(b.replica)
    b.replica.apply = async (entries) => {
      const r = await apply(entries)
      if (entries.length > 0) {
        appliedEnds.add(entries[entries.length - 1].key)
        unapplied.delete(entries[entries.length - 1].key)
      }
      return r
    }
    c.mesh.connectAll()
    await c.mesh.runUntil(() => !peerStatus(c, 1, a.id).resyncing && peerStatus(c, 1, a.id).cursor === a.replica.head(), 60_000, 'B to pull A')
    await c.mesh.runFor(1_000) // the round's last request (the changes since the resync's head) comes back
    expect(new Set(c.digests()).size).toBe(1)
    expect(peerStatus(c, 1, a.id).resyncs).toBe(1)
    expect(pageApplied.length).toBeGreaterThan(4)
    expect(pageApplied.every(x => !x), JSON.stringify(pageApplied)).toBe(true)
    // Each page was asked for once: a page asked for ahead is the one the next step takes.
    expect(requests).toBe(peerStatus(c, 1, a.id).pagesIn)

    // Changes pages the same way: B misses writes, comes back and pulls them in several pages, each asked for once.
    c.mesh.disconnect(a.id, b.id)
    for (let i = 0; i < 30; i++) await a.store.records.mergeFlat(`01M8ME6YDNEBQ9WHRFBFD4HM${String(i).padStart(2, '0')}`, { note: 'y'.repeat(100) })
    const [r0, p0] = [requests, peerStatus(c, 1, a.id).pagesIn]
    changesApplied.length = 0
    c.mesh.connect(a.id, b.id)
    await c.mesh.runUntil(() => peerStatus(c, 1, a.id).cursor === a.replica.head(), 60_000, 'B to pull the changes it missed')
    await c.mesh.runFor(1_000)
    expect(peerStatus(c, 1, a.id).pagesIn - p0).toBeGreaterThan(3)
    expect(requests - r0).toBe(peerStatus(c, 1, a.id).pagesIn - p0)
    // The first request of the round follows the last round; each one after it went out with the page before it still in hand.
    expect(changesApplied.slice(1).every(x => !x), JSON.stringify(changesApplied)).toBe(true)
    expect(changesApplied.length).toBeGreaterThan(3)
    expect(new Set(c.digests()).size).toBe(1)
  })
})

describe('frame epochs', () => {
  it('a restarted node takes a new epoch and its frames are accepted from seq 1', async () => {
    const c = await twoNodes({ seed: 7, mesh: { antiEntropyMs: 3_600_000 } })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(100)
    await b.store.records.mergeFlat(RID, { title: 'before' })
    await c.mesh.runFor(200)
    const epoch1 = b.core.status().self.epoch
    await c.restart(1)
    const epoch2 = b.core.status().self.epoch
    expect(epoch2).toBeGreaterThan(epoch1)
    await c.mesh.runFor(200)
    await b.store.records.mergeFlat(RID, { title: 'after' })
    await c.mesh.runFor(200)
    expect(a.store.records.getFlat(RID)).toEqual({ title: 'after' })
    expect(peerStatus(c, 0, b.id).framesRejected).toBe(0)
  })
})

describe('push batching', () => {
  it('sends a burst of writes in a few frames', async () => {
    const c = await twoNodes({ seed: 8 })
    const [a, b] = c.nodes
    c.mesh.connectAll()
    await c.mesh.runFor(100)
    await Promise.all(Array.from({ length: 200 }, async (_, i) => await b.store.records.mergeFlat(RID, { [`f${i}`]: 'x'.repeat(100) })))
    await c.mesh.runFor(200)
    const frames = b.core.status().self.framesOut
    expect(frames).toBeGreaterThan(0)
    expect(frames).toBeLessThanOrEqual(3)
    expect(Object.keys(a.store.records.getFlat(RID)!).length).toBe(200)
  })
})
