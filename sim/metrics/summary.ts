/**
 * The figures of one run, computed once the clock stopped. Every number
 * here is a function of the seed and options (no wall clock), rounded so
 * the JSON text is the same on every run.
 *
 * Definitions:
 * - messagesPerOp: every network message of the run (gossip RPCs of all
 *   kinds, pull requests and replies; connection handshakes, identify and
 *   ping are not counted) over client operations, reads included, as
 *   Maelstrom counts them.
 * - stable latency of a write: from the client's call until the write is
 *   readable on the last honest node that existed when it was issued and is
 *   up at the end (later joiners are measured by catch-up).
 * - lostWrites: acknowledged writes missing on some honest node that is up
 *   at the end, while their origin is up too (a write whose origin is down
 *   at the end is `unavailableWrites`: nobody else may have it yet, and that
 *   is not a loss).
 * - converged: every honest up node's replica digest is the same.
 */
import { regionLinks } from '../net/topology.js'
import type { World } from '../world.js'
import type { CheckValue } from '../scenario/scenario.js'
import { logHistogram, round, summarise, type Summary } from './stats.js'
import type { CatchUpTrack, TimelineEvent, WriteTrack } from './collector.js'

export interface RunSummary {
  nodes: number
  badPeers: number
  converged: boolean
  /** Distinct replica digests among honest up nodes (1 when converged). */
  digests: number
  replicatedKeys: number
  lostWrites: number
  unavailableWrites: number
  forgedApplied: number
  operations: { total: number, writes: number, writesAcked: number, reads: number, writeErrors: number }
  messagesPerOp: number
  bytesPerWrite: number
  duplicatesPerWrite: number
  latencyMs: Summary
  /**
   * Stable latency of the writes issued while the network was whole and at
   * least 2 s before the next partition began (a write born inside a
   * partition cannot be readable across it before the heal). Equal to
   * latencyMs when the run has no partitions.
   */
  latencyMsUnpartitioned: Summary
  /**
   * Stable latency in bins of equal width on a log scale (10 per decade, more when the latencies span little of one: stats.ts
   * logHistogram): `lower` is the first bin's lower edge, `edges` each bin's upper one.
   */
  latencyHistogram: { edges: number[], counts: number[], lower: number, perDecade: number }
  messages: { total: number, bytes: number, byKind: Record<string, { count: number, bytes: number }> }
  lostMessages: Record<string, number>
  perNode: {
    bytesSent: Summary
    bytesReceived: Summary
    messagesSent: Summary
    /** Mean bytes each node sent and received per second of the run. */
    bytesPerSecond: number
    messagesPerSecond: number
    /** Mean bytes each node sent and received per client write. */
    bytesPerWrite: number
    /**
     * Under load: bytes per second each node uploaded and downloaded while
     * the load ran, its first 10 % (the mesh settling into it) and the warm-up
     * and tail left out; the busiest node by upload plus download.
     */
    underLoad: { fromMs: number, toMs: number, uploadPerSecond: Summary, downloadPerSecond: Summary,
      busiest: { node: number, uploadPerSecond: number, downloadPerSecond: number } }
  }
  gossip: { received: number, duplicates: number, verdicts: Record<string, number> }
  /**
   * The nodes' virtual CPUs (sim/cpu.ts): the fraction of the run each was
   * busy, the longest a task waited for one, and the busiest node.
   */
  cpu: { busyFraction: Summary, maxWaitMs: Summary, busiest: { node: number, busyFraction: number, maxWaitMs: number } }
  /** The gossipsub mesh and the connections at the end: degrees and connected components. */
  topology: { connections: Summary, meshDegree: Summary, meshComponents: number }
  /**
   * With regions in the latency model: the connections at the end inside a
   * region and between two, whether every region reaches every other over
   * them, and the traffic between regions (all of it, its share of all
   * bytes, per write, and per second under load, summed over the mesh).
   */
  regions?: {
    connections: { inside: number, between: number }
    regionsConnected: boolean
    messagesBetween: number
    bytesBetween: number
    shareOfBytes: number
    bytesBetweenPerWrite: number
    bytesBetweenPerSecondUnderLoad: number
  }
  rejected: {
    /** Gossip messages refused by honest nodes' validators, by signer role. */
    fromBad: number
    fromHonest: number
    /** The cores' own counters about bad peers, summed over honest nodes. */
    badPeerCounters: { framesIn: number, framesRejected: number, forged: number, replays: number, driftRefusals: number, framesDropped: number }
    honestDriftRefusals: number
  }
  catchUp: Array<{ node: number, kind: string, startAtMs: number, target: number, got: number, records?: { target: number, got: number }, timeMs: number | null,
    bytes: number, messages: number, progress: Array<[number, number]> }>
  timeline: TimelineEvent[]
  /** Scenario-specific checks, by name. */
  checks: Record<string, CheckValue>
  virtualMs: number
  tasks: number
  failures: string[]
}

