/**
 * bench:join's figures 2 to 4: two nodes P and Q, each a copy of peer A's
 * stopped store (docs/operations.md, *Seeding a node from a copy*: the store
 * and search's index file, never the identity key), each in its own child
 * process (bench/lib/join-host.ts), meeting through a byte-counting relay
 * (bench/lib/tcp-meter.ts): Q bootstraps to the relay's port with P's peer
 * id, neither dials anyone else (`--target-peers 0`).
 *
 * - equal (figure 4): two fresh copies meet for the first time; the clock
 *   runs from the relay's first connection to the target until both sides
 *   have confirmed the ranges equal (a reconciliation round ended with a
 *   cursor on the other). Both nodes are up, their search idle, before the
 *   relay opens.
 * - diff (figure 3): both copies get new identities (strangers again) and,
 *   with the nodes stopped, 1 % of the records changed through the record
 *   layer (join-data.ts `divergence`: edits on each side, concurrent
 *   versions of one key, deleted records and fields, new records); the
 *   clock runs from the first connection until the two digests are equal.
 * - missed (figure 2): Q, level with P and holding a cursor on it, stops;
 *   P takes M edits of two fields of existing records (with a small log
 *   retention: its change log is trimmed past Q's cursor; the baseline: the
 *   default retention, the cursor still good); Q starts again and the clock
 *   runs from its start (startNode called in its process) until its digest
 *   equals P's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { waitFor } from '../../src/common/index.js'
import { prepareIdentity } from '../../src/mesh/libp2p/index.js'
import { openNodeStore } from '../../src/records/index.js'
import { copyStore, divergence, keyFileOf, storeFileOf, type SideChanges } from './join-data.js'
import type { PeerFigures } from './join-host.js'
import { NodeProc } from './join-proc.js'
import { TcpMeter } from './tcp-meter.js'
import { syntheticRecord } from './synthetic.js'

export interface MeetOptions {
  /** Peer A's folder: its store is copied (A must be stopped). */
  baseDir: string
  workDir: string
  swarmKey: string
  /** A's records. */
  records: number
  log: (msg: string) => void
  timeoutS: number
}

/** Bytes of one meeting: on the wire through the relay each way, and the replies each node counted taking from the other. */
export interface Traffic {
  wire: { qToP: number, pToQ: number, total: number }
  repliesTakenByQ: number
  repliesTakenByP: number
  /** Keys a reconciliation moved to each (each side counts the keys it received, as initiator or responder). */
  keysToQ: number
  keysToP: number
  /** Connections through the relay. */
  connections: number
  /** False when a connection bypassed the relay (its bytes are then not all counted). */
  throughRelay: boolean
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000

export class MeetPair {
  readonly pDir: string
  readonly qDir: string
  p: NodeProc | undefined
  q: NodeProc | undefined
  private meter: TcpMeter | undefined
  private meterPort = 0
  private copied = false
  /** Level with each other, each with a cursor on the other. */
  private met = false
  /** Figure 3's changes were made to the copies. */
  private diverged = false

  constructor (private readonly o: MeetOptions) {
    this.pDir = path.join(o.workDir, 'p')
    this.qDir = path.join(o.workDir, 'q')
  }

  /** Indexes of A's records that P still holds unchanged (none deleted by figure 3's changes). */
  unchanged (): number[] {
    const gone = new Set(this.diverged ? divergence(this.o.records).a.deletes : [])
    return Array.from({ length: this.o.records }, (_, i) => i).filter(i => !gone.has(i))
  }

  /** Fresh copies of A's store for P and Q (new identities). */
  copy (): void {
    copyStore(this.o.baseDir, this.pDir)
    copyStore(this.o.baseDir, this.qDir)
    this.copied = true
    this.met = false
    this.diverged = false
  }

