/**
 * Range-based set reconciliation (src/mesh/protocol/reconcile.ts) between
 * two real stores in temp dirs, every message encoded and decoded as on the
 * wire: random differences of 0–10 % of the roots (fields set on one side,
 * tombstones, root tombstones, roots only one side has, concurrent versions
 * of one key on both) are reconciled by moving exactly the keys one side
 * lacks, and end with equal digests; equal stores exchange one fingerprint
 * each way. Entries are applied with ties decided by value, as the core
 * applies a reconciliation's.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { RecordReplica } from '../../src/mesh/index.js'
import { decodeMessage, encodeMessage, type Message, type RequestMessage } from '../../src/mesh/messages.js'
import { reconcile, type ReconcileOutcome } from '../../src/mesh/protocol/reconcile.js'
import { serveRecon, serveRoots } from '../../src/mesh/protocol/serve.js'
import { newRecordId, openNodeStore, type NodeStore, type RemoteEntry } from '../../src/records/index.js'
import { prng } from '../../src/mesh/testing/index.js'
import { pick } from '../helpers/prng.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

interface Side { s: NodeStore, r: RecordReplica }

function open (nodeId: string): Side {
  const t = tmpDir()
  const s = openNodeStore({ path: path.join(t.dir, 'r.db'), nodeId, backgroundCheckpoint: false })
  cleanups.push(() => { s.close(); t.cleanup() })
  return { s, r: new RecordReplica(s.records) }
}

interface Wire { bytesOut: number, bytesIn: number, requests: number }

/** Reconciles `a` (initiator) with `b`, every message through the codec, `b` served by the core's own serving functions. */
async function run (a: Side, b: Side): Promise<{ outcome: ReconcileOutcome | undefined, wire: Wire }> {
  const wire: Wire = { bytesOut: 0, bytesIn: 0, requests: 0 }
  const outcome = await reconcile(a.r, {
    alive: () => true,
    apply: async (entries) => { await a.r.apply(entries, { ties: true }) },
    ask: async (m: RequestMessage): Promise<Message> => {
      const req = encodeMessage(m)
      wire.bytesOut += req.length
      wire.requests++
      const got = decodeMessage(req)
      let reply: Uint8Array
      if (got.t === 'recon') reply = serveRecon(b.r, got, 0)
      else if (got.t === 'roots') reply = serveRoots(b.r, got, 0)
      else if (got.t === 'give') {
        await b.r.apply(got.entries, { ties: true })
        reply = encodeMessage({ t: 'taken', applied: got.entries.length })
      } else throw new Error(`unexpected ${got.t}`)
      wire.bytesIn += reply.length
      return decodeMessage(reply)
    }
  })
  return { outcome, wire }
}

/** All entries of a store by root: the state the test compares, read independently of the protocol. */
function stateOf (x: Side): Map<string, RemoteEntry[]> {
  const out = new Map<string, RemoteEntry[]>()
  let after: string | null = null
  for (;;) {
    const p = x.r.exportRange(after, { maxBytes: 1 << 20 })
    for (const e of p.entries) {
      const slash = e.key.indexOf('/', 5)
      const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
      out.set(rid, [...(out.get(rid) ?? []), e])
    }
    if (p.next === null) return out
    after = p.next
  }
}

/** Keys of `from` that `to` lacks: no version of the key (or of its root tombstone) at or above `from`'s. */
function lacking (from: Map<string, RemoteEntry[]>, to: Map<string, RemoteEntry[]>): string[] {
  const out: string[] = []
  for (const [rid, entries] of from) {
    const theirs = to.get(rid) ?? []
    const root = theirs.find(e => e.key === `file:${rid}`)
    const rootV = root === undefined ? '' : root.hlc + root.origin
    const byKey = new Map(theirs.map(e => [e.key, e.hlc + e.origin]))
    for (const e of entries) {
      const v = e.hlc + e.origin
      if (rootV >= v) continue
      if ((byKey.get(e.key) ?? '') >= v) continue
      out.push(e.key)
    }
  }
  return out
}

const FIELDS = ['title', 'year', 'genres/Drama', 'genres/Comedy', 'tmdbid', 'fileinfo/duration', 'stream/0', 'holders/n1']