interface SummaryInput {
  nodeCount: number
  bad: ReadonlySet<number>
  forbidden: ReadonlySet<string>
  loadMs: number
  end: number
}

export function summariseRun (world: World, inp: SummaryInput): RunSummary {
  const m = world.metrics
  const honestUp = world.nodes.filter(n => n.up && !inp.bad.has(n.index))

  const digests = new Map<string, number>()
  let keys = 0
  for (const n of honestUp) {
    const d = n.replica.digest()
    digests.set(d.digest, (digests.get(d.digest) ?? 0) + 1)
    keys = Math.max(keys, d.keys)
  }

  const cuts = partitionIntervals(m.timeline, inp.end)
  const whole = (t: number): boolean => cuts.every(([a, b]) => t < a - 2000 || t >= b)
  const { latencies, lost, unavailable, acked, wholeLatencies } = writeOutcomes(m.writes, honestUp.map(n => n.index), whole)

  let forged = 0
  for (const n of honestUp) for (const k of inp.forbidden) if (n.kv.get(k) !== undefined) forged++

  const ops = m.writes.length + m.reads
  const byKind: Record<string, { count: number, bytes: number }> = {}
  for (const k of [...m.msgCount.keys()].sort()) byKind[k] = { count: m.msgCount.get(k)!, bytes: m.msgBytes.get(k)! }
  const lostMessages: Record<string, number> = {}
  for (const k of [...m.lostCount.keys()].sort()) lostMessages[k] = m.lostCount.get(k)!

  const seconds = inp.end / 1000
  const all = world.nodes.map(n => n.index)
  const traffic = all.map(i => m.sentBytes[i] + m.recvBytes[i])
  const meanTraffic = traffic.reduce((a, b) => a + b, 0) / Math.max(1, all.length)
  const meanMsgs = all.map(i => m.sentMsgs[i]).reduce((a, b) => a + b, 0) / Math.max(1, all.length)

  const bad = { framesIn: 0, framesRejected: 0, forged: 0, replays: 0, driftRefusals: 0, framesDropped: 0 }
  let honestDrift = 0
  const badIds = new Set([...inp.bad].map(i => world.nodes[i].peerId))
  for (const n of honestUp) {
    for (const p of n.core?.status().peers ?? []) {
      if (badIds.has(p.peerId)) {
        bad.framesIn += p.framesIn
        bad.framesRejected += p.framesRejected
        bad.forged += p.forged
        bad.replays += p.replays
        bad.driftRefusals += p.driftRefusals
        bad.framesDropped += p.framesDropped
      } else honestDrift += p.driftRefusals
    }
  }
  let fromBad = 0
  let fromHonest = 0
  for (const [signer, c] of m.rejectedBySigner) {
    if (inp.bad.has(signer)) fromBad += c
    else fromHonest += c
  }

  return {
    nodes: inp.nodeCount,
    badPeers: inp.bad.size,
    converged: digests.size <= 1,
    digests: digests.size,
    replicatedKeys: keys,
    lostWrites: lost,
    unavailableWrites: unavailable,
    forgedApplied: forged,
    operations: { total: ops, writes: m.writes.length, writesAcked: acked, reads: m.reads, writeErrors: m.writeErrors },
    messagesPerOp: round(m.totalMessages / Math.max(1, ops), 2),
    bytesPerWrite: round(m.totalBytes / Math.max(1, m.writes.length), 0),
    duplicatesPerWrite: round(m.duplicates / Math.max(1, m.writes.length), 2),
    latencyMs: summarise(latencies, 1),
    latencyMsUnpartitioned: summarise(wholeLatencies, 1),
    latencyHistogram: logHistogram(latencies, 10),
    messages: { total: m.totalMessages, bytes: m.totalBytes, byKind },
    lostMessages,
    perNode: {
      bytesSent: summarise(all.map(i => m.sentBytes[i]), 0),
      bytesReceived: summarise(all.map(i => m.recvBytes[i]), 0),
      messagesSent: summarise(all.map(i => m.sentMsgs[i]), 0),
      bytesPerSecond: round(meanTraffic / seconds, 0),
      messagesPerSecond: round(meanMsgs / seconds, 2),
      bytesPerWrite: round(meanTraffic / Math.max(1, m.writes.length), 1),
      underLoad: underLoad(m, all)
    },
    gossip: { received: m.gossipReceived, duplicates: m.duplicates, verdicts: { ...m.verdicts } },
    cpu: cpuSummary(world, inp.end),
    topology: topology(world),
    ...regions(world),
    rejected: { fromBad, fromHonest, badPeerCounters: bad, honestDriftRefusals: honestDrift },
    catchUp: m.catchUps.map(catchUpRow),
    timeline: m.timeline,
    checks: {},
    virtualMs: inp.end,
    tasks: world.sched.tasksRun,
    failures: world.failures
  }
}