  async startP (opts: { streamRetention?: number, trimEvery?: number } = {}): Promise<NodeProc> {
    if (!this.copied) this.copy()
    await this.p?.stop()
    this.p = await NodeProc.start({ label: 'P', dir: this.pDir, swarmKey: this.o.swarmKey, targetPeers: 0, ...opts })
    this.meter?.retarget(this.p.port)
    return this.p
  }

  private async relay (): Promise<TcpMeter> {
    if (this.meter === undefined) {
      this.meter = new TcpMeter(this.p?.port ?? 0)
      this.meterPort = await this.meter.listen()
    }
    if (this.p !== undefined) this.meter.retarget(this.p.port)
    return this.meter
  }

  private async startQ (opts: { waitDigest?: string } = {}): Promise<NodeProc> {
    if (this.p === undefined) throw new Error('P first')
    await this.q?.stop()
    await this.relay()
    this.q = await NodeProc.start({ label: 'Q', dir: this.qDir, swarmKey: this.o.swarmKey, targetPeers: 0, bootstrap: [`/ip4/127.0.0.1/tcp/${this.meterPort}/p2p/${this.p.peerId}`], ...opts })
    return this.q
  }

  async stop (): Promise<void> {
    await this.q?.stop()
    await this.p?.stop()
    this.q = undefined
    this.p = undefined
  }

  async close (): Promise<void> {
    await this.stop()
    await this.meter?.stop()
  }

  /** Q's and P's figures for each other. */
  private async views (): Promise<{ q: PeerFigures | undefined, p: PeerFigures | undefined }> {
    const [q, p] = await Promise.all([this.q!.peer(this.p!.peerId), this.p!.peer(this.q!.peerId)])
    return { q, p }
  }

  private async traffic (): Promise<Traffic> {
    const m = this.meter!
    const { q, p } = await this.views()
    const port = (a: string): number => Number(/\/tcp\/(\d+)/.exec(a)?.[1])
    return {
      wire: { qToP: m.toTarget, pToQ: m.fromTarget, total: m.bytes },
      repliesTakenByQ: q?.bytesIn ?? 0,
      repliesTakenByP: p?.bytesIn ?? 0,
      keysToQ: q?.reconKeysIn ?? 0,
      keysToP: p?.reconKeysIn ?? 0,
      connections: m.connections,
      throughRelay: (q?.addrs ?? []).every(a => port(a) === this.meterPort) && (p?.addrs.length ?? 0) <= 1
    }
  }

  /** Starts both, Q's dial held by the closed relay until both are ready; resolves with the relay's connect time (performance.now()). */
  private async meet (): Promise<number> {
    await this.stop()
    await this.startP()
    const meter = await this.relay()
    meter.reset()
    meter.close()
    await this.startQ()
    meter.open()
    await waitFor(() => meter.firstConnectedAt !== null, { timeoutMs: 60_000, what: 'Q to connect through the relay', intervalMs: 5 })
    return meter.firstConnectedAt!
  }

  /** A side holds a cursor on the other and its last round reached the other's head, none running. */
  private static caughtUp (v: PeerFigures | undefined): boolean {
    return v !== undefined && v.cursor !== null && !v.reconciling && !v.resyncing && !v.behind
  }

  /** A side has confirmed: a reconciliation with the other ended and left it a cursor. */
  private static settled (v: PeerFigures | undefined): boolean {
    return MeetPair.caughtUp(v) && v!.reconciles + v!.reconcilesEqual > 0
  }