/** A base of `n` roots both stores hold, written as one peer's entries. */
async function base (a: Side, b: Side, n: number, rand: () => number): Promise<string[]> {
  const rids: string[] = []
  const entries: RemoteEntry[] = []
  const hlc = a.s.records.hlc.now()
  for (let i = 0; i < n; i++) {
    const rid = newRecordId()
    rids.push(rid)
    for (const f of FIELDS) if (rand() < 0.8) entries.push({ key: `file:${rid}/${f}`, value: `v${i}-${f}`, hlc, origin: 'nodeZ' })
  }
  await a.s.records.applyBatch(entries)
  await b.s.records.applyBatch(entries)
  return rids
}

/** One random difference on one side (or both: concurrent versions of one key). */
async function differ (a: Side, b: Side, rid: string, rand: () => number): Promise<void> {
  const side = rand() < 0.5 ? a : b
  const roll = rand()
  const f = pick(rand, FIELDS)
  if (roll < 0.3) {
    await side.s.records.applyRemote([{ key: `file:${rid}/${f}`, value: `x${rand()}`, hlc: side.s.records.hlc.now(), origin: side === a ? 'nodeA' : 'nodeB' }])
  } else if (roll < 0.45) {
    // A tombstone.
    await side.s.records.applyRemote([{ key: `file:${rid}/${f}`, value: null, hlc: side.s.records.hlc.now(), origin: side === a ? 'nodeA' : 'nodeB' }])
  } else if (roll < 0.55) {
    // A root tombstone.
    await side.s.records.applyRemote([{ key: `file:${rid}`, value: null, hlc: side.s.records.hlc.now(), origin: side === a ? 'nodeA' : 'nodeB' }])
  } else if (roll < 0.75) {
    // Concurrent versions of one key on both sides: the newer wins on both once reconciled.
    const ha = a.s.records.hlc.now()
    const hb = b.s.records.hlc.now()
    await a.s.records.applyRemote([{ key: `file:${rid}/${f}`, value: 'from A', hlc: ha, origin: 'nodeA' }])
    await b.s.records.applyRemote([{ key: `file:${rid}/${f}`, value: 'from B', hlc: hb, origin: 'nodeB' }])
  } else {
    // A root only one side has.
    const fresh = newRecordId()
    await side.s.records.applyRemote([{ key: `file:${fresh}/title`, value: 't', hlc: side.s.records.hlc.now(), origin: 'nodeQ' },
      { key: `file:${fresh}/year`, value: null, hlc: side.s.records.hlc.now(), origin: 'nodeQ' }])
  }
}

