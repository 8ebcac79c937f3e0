/**
 * One simulation run: build the world for a node count, start the nodes on
 * their topology, schedule the client load, the partitions and the
 * scenario's own events, run the virtual clock to the end of the tail, then
 * check convergence and sum up. The summary holds only figures that are a
 * function of the seed and options; wall time and memory are returned
 * beside it.
 */
import { scaledCosts } from './cpu.js'
import { Prng } from '../src/mesh/testing/index.js'
import { CATCH_UP_GRACE_MS } from './metrics/collector.js'
import { summariseRun, type RunSummary } from './metrics/summary.js'
import type { SimOptions } from './scenario/options.js'
import type { CheckValue, Scenario, ScenarioContext } from './scenario/scenario.js'
import { pickPeers, planConnections, regionDialing } from './net/topology.js'
import { preloadImage, syncedCursor } from './preload.js'
import { cutGroups, partitionTimes } from './scenario/partitions.js'
import { arrivals, makeOp, shapedRecord, type WorkloadSpec } from './workload.js'
import { World } from './world.js'

export interface RunCost {
  wallMs: number
  /** Peak resident set size of the process during the run (MiB). */
  peakRssMiB: number
  heapUsedMiB: number
}

interface RunResult {
  summary: RunSummary
  cost: RunCost
  world: World
}

export type Progress = (line: string) => void

export function worldOptions (o: SimOptions): ConstructorParameters<typeof World>[0] {
  return {
    seed: `${o.seed}`,
    latency: o.latency,
    link: o.link,
    jitterMs: o.jitter,
    loss: o.loss,
    lossBetweenRegions: o.lossBetweenRegions,
    lossMode: o.lossMode,
    uplinkBps: o.bandwidth * 1_000_000,
    downlinkBps: o.downlink * 1_000_000,
    gossip: {
      D: o.D, Dlo: o.Dlo, Dhi: o.Dhi, Dout: o.Dout, Dlazy: o.Dlazy, heartbeatMs: o.heartbeat, floodPublish: o.floodPublish, idontwantMinDataSize: o.idontwantMin
    },
    mesh: { flushMs: o.flushMs, flushBytes: o.flushBytes, antiEntropyMs: o.antiEntropy, requestTimeoutMs: o.requestTimeout },
    cpu: scaledCosts({ messageMs: o.cpuMessageMs, kibMs: o.cpuKibMs, entryMs: o.cpuEntryMs }, o.cpuFactor),
    cpuShared: o.cpuShared
  }
}

