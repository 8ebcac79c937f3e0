/**
 * What a run measures, in Maelstrom's terms where it has them:
 * - every network message (gossipsub RPCs of every kind, pull requests and
 *   replies) with its bytes, by kind and by node;
 * - operations (writes and reads) and, per write, when it became readable
 *   on each node (from the node's own commit stream), so the stable latency
 *   is the time until the last node that must hold it does;
 * - gossip duplicates and validation verdicts, per signer;
 * - a timeline of partitions and churn, and catch-up progress of nodes that
 *   join fresh or return from an absence.
 * Nothing here reads the wall clock: the collector is part of the
 * deterministic run.
 */
import type { GossipMessage, Verdict } from '../gossip/rpc.js'
import type { NetStats } from '../net/network.js'
import type { RouterStats } from '../gossip/router.js'

type LossReason = 'loss' | 'partition' | 'closed' | 'down'

export interface WriteTrack {
  id: number
  origin: number
  /** Virtual time the operation was issued. */
  at: number
  /** The replicated key whose arrival makes this write readable on a node (known once the origin committed it). */
  key: string | undefined
  /** Nodes that existed when the write was issued (later joiners are measured by catch-up instead). */
  members: number
  acked: boolean
  /** Visible-at per node (NaN: not yet). */
  visibleAt: Float64Array
}

export interface TimelineEvent {
  t: number
  kind: 'partition' | 'heal' | 'stop' | 'start' | 'join' | 'skew' | 'clock-step' | 'clock-back' | 'bad-peer'
  nodes?: number[]
  detail?: string
}

/** How long past its tail a run (the model's, virtual; the real stack's, real) goes on while a catch-up it started is under way, ms. */
export const CATCH_UP_GRACE_MS = 10 * 60_000

export interface CatchUpTrack {
  node: number
  kind: 'fresh-join' | 'return'
  startAt: number
  /** Writes (tracked) the node had to receive: those acknowledged before it started. */
  target: number
  got: number
  /** Preloaded records the node had to receive too (a fresh node joining a preloaded mesh), and how many it holds. */
  records?: { target: number, got: number }
  doneAt: number | undefined
  bytesIn: number
  messagesIn: number
  /** [virtual ms since start, fraction] samples, one per percent of progress. */
  progress: Array<[number, number]>
}

export class Metrics implements NetStats, RouterStats {
  readonly msgCount = new Map<string, number>()
  readonly msgBytes = new Map<string, number>()
  readonly lostCount = new Map<LossReason, number>()
  sentBytes: number[] = []
  recvBytes: number[] = []
  /** The same, counted only inside `window` (the steady load: warm-up and tail left out). */
  windowSent: number[] = []
  windowRecv: number[] = []
  /** [from, to) of virtual time that windowSent/windowRecv count (run.ts sets the load's, past its first 10 %). */
  window: [number, number] = [0, Infinity]
  sentMsgs: number[] = []
  writes: WriteTrack[] = []
  reads = 0
  failedReads = 0
  writeErrors = 0
  /** Client writes a node refused because its clock was out of bound, by node. */
  readonly refusedByNode = new Map<number, number>()
  gossipReceived = 0
  duplicates = 0
  readonly verdicts: Record<Verdict, number> = { accept: 0, reject: 0, ignore: 0 }
  /** Rejected frames by signer index. */
  readonly rejectedBySigner = new Map<number, number>()
  readonly timeline: TimelineEvent[] = []
  readonly catchUps: CatchUpTrack[] = []
  /** Frames bad peers published, by behaviour. */
  readonly badFrames = new Map<string, number>()
  private readonly byKey = new Map<string, WriteTrack>()
  private readonly catchUpOf = new Map<number, CatchUpTrack>()
  private readonly recordCounts = new Map<number, () => number>()
  /** When work a node commits now is done on its virtual CPU (sim/cpu.ts): what it commits is readable then. */
  completion: (node: number) => number = () => this.now()
  private nodeCount = 0
  /** Nodes whose own verdicts are left out (bad peers validate too, but their view is not the mesh's). */
  readonly bad = new Set<number>()
  /** The latency model's regions, when it has them: traffic between regions is counted apart. */
  regionOf: ((node: number) => string) | undefined
  /** Messages and bytes sent from one region to another (`windowBytes`: inside `window`). */
  readonly betweenRegions = { messages: 0, bytes: 0, windowBytes: 0 }

  constructor (private readonly now: () => number) {}

  /** Grows the per-node arrays (nodes are numbered 0…n-1 in order of creation). */
  addNode (index: number): void {
    this.nodeCount = Math.max(this.nodeCount, index + 1)
    for (const a of [this.sentBytes, this.recvBytes, this.sentMsgs, this.windowSent, this.windowRecv]) while (a.length < this.nodeCount) a.push(0)
  }

  // -------------------------------------------------------------- network