function underLoad (m: World['metrics'], all: number[]): RunSummary['perNode']['underLoad'] {
  const [from, to] = m.window
  const secs = Math.max(0.001, (Math.min(to, 1e15) - from) / 1000)
  const up = all.map(i => m.windowSent[i] / secs)
  const down = all.map(i => m.windowRecv[i] / secs)
  let top = 0
  for (let i = 1; i < all.length; i++) if (up[i] + down[i] > up[top] + down[top]) top = i
  return {
    fromMs: round(from, 1),
    toMs: round(to, 1),
    uploadPerSecond: summarise(up, 0),
    downloadPerSecond: summarise(down, 0),
    busiest: { node: all[top] ?? 0, uploadPerSecond: round(up[top] ?? 0, 0), downloadPerSecond: round(down[top] ?? 0, 0) }
  }
}

function cpuSummary (world: World, end: number): RunSummary['cpu'] {
  const busy = world.nodes.map(n => n.cpu.busyMs / Math.max(1, end))
  let top = 0
  for (let i = 1; i < busy.length; i++) if (busy[i] > busy[top]) top = i
  return {
    busyFraction: summarise(busy, 4),
    maxWaitMs: summarise(world.nodes.map(n => n.cpu.maxWaitMs), 1),
    busiest: { node: top, busyFraction: round(busy[top] ?? 0, 4), maxWaitMs: round(world.nodes[top]?.cpu.maxWaitMs ?? 0, 1) }
  }
}

function catchUpRow (c: CatchUpTrack): RunSummary['catchUp'][number] {
  return {
    node: c.node,
    kind: c.kind,
    startAtMs: round(c.startAt, 1),
    target: c.target,
    got: c.got,
    ...(c.records !== undefined ? { records: { ...c.records } } : {}),
    timeMs: c.doneAt === undefined ? null : round(c.doneAt - c.startAt, 1),
    bytes: c.bytesIn,
    messages: c.messagesIn,
    progress: c.progress.map(([t, f]) => [round(t, 1), round(f, 3)])
  }
}