export async function runOnce (scenario: Scenario, o: SimOptions, nodeCount: number, progress?: Progress): Promise<RunResult> {
  const wall0 = performance.now()
  let peakRss = process.memoryUsage().rss
  const world = new World({ ...worldOptions(o), seed: `${o.seed}/${scenario.name}/${nodeCount}` })
  const rng = world.rng.fork('run')
  const preload = o.preload > 0 ? await preloadImage(o.preload, o.recordShape, world.epochMs, o.valueBytes) : undefined
  const preloaded = preload === undefined ? 0 : o.preloadNodes === 0 ? nodeCount : Math.min(o.preloadNodes, nodeCount)
  for (let i = 0; i < nodeCount; i++) world.addNode(i < preloaded ? preload?.image : undefined)

  const loadStart = o.warmup * 1000
  const loadEnd = loadStart + o.duration * 1000
  const end = loadEnd + o.tail * 1000
  // Rates under load: the load's time, past its first 10 % (the mesh settling into it).
  world.metrics.window = [loadStart + (loadEnd - loadStart) / 10, loadEnd]
  const bad = new Set<number>()
  const checks: Array<[string, () => CheckValue]> = []
  const forbidden = new Set<string>()
  const topo = rng.fork('topology')
  const regions = regionDialing(o)
  /** A joining node dials `targetPeers` nodes among `among` (at random, or by region); the network keeps those links up. */
  const bootstrap = (n: number, among: readonly number[]): void => {
    for (const p of pickPeers(topo, n, among.filter(m => m !== n), o.targetPeers, [], regions)) world.net.want(n, p)
  }
  const ctx: ScenarioContext = {
    world,
    opts: o,
    honest: nodeCount,
    loadStart,
    loadEnd,
    at: (t, fn) => { world.sched.at(t, fn) },
    markBad: (i) => { bad.add(i); world.metrics.bad.add(i) },
    forbid: (k) => { forbidden.add(k) },
    check: (name, fn) => { checks.push([name, fn]) },
    join: () => {
      const n = world.addNode()
      world.metrics.widenTracksTo(n.index)
      bootstrap(n.index, world.nodes.filter(m => m.up && m.index !== n.index).map(m => m.index))
      n.start()
      return n.index
    }
  }
  scenario.setup?.(ctx)

  // The node's membership rule: each dials random members (or by region) until it holds targetPeers connections.
  const plan = planConnections(topo, world.nodes.map(n => n.index), o.targetPeers, regions)
  for (const [from, to] of plan) world.net.want(from, to)
  // Preloaded peers have synced before: each holds the cursor a finished sync leaves for the other.
  for (const [a, b] of plan) {
    if (a >= preloaded || b >= preloaded) continue
    for (const [n, p] of [[a, b], [b, a]]) {
      const [key, value] = syncedCursor(world.node(p))
      world.node(n).records.local.writeSync(tx => { tx.put(key, value) })
    }
  }
  for (const n of world.nodes) n.start()

  schedulePartitions(world, rng.fork('partitions'), o, loadStart, loadEnd, bad)
  scheduleLoad(world, rng.fork('workload'), o, loadStart, bad, preloaded > 0 ? preload?.cids ?? [] : [])
  const scan = scheduleScan(world, o, loadStart)

  // Progress on stderr, at most every 2 s of wall time (virtual ticks of 1 s drive it; output is not part of the run).
  let lastLine = performance.now()
  const tick = (): void => {
    const now = performance.now()
    const rss = process.memoryUsage().rss
    if (rss > peakRss) peakRss = rss
    if (progress !== undefined && now - lastLine > 2000) {
      lastLine = now
      progress(`${scenario.name} n=${nodeCount}: virtual ${(world.sched.now / 1000).toFixed(0)}/${(end / 1000).toFixed(0)} s, ` +
        `${world.metrics.writes.length} writes, ${world.metrics.totalMessages} messages, wall ${((now - wall0) / 1000).toFixed(0)} s, rss ${(rss / 1048576).toFixed(0)} MiB`)
    }
    if (world.sched.now + 1000 <= end) world.sched.after(1000, tick)
  }
  world.sched.after(1000, tick)

  await world.runUntil(end)
  // A catch-up still under way at the tail's end (a join of a large preload) runs on, up to CATCH_UP_GRACE_MS more, until it is done and the
  // honest nodes agree: its time is the figure the run is for. (A run whose catch-ups finished within the tail ends there, as it always did.)
  let until = end
  const catching = (): boolean => world.metrics.catchUps.some(c => c.doneAt === undefined && world.node(c.node).up)
  const agreeing = (): boolean => new Set(world.nodes.filter(n => n.up && !bad.has(n.index)).map(n => n.replica.digest().digest)).size <= 1
  const pending = (): boolean => catching() || !agreeing()
  if (catching()) {
    while (pending() && until < end + CATCH_UP_GRACE_MS) {
      until += 1000
      await world.runUntil(until)
    }
  }
  if (until > end) progress?.(`${scenario.name} n=${nodeCount}: ran ${((until - end) / 1000).toFixed(0)} s past the tail for a catch-up${pending() ? ' (still under way at the limit)' : ''}`)
  const summary = summariseRun(world, { nodeCount, bad, forbidden, loadMs: o.duration * 1000, end: until })
  for (const [name, fn] of checks) summary.checks[name] = fn()
  if (o.scan > 0) summary.checks.scan = scan()
  const mem = process.memoryUsage()
  peakRss = Math.max(peakRss, mem.rss)
  for (const n of world.nodes) n.stop()
  for (const n of world.nodes) n.kv.close()
  return {
    summary,
    cost: { wallMs: performance.now() - wall0, peakRssMiB: Math.round(peakRss / 1048576), heapUsedMiB: Math.round(mem.heapUsed / 1048576) },
    world
  }
}

/** Partitions toggling every `partitionEvery` seconds during the load, healed when the load ends. */
function schedulePartitions (world: World, rng: Prng, o: SimOptions, loadStart: number, loadEnd: number, bad: ReadonlySet<number>): void {
  for (const { at, cut } of partitionTimes(o, loadStart, loadEnd)) {
    world.sched.at(at, () => {
      if (!cut) {
        world.net.heal()
        world.metrics.event({ kind: 'heal' })
        return
      }
      const groups = cutGroups(rng, world.nodes.map(n => n.index), o.partitionKind, bad)
      world.net.partition(groups)
      world.metrics.event({ kind: 'partition', nodes: groups[0], detail: `${groups[0].length} | ${groups[1].length}` })
    })
  }
}