  /** Figure 4: two equal copies meet for the first time. */
  async equal (): Promise<Record<string, unknown>> {
    await this.stop()
    this.copy()
    const t0 = await this.meet()
    let first: number | null = null
    let both: number | null = null
    let traffic: Traffic | undefined
    await waitFor(async () => {
      const { q, p } = await this.views()
      const now = performance.now()
      if (first === null && (MeetPair.settled(q) || MeetPair.settled(p))) first = now
      if (MeetPair.settled(q) && MeetPair.settled(p)) { both = now; traffic = await this.traffic() }
      return both !== null
    }, { timeoutMs: this.o.timeoutS * 1000, what: 'both sides to confirm the ranges equal',
      intervalMs: 10 }).catch((err: unknown) => { this.o.log(String(err)) })
    const { q, p } = await this.views()
    const [sq, sp] = await Promise.all([this.q!.status(), this.p!.status()])
    await this.stop()
    this.met = both !== null
    const seconds = both === null ? null : r3((both - t0) / 1000)
    const t: Traffic | undefined = traffic
    return {
      records: sq.records,
      keys: sq.keys,
      digestsEqual: sq.digest === sp.digest,
      seconds,
      firstSideSeconds: first === null ? null : r3((first - t0) / 1000),
      traffic: t,
      reconcilesEqual: { q: q?.reconcilesEqual, p: p?.reconcilesEqual },
      reconciles: { q: q?.reconciles, p: p?.reconciles },
      resyncs: { q: q?.resyncs, p: p?.resyncs },
      target: { seconds: 1, bytes: 65_536, met: seconds !== null && seconds <= 1 && t !== undefined && t.wire.total <= 65_536 }
    }
  }

  /** Figure 3: the copies, strangers again, 1 % different, meet. */
  async diff (): Promise<Record<string, unknown>> {
    await this.stop()
    if (!this.copied) this.copy()
    const plan = divergence(this.o.records)
    const t1 = performance.now()
    for (const [dir, side, tag] of [[this.pDir, plan.a, 'P'], [this.qDir, plan.b, 'Q']] as const) {
      fs.rmSync(keyFileOf(dir), { force: true })
      await diverge(dir, side, tag)
    }
    this.diverged = true
    this.o.log(`diff: ${plan.records} records changed in ${((performance.now() - t1) / 1000).toFixed(1)} s (nodes stopped)`)
    const t0 = await this.meet()
    const before = await Promise.all([this.q!.status(), this.p!.status()])
    let equalAt: number | null = null
    let traffic: Traffic | undefined
    await waitFor(async () => {
      const [a, b] = await Promise.all([this.q!.call<{ digest: string }>('digest'), this.p!.call<{ digest: string }>('digest')])
      if (a.digest !== b.digest) return false
      equalAt = performance.now()
      traffic = await this.traffic()
      return true
    }, { timeoutMs: this.o.timeoutS * 1000, what: 'P\'s and Q\'s digests to be equal', intervalMs: 10 }).catch((err: unknown) => { this.o.log(String(err)) })
    // The rounds end just after the digests come out equal: their counters then.
    await waitFor(async () => { const { q, p } = await this.views(); return MeetPair.settled(q) && MeetPair.settled(p) },
      { timeoutMs: 30_000, what: 'the reconciliation rounds to end', intervalMs: 20 })
      .catch((err: unknown) => { this.o.log(String(err)) })
    const end = await this.traffic()
    const { q, p } = await this.views()
    const after = await this.q!.status()
    await this.stop()
    this.met = equalAt !== null
    const seconds = equalAt === null ? null : r3((equalAt - t0) / 1000)
    return {
      records: { q: before[0].records, p: before[1].records, after: after.records },
      changedRecords: plan.records,
      plan: Object.fromEntries(Object.entries({ P: plan.a, Q: plan.b }).map(([k, s]) => [k,
        Object.fromEntries(Object.entries(s).map(([kind, xs]) => [kind, xs.length]))])),
      seconds,
      traffic,
      trafficAtRoundEnd: end,
      reconciles: { q: q?.reconciles, p: p?.reconciles },
      resyncs: { q: q?.resyncs, p: p?.resyncs },
      target: { seconds: 5, met: seconds !== null && seconds <= 5 }
    }
  }