  sent (from: number, to: number, kind: string, bytes: number): void {
    this.msgCount.set(kind, (this.msgCount.get(kind) ?? 0) + 1)
    this.msgBytes.set(kind, (this.msgBytes.get(kind) ?? 0) + bytes)
    this.sentBytes[from] += bytes
    this.sentMsgs[from]++
    this.recvBytes[to] += bytes
    const t = this.now()
    const inWindow = t >= this.window[0] && t < this.window[1]
    if (inWindow) {
      this.windowSent[from] += bytes
      this.windowRecv[to] += bytes
    }
    if (this.regionOf !== undefined && this.regionOf(from) !== this.regionOf(to)) {
      this.betweenRegions.messages++
      this.betweenRegions.bytes += bytes
      if (inWindow) this.betweenRegions.windowBytes += bytes
    }
    const c = this.catchUpOf.get(to)
    if (c !== undefined && c.doneAt === undefined) {
      c.bytesIn += bytes
      c.messagesIn++
    }
  }

  lost (_from: number, _to: number, _kind: string, _bytes: number, why: LossReason): void {
    this.lostCount.set(why, (this.lostCount.get(why) ?? 0) + 1)
  }

  get totalMessages (): number {
    let n = 0
    for (const v of this.msgCount.values()) n += v
    return n
  }

  get totalBytes (): number {
    let n = 0
    for (const v of this.msgBytes.values()) n += v
    return n
  }

  // -------------------------------------------------------------- gossip

  received (_node: number, _msg: GossipMessage): void {
    this.gossipReceived++
  }

  duplicate (_node: number, _msg: GossipMessage): void {
    this.duplicates++
  }

  verdict (node: number, msg: GossipMessage, _source: number, v: Verdict): void {
    if (this.bad.has(node)) return
    this.verdicts[v]++
    if (v === 'reject') this.rejectedBySigner.set(msg.from, (this.rejectedBySigner.get(msg.from) ?? 0) + 1)
  }

  // -------------------------------------------------------------- writes

  /** A client write issued at `origin`. */
  writeIssued (id: number, origin: number): WriteTrack {
    const w: WriteTrack = {
      id, origin, at: this.now(), key: undefined, members: this.nodeCount, acked: false, visibleAt: new Float64Array(this.nodeCount).fill(NaN)
    }
    this.writes.push(w)
    return w
  }

  /**
   * The origin committed the write; `key` marks it from now on. No other node
   * can hold it yet: it leaves the origin only after this commit.
   */
  writeAcked (w: WriteTrack, key: string): void {
    w.acked = true
    w.key = key
    this.byKey.set(key, w)
    w.visibleAt[w.origin] = this.completion(w.origin)
  }

  /** Keys committed on `node` (its change stream): marks tracked writes visible there. */
  committed (node: number, keys: Iterable<string>): void {
    for (const k of keys) {
      const w = this.byKey.get(k)
      if (w === undefined || node >= w.visibleAt.length || !Number.isNaN(w.visibleAt[node])) continue
      w.visibleAt[node] = this.completion(node)
      const c = this.catchUpOf.get(node)
      if (c !== undefined && c.doneAt === undefined && w.acked && w.at < c.startAt) this.catchUpStep(c)
    }
    const c = this.catchUpOf.get(node)
    const count = this.recordCounts.get(node)
    if (c?.records !== undefined && c.doneAt === undefined && count !== undefined) {
      c.records.got = Math.min(c.records.target, count())
      this.catchUpStep(c, 0)
    }
  }

  // -------------------------------------------------------------- catch-up

  /**
   * A node (re)starts and must catch up on the acknowledged writes it lacks,
   * and, with `records`, on that many preloaded records (`count` tells how
   * many records its store holds).
   */
  catchUpStarted (node: number, kind: CatchUpTrack['kind'], records?: { target: number, count: () => number }): void {
    const missing = this.writes.filter(w => w.acked && node < w.visibleAt.length && Number.isNaN(w.visibleAt[node]))
    const c: CatchUpTrack = {
      node, kind, startAt: this.now(), target: missing.length, got: 0, doneAt: undefined, bytesIn: 0, messagesIn: 0, progress: [[0, 0]]
    }
    if (records !== undefined && records.target > 0) {
      c.records = { target: records.target, got: Math.min(records.target, records.count()) }
      this.recordCounts.set(node, records.count)
    }
    if (c.target === 0 && (c.records === undefined || c.records.got >= c.records.target)) c.doneAt = c.startAt
    this.catchUps.push(c)
    this.catchUpOf.set(node, c)
  }

  /** A fresh node joins: it must receive every write acknowledged so far, so widen the tracks to it. */
  widenTracksTo (node: number): void {
    for (const w of this.writes) {
      if (w.visibleAt.length > node) continue
      const v = new Float64Array(node + 1).fill(NaN)
      v.set(w.visibleAt)
      w.visibleAt = v
    }
  }

  /** One more write received (`by` 1), or the record count moved (`by` 0). */
  private catchUpStep (c: CatchUpTrack, by = 1): void {
    c.got += by
    const at = this.completion(c.node)
    const t = at - c.startAt
    const rt = c.records?.target ?? 0
    const rg = c.records?.got ?? 0
    const f = (c.got + rg) / (c.target + rt)
    const last = c.progress[c.progress.length - 1]
    const done = c.got >= c.target && rg >= rt
    if (f - last[1] >= 0.01 || (done && f > last[1])) c.progress.push([t, f])
    if (done) c.doneAt = at
  }

  // -------------------------------------------------------------- timeline

  event (e: Omit<TimelineEvent, 't'>): void {
    this.timeline.push({ t: this.now(), ...e })
  }
}