/** Write ids and record indices of a scan, apart from the load's. */
const SCAN_ID_BASE = 1_000_000_000
const SCAN_RECORD_OFFSET = 200_000_000

/**
 * `--scan N`: node 0 ingests N new library records from the start of the
 * load, one after the other, each as soon as the previous one is
 * acknowledged and its CPU is free (a watcher scanning a library at its
 * full rate, beside the load). Returns the check for the report.
 */
function scheduleScan (world: World, o: SimOptions, loadStart: number): () => CheckValue {
  let issued = 0
  let acked = 0
  let doneAt: number | undefined
  const node = world.node(0)
  const unused = world.rng.fork('scan')
  const next = (): void => {
    if (issued >= o.scan) return
    if (!node.up) { world.sched.after(100, next); return }
    const i = ++issued
    const id = SCAN_ID_BASE + i
    const r = shapedRecord('library', SCAN_RECORD_OFFSET + i, unused, o.valueBytes)
    const w = world.metrics.writeIssued(id, node.index)
    world.clientWrite(async () => await node.records.mergeFlat(r.cid, { ...r.fields, [`log/${id}`]: 'true' })).then((res) => {
      world.metrics.writeAcked(w, `file:${res.rid}/log/${id}`)
      acked++
      if (acked === o.scan) doneAt = node.cpu.doneAt()
      world.sched.at(node.cpu.doneAt(), next)
    }, (err: unknown) => {
      world.metrics.writeErrors++
      if ((err as { code?: unknown }).code !== 'clock_out_of_bound') world.fail(err, 'scan write on node 0')
      world.sched.after(100, next)
    })
  }
  if (o.scan > 0) world.sched.at(loadStart, next)
  return () => ({
    records: o.scan,
    acknowledged: acked,
    /** From the load's start until node 0 had written them all (-1: not within the run). */
    durationMs: doneAt === undefined ? -1 : Math.round(doneAt - loadStart),
    recordsPerSecond: doneAt === undefined ? 0 : Math.round(o.scan / Math.max(0.001, (doneAt - loadStart) / 1000))
  })
}

/** Schedules the client operations on random up honest nodes. */
function scheduleLoad (world: World, rng: Prng, o: SimOptions, loadStart: number, bad: ReadonlySet<number>, preloaded: readonly string[]): void {
  const spec: WorkloadSpec = { opsPerSec: o.rate, writeFraction: o.writes, newRecordFraction: o.newRecords, valueBytes: o.valueBytes, shape: o.recordShape }
  // Updates pick among the preloaded records too (every node holds them unless --preload-nodes says otherwise).
  const known: string[] = o.preloadNodes === 0 ? [...preloaded] : []
  let writeIds = 0
  for (const t of arrivals(rng.fork('arrivals'), o.rate, o.duration * 1000)) {
    world.sched.at(loadStart + t, () => {
      const up = world.nodes.filter(n => n.up && !bad.has(n.index))
      if (up.length === 0) return
      const node = rng.pick(up)
      const op = makeOp(rng, spec, world.sched.now, () => ++writeIds, known)
      if (op.kind === 'read') {
        world.metrics.reads++
        if (known.length > 0) node.records.getFlat(rng.pick(known))
        return
      }
      const w = world.metrics.writeIssued(op.id, node.index)
      const addr = op.addr ?? op.newCid!
      world.clientWrite(async () => await node.records.mergeFlat(addr, op.fields)).then((res) => {
        world.metrics.writeAcked(w, `file:${res.rid}/log/${op.id}`)
        if (op.newCid !== undefined) known.push(op.newCid)
      }, (err: unknown) => {
        world.metrics.writeErrors++
        // A node whose clock is out of bound refuses writes (503 retryable in the API): counted, not a failure.
        if ((err as { code?: unknown }).code === 'clock_out_of_bound') {
          world.metrics.refusedByNode.set(node.index, (world.metrics.refusedByNode.get(node.index) ?? 0) + 1)
          return
        }
        world.fail(err, `client write on node ${node.index}`)
      })
    })
  }
}