/** Degrees of the connection graph and of the gossip mesh (links either side holds), and the mesh's components. */
function topology (world: World): RunSummary['topology'] {
  const up = world.nodes.filter(n => n.up)
  const mesh = new Map<number, Set<number>>(up.map(n => [n.index, new Set<number>()]))
  for (const n of up) {
    for (const p of n.router?.meshPeers(world.topic) ?? []) {
      if (!mesh.has(p)) continue
      mesh.get(n.index)!.add(p)
      mesh.get(p)!.add(n.index)
    }
  }
  let components = 0
  const seen = new Set<number>()
  for (const start of mesh.keys()) {
    if (seen.has(start)) continue
    components++
    const todo = [start]
    seen.add(start)
    while (todo.length > 0) {
      for (const q of mesh.get(todo.pop()!)!) if (!seen.has(q)) { seen.add(q); todo.push(q) }
    }
  }
  return {
    connections: summarise(up.map(n => world.net.peersOf(n.index).length), 1),
    meshDegree: summarise([...mesh.values()].map(s => s.size), 1),
    meshComponents: components
  }
}

function regions (world: World): { regions?: RunSummary['regions'] } {
  const m = world.metrics
  const regionOf = m.regionOf
  if (regionOf === undefined) return {}
  const up = world.nodes.filter(n => n.up).map(n => n.index)
  const links = up.flatMap(n => world.net.peersOf(n).filter(p => p > n).map(p => [n, p] as const))
  const r = regionLinks(links, regionOf, up)
  const [from, to] = m.window
  return {
    regions: {
      connections: { inside: r.inside, between: r.between },
      regionsConnected: r.regionsConnected,
      messagesBetween: m.betweenRegions.messages,
      bytesBetween: m.betweenRegions.bytes,
      shareOfBytes: round(m.betweenRegions.bytes / Math.max(1, m.totalBytes), 4),
      bytesBetweenPerWrite: round(m.betweenRegions.bytes / Math.max(1, m.writes.length), 0),
      bytesBetweenPerSecondUnderLoad: round(m.betweenRegions.windowBytes / Math.max(0.001, (Math.min(to, 1e15) - from) / 1000), 0)
    }
  }
}

interface WriteOutcomes {
  /** Stable latency of each write readable on every node it must reach. */
  latencies: number[]
  /** The same, for writes `whole(at)` accepts (issued while the network was whole). */
  wholeLatencies: number[]
  acked: number
  lost: number
  unavailable: number
}

/**
 * Per acknowledged write: when the last honest up node that existed at its
 * issue could read it, and whether any honest up node still lacks it (lost
 * while its origin is up, unavailable while it is down).
 */
export function writeOutcomes (writes: readonly WriteTrack[], honestUp: readonly number[], whole: (t: number) => boolean = () => true): WriteOutcomes {
  const up = new Set(honestUp)
  const out: WriteOutcomes = { latencies: [], wholeLatencies: [], acked: 0, lost: 0, unavailable: 0 }
  for (const w of writes) {
    if (!w.acked) continue
    out.acked++
    let last = 0
    let missing = false
    let missingAny = false
    for (const i of honestUp) {
      const t = i < w.visibleAt.length ? w.visibleAt[i] : NaN
      if (Number.isNaN(t)) {
        missingAny = true
        if (i < w.members) missing = true
        continue
      }
      if (i < w.members && t > last) last = t
    }
    if (missingAny) {
      if (up.has(w.origin)) out.lost++
      else out.unavailable++
    }
    if (!missing) {
      out.latencies.push(last - w.at)
      if (whole(w.at)) out.wholeLatencies.push(last - w.at)
    }
  }
  return out
}

/** [start, end) of every partition in the timeline (an unhealed one ends with the run). */
function partitionIntervals (timeline: readonly TimelineEvent[], end: number): Array<[number, number]> {
  const out: Array<[number, number]> = []
  let open: number | undefined
  for (const e of timeline) {
    if (e.kind === 'partition' && open === undefined) open = e.t
    else if (e.kind === 'heal' && open !== undefined) {
      out.push([open, e.t])
      open = undefined
    }
  }
  if (open !== undefined) out.push([open, end])
  return out
}