describe('range-based set reconciliation', () => {
  it('moves exactly the keys one side lacks and ends with equal digests, for random differences of 0–10 %', async () => {
    const seeds = Number(process.env.META_CORE_RECONCILE_SEEDS ?? 12)
    for (let seed = 1; seed <= seeds; seed++) {
      const rand = prng(seed)
      const a = open('nodeA')
      const b = open('nodeB')
      const n = 200 + Math.floor(rand() * 1500)
      const rids = await base(a, b, n, rand)
      const share = seed === 1 ? 0 : rand() * 0.1
      const changed = Math.round(share * n)
      for (let i = 0; i < changed; i++) await differ(a, b, pick(rand, rids), rand)
      const sa = stateOf(a)
      const sb = stateOf(b)
      const aLacks = lacking(sb, sa)
      const bLacks = lacking(sa, sb)
      const { outcome, wire } = await run(a, b)
      expect(outcome, `seed ${seed}`).toBeDefined()
      expect({ keysIn: outcome!.keysIn, keysOut: outcome!.keysOut }, `seed ${seed}: ${n} roots, ${changed} changes`).toEqual({ keysIn: aLacks.length, keysOut: bLacks.length })
      expect(a.r.digest(), `seed ${seed}`).toEqual(b.r.digest())
      expect(stateOf(a)).toEqual(stateOf(b))
      if (aLacks.length + bLacks.length === 0) {
        expect(outcome!.equal).toBe(true)
        expect(wire.requests).toBe(1)
      }
      // The bytes follow the difference: a few hundred bytes per differing root at most, on top of the walk's top levels.
      expect(wire.bytesIn + wire.bytesOut, `seed ${seed}`).toBeLessThan(2_000 + 1_500 * (changed + 1) + 40 * (aLacks.length + bLacks.length) * 40)
      // Once reconciled, the next check is one round trip that finds the ranges equal.
      const again = await run(a, b)
      expect(again.outcome!.equal).toBe(true)
      expect(again.wire.requests).toBe(1)
    }
  }, 300_000)

  it('between equal stores exchanges only the top fingerprints: one request, a few hundred bytes', async () => {
    const rand = prng(99)
    const a = open('nodeA')
    const b = open('nodeB')
    await base(a, b, 20_000, rand)
    const { outcome, wire } = await run(a, b)
    expect(outcome).toMatchObject({ equal: true, keysIn: 0, keysOut: 0 })
    expect(wire.requests).toBe(1)
    expect(wire.bytesIn + wire.bytesOut).toBeLessThan(400)
    console.log(`equal stores of 20,000 roots: ${wire.bytesOut} bytes out, ${wire.bytesIn} bytes in, ${wire.requests} request`)
    // One root different: a few round trips, a few KB.
    const rids = a.s.records.listRoots()
    await a.s.records.applyRemote([{ key: `file:${rids[7]}/title`, value: 'changed', hlc: a.s.records.hlc.now(), origin: 'nodeA' }])
    const one = await run(a, b)
    expect(one.outcome).toMatchObject({ equal: false, keysIn: 0, keysOut: 1, roots: 1 })
    expect(one.wire.bytesIn + one.wire.bytesOut).toBeLessThan(16_000)
    console.log(`one key different among 20,000 roots: ${one.wire.bytesOut + one.wire.bytesIn} bytes in ${one.wire.requests} requests`)
    expect(a.r.digest()).toEqual(b.r.digest())
  }, 120_000)

  it('finds a root each side alone holds when both are of equal content (the same fields, values and versions)', async () => {
    const a = open('nodeA')
    const b = open('nodeB')
    await base(a, b, 300, prng(7))
    // One batch wrote the same fields to two roots; one reached only A, the other only B.
    const hlc = a.s.records.hlc.now()
    const x = newRecordId()
    const y = newRecordId()
    const same = (rid: string): RemoteEntry[] => [{ key: `file:${rid}/title`, value: 't', hlc, origin: 'nodeQ' },
      { key: `file:${rid}/year`, value: null, hlc, origin: 'nodeQ' }]
    await a.s.records.applyRemote(same(x))
    await b.s.records.applyRemote(same(y))
    expect(a.r.digest().keys).toBe(b.r.digest().keys)
    expect(a.r.digest()).not.toEqual(b.r.digest())
    const { outcome } = await run(a, b)
    expect(outcome).toMatchObject({ equal: false, keysIn: 2, keysOut: 2 })
    expect(stateOf(a)).toEqual(stateOf(b))
    expect(a.r.digest()).toEqual(b.r.digest())
  }, 60_000)

  it('settles a tie (one version, two values) in the same reconciliation as a newer version of another key of that root', async () => {
    const a = open('nodeA')
    const b = open('nodeB')
    const rids = await base(a, b, 300, prng(11))
    const rid = rids[42]
    // A member signed one version with two values, one to each store; A also holds a newer year than B.
    const tie = a.s.records.hlc.now()
    await a.s.records.applyRemote([{ key: `file:${rid}/title`, value: 'aaa', hlc: tie, origin: 'nodeLiar' }])
    await b.s.records.applyRemote([{ key: `file:${rid}/title`, value: 'zzz', hlc: tie, origin: 'nodeLiar' }])
    await a.s.records.applyRemote([{ key: `file:${rid}/year`, value: '2001', hlc: a.s.records.hlc.now(), origin: 'nodeA' }])
    const { outcome } = await run(a, b)
    expect(outcome).toMatchObject({ equal: false })
    expect(a.r.digest()).toEqual(b.r.digest())
    for (const x of [a, b]) expect(x.s.records.getFlat(rid)).toMatchObject({ title: 'zzz', year: '2001' })
    const again = await run(a, b)
    expect(again.outcome!.equal).toBe(true)
  }, 60_000)

  it('fills an empty store from a full one, and a full one from an empty one gives nothing', async () => {
    const rand = prng(5)
    const a = open('nodeA')
    const b = open('nodeB')
    const c = open('nodeC')
    await base(a, c, 3_000, rand)
    const { outcome } = await run(b, a)
    expect(outcome!.keysIn).toBe(a.r.digest().keys)
    expect(b.r.digest()).toEqual(a.r.digest())
    const back = await run(open('nodeD'), open('nodeE'))
    expect(back.outcome!.equal).toBe(true)
  }, 120_000)
})