  /** Figure 2 (trimmed) and its baseline (not): Q misses `writes` edits made on P, then restarts. */
  async missed (o: { writes: number, from: number, trimmed: boolean, retention: number }): Promise<Record<string, unknown>> {
    if (!this.met) await this.level()
    await this.stop()
    const retention = o.trimmed ? { streamRetention: o.retention, trimEvery: Math.max(1, Math.round(o.retention / 5)) } : {}
    const p = await this.startP(retention)
    // Records P holds as A wrote them, spread over the key range; `from` numbers the edits, so two runs change other records.
    const pool = this.unchanged()
    const indexes = Array.from({ length: o.writes }, (_, k) => pool[((o.from + k) * 7919) % pool.length])
    const w = await p.call<{ writes: number, changedKeys: number, rawBytes: number }>('edit', { indexes, tag: `edit ${o.from}` })
    const target = await p.status()
    const meter = await this.relay()
    meter.reset()
    meter.open()
    const q = await this.startQ({ waitDigest: target.digest })
    const r = q.ready
    await waitFor(async () => MeetPair.caughtUp(await q.peer(p.peerId)), { timeoutMs: 30_000, what: 'Q\'s round with P to end', intervalMs: 20 })
      .catch(async (err: unknown) => { this.o.log(`${String(err)}: ${JSON.stringify(await q.peer(p.peerId))}`) })
    const traffic = await this.traffic()
    const view = await q.peer(p.peerId)
    await this.stop()
    const seconds = r.digestEqualAt === null ? null : r3((r.digestEqualAt - r.startAt) / 1000)
    return {
      logTrimmed: o.trimmed,
      retention: o.trimmed ? retention : 'default (100,000 entries)',
      ...w,
      seconds,
      fromConnectionSeconds: r.digestEqualAt === null || r.connectedAt === null ? null : r3((r.digestEqualAt - r.connectedAt) / 1000),
      startSeconds: r3((r.startedAt - r.startAt) / 1000),
      path: view === undefined ? null : view.reconciles > 0 ? 'reconciliation' : view.resyncs > 0 ? 'full resync' : 'cursor pull',
      pagesIn: view?.pagesIn,
      traffic,
      ratioToRaw: r3(traffic.wire.total / w.rawBytes),
      target: o.trimmed ? { seconds: 2, ratioToRaw: 20, met: seconds !== null && seconds <= 2 && traffic.wire.total <= 20 * w.rawBytes } : undefined
    }
  }

  /** An untimed first meeting, so Q holds a cursor on P (figure 2 run on its own). */
  private async level (): Promise<void> {
    if (!this.copied) this.copy()
    await this.meet()
    await waitFor(async () => { const { q, p } = await this.views(); return MeetPair.settled(q) && MeetPair.settled(p) },
      { timeoutMs: this.o.timeoutS * 1000, what: 'P and Q to level', intervalMs: 20 })
    await this.stop()
    this.met = true
  }
}

/** One side's changes through the record layer, the node stopped, as the node itself (its new identity's peer id) would write them. */
async function diverge (dir: string, side: SideChanges, tag: string): Promise<void> {
  const prepared = await prepareIdentity(keyFileOf(dir))
  prepared.persist()
  const s = openNodeStore({ path: storeFileOf(dir), nodeId: prepared.identity.peerId })
  const { records } = s
  const each = async (xs: number[], fn: (i: number) => Promise<unknown>): Promise<void> => {
    for (let j = 0; j < xs.length; j += 100) await Promise.all(xs.slice(j, j + 100).map(fn))
  }
  try {
    await each(side.edits, async i => await records.mergeFlat(syntheticRecord(i).cid, { title: `${syntheticRecord(i).fields.title} (${tag} edit)`, 'fileinfo/bitrate': String(3_000_000 + i) }))
    await each(side.concurrent, async i => await records.mergeFlat(syntheticRecord(i).cid, { title: `${syntheticRecord(i).fields.title} (${tag}'s version)` }))
    await each(side.deletes, async i => await records.deleteRoot(syntheticRecord(i).cid))
    await each(side.fieldDeletes, async i => await records.deleteProperty(syntheticRecord(i).cid, 'poster'))
    await each(side.creates, async i => { const r = syntheticRecord(i); await records.mergeFlat(r.cid, r.fields) })
  } finally {
    s.close()
  }
}
