/**
 * The real-stack mode: the same scenario on real libp2p nodes, in real time,
 * so the model can be checked against reality. Each node is the node's own
 * `Libp2pMesh` (noise, yamux, pnet, identify, ping, gossipsub, the pull
 * protocol, the mesh core) over a real record store, on libp2p's in-memory
 * transport inside this process. The scenario's events run too, at the
 * model's moments (real-events.ts: partitions with the model's cuts, a node
 * stopped and returning, a fresh join), and the network options act on
 * every buffer (real-links.ts: latency matrix, jitter, loss, bandwidth).
 *
 * Import rule: `sim/` never imports libp2p. This file reaches it only
 * through the mesh module's own adapter (`src/mesh/libp2p`), using the
 * seams it offers for this: `transport: { kind: 'memory', latencyMs,
 * control }`, `gossip` parameters and `countRpcs`. The CLI loads this file
 * only when `--real` is given, so a model run loads no libp2p.
 *
 * Messages are counted as the model counts them: gossipsub RPCs sent (from
 * gossipsub's own metrics hook) plus two per pull (request and reply, from
 * the cores' served-page and refusal counters), summed over every life of a
 * node. Bytes are every byte on the connections (real-links.ts). Stable
 * latency and catch-up are measured as in the model, from each store's
 * change log, on the process clock.
 */
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { sleep, waitFor } from '../../src/common/index.js'
import { KvStore } from '../../src/kv/index.js'
import { Libp2pMesh, parseSwarmKey, prepareIdentity } from '../../src/mesh/libp2p/index.js'
import { RecordReplica } from '../../src/mesh/replica-store.js'
import { Prng, parseLatency } from '../../src/mesh/testing/index.js'
import { RecordStore } from '../../src/records/index.js'
import { CATCH_UP_GRACE_MS, Metrics } from '../metrics/collector.js'
import { round, summarise, type Summary } from '../metrics/stats.js'
import { writeOutcomes } from '../metrics/summary.js'
import { pickPeers, planConnections, regionDialing } from '../net/topology.js'
import { preloadImage, syncedCursor } from '../preload.js'
import type { SimOptions } from '../scenario/options.js'
import { arrivals, makeOp } from '../workload.js'
import { realEventsInWords, scheduleRealEvents } from './real-events.js'
import { RealLinks } from './real-links.js'

interface RealStackResult {
  nodes: number
  /** The mean one-way delay of the links (the model's latency spec; each buffer draws its own). */
  latencyMs: number
  converged: boolean
  lostWrites: number
  operations: { total: number, writes: number, writesAcked: number, reads: number }
  messagesPerOp: number
  messagesPerWrite: number
  messages: { gossipRpcs: number, pullMessages: number }
  /** Bytes on every connection while the load ran (its first 10 % left out, as the model's `underLoad`), over the writes issued then. */
  bytesPerWriteUnderLoad: number
  latency: Summary
  /** The first fresh join's or return's catch-up: from the node's start until it held every record and write (null: not within the run). */
  catchUpMs?: number | null
  /** The scenario's events and network settings this run carried out, and those it could not. */
  events: { run: string[], notRun: string[] }
  wallMs: number
}

interface RealNode {
  index: number
  records: RecordStore
  kv: KvStore
  mesh: Libp2pMesh
  up: boolean
}

export async function runRealStack (o: SimOptions, nodeCount: number, progress?: (line: string) => void): Promise<RealStackResult> {
  const wall0 = performance.now()
  const latencyMs = Math.round(parseLatency(o.latency, o.jitter).mean(0, 1))
  const rng = new Prng(`${o.seed}/real/${nodeCount}`)
  const hex = Buffer.from(rng.bytes(32)).toString('hex')
  const swarmKey = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${hex}\n`)!
  const tag = `sim-${process.pid}-${Math.floor(performance.now())}`
  const t0 = performance.now()
  const clock = (): number => performance.now() - t0
  const metrics = new Metrics(clock)
  const links = new RealLinks(o, rng.fork('links'), clock)
  const events = realEventsInWords(o)

  // A fresh-join scenario has one more node, started with an empty store `joinAt` seconds into the load.
  const joining = o.scenario === 'fresh-join'
  // Identities first: every node's bootstrap list names its peers' ids.
  const identities = await Promise.all(Array.from({ length: nodeCount + (joining ? 1 : 0) }, async (_, i) =>
    (await prepareIdentity(path.join(os.tmpdir(), `${tag}-never-written-${i}.key`))).identity))
  identities.forEach((id, i) => { links.add(id.peerId, i) })
  const addr = (i: number): string => `/memory/${tag}-${i}`
  // The model's topology: the membership rule's plan (sim/net/topology.ts); each pair is dialled once, by its lower index.
  const pairs = new Set<string>()
  for (const [i, j] of planConnections(rng.fork('topology'), [...Array(nodeCount).keys()], o.targetPeers,
    regionDialing(o))) pairs.add(i < j ? `${i}-${j}` : `${j}-${i}`)
  const bootstrap = (i: number): string[] => [...pairs].map(p => p.split('-').map(Number)).filter(([a]) => a === i).map(([, b]) =>
    `${addr(b)}/p2p/${identities[b].peerId}`)

  // The preload as in the model (sim/preload.ts): the same records, an hour old on this process's clock, in sync.
  const preload = o.preload > 0 ? await preloadImage(o.preload, o.recordShape, Math.floor(Date.now() / 1000) * 1000, o.valueBytes) : undefined
  const preloaded = preload === undefined ? 0 : o.preloadNodes === 0 ? nodeCount : Math.min(o.preloadNodes, nodeCount)

  const nodes: RealNode[] = []
  const peersOf: string[][] = []
  // Counters of the lives of nodes that were stopped (a restarted node has a new mesh, its counters from zero).
  let rpcsBefore = 0
  let pullsBefore = 0
  const pullsOf = (mesh: Libp2pMesh): number => mesh.status().peers.reduce((a, p) => a + p.pagesServed + p.busyRefusals, 0)
  const newMesh = (i: number, records: RecordStore): Libp2pMesh => new Libp2pMesh({ records }, {
    identity: identities[i],
    swarmKey,
    listen: [addr(i)],
    bootstrap: peersOf[i],
    transport: { kind: 'memory', latencyMs, link: o.link, ...(o.link === 'serial' ? {} : { control: links }) },
    countRpcs: true,
    // The scenario's topology is the one under test: no connections beyond it.
    targetPeers: 0,
    gossip: {
      D: o.D, Dlo: o.Dlo, Dhi: o.Dhi, Dout: o.Dout, Dlazy: o.Dlazy, heartbeatInterval: o.heartbeat, floodPublish: o.floodPublish,
        idontwantMinDataSize: o.idontwantMin
    },
    options: { flushMs: o.flushMs, flushBytes: o.flushBytes, antiEntropyMs: o.antiEntropy, requestTimeoutMs: o.requestTimeout }
  })
  const makeNode = (i: number, peers: string[], image: Buffer | undefined): RealNode => {
    const kv = new KvStore({ path: ':memory:', cacheKiB: 1024, backgroundCheckpoint: false, ...(image !== undefined ? { image } : {}) })
    const records = new RecordStore(kv, { nodeId: identities[i].peerId })
    peersOf[i] = peers
    metrics.addNode(i)
    records.onChanges((changes) => { metrics.committed(i, changes.map(c => c.key)) })
    return { index: i, records, kv, mesh: newMesh(i, records), up: true }
  }
  let scheduled: { cancel: () => void } | undefined
  try {
    for (let i = 0; i < nodeCount; i++) nodes.push(makeNode(i, bootstrap(i), i < preloaded ? preload?.image : undefined))
    // Preloaded peers have synced before: the cursor a finished sync leaves, each for the other (log ids as the mesh reads them).
    for (const p of pairs) {
      const [a, b] = p.split('-').map(Number)
      if (a >= preloaded || b >= preloaded) continue
      for (const [n, q] of [[a, b], [b, a]]) {
        const [key, value] = syncedCursor({ peerId: identities[q].peerId, replica: new RecordReplica(nodes[q].records) })
        nodes[n].records.local.writeSync(tx => { tx.put(key, value) })
      }
    }
    await Promise.all(nodes.map(async n => { await n.mesh.start() }))
    // The model's nodes have their connections after a few round trips; real ones may need retries (libp2p
    // refuses inbound upgrades past 10 pending). Wait for the whole topology, then the warm-up, before any load.
    const want = nodes.map(n => [...pairs].filter(p => p.split('-').map(Number).includes(n.index)).length)
    const connected = (n: RealNode): number => n.mesh.status().peers.filter(p => p.connected).length
    await waitFor(() => nodes.every(n => connected(n) >= want[n.index]), { timeoutMs: 120_000, intervalMs: 250, what: `${nodeCount} real nodes to connect to their ${pairs.size} links` })
    const connectedAt = clock()
    progress?.(`real stack: ${nodeCount} libp2p nodes connected in ${(connectedAt / 1000).toFixed(1)} s (memory transport, ${o.latency} ms ${o.link} links)`)
    await sleep(connectedAt + o.warmup * 1000 - clock())

    // The load, on the process clock: the model's Poisson arrivals and operation mix.
    const wl = rng.fork('workload')
    const spec = { opsPerSec: o.rate, writeFraction: o.writes, newRecordFraction: o.newRecords, valueBytes: o.valueBytes, shape: o.recordShape }
    const loadStart = clock()
    const loadEnd = loadStart + o.duration * 1000
    // Rates under load as the model counts them: the load's time, past its first 10 %.
    metrics.window = links.window = [loadStart + (loadEnd - loadStart) / 10, loadEnd]
    const known: string[] = o.preloadNodes === 0 && preload !== undefined ? [...preload.cids] : []
    scheduled = scheduleRealEvents(o, nodeCount, loadStart, clock, {
      ids: () => nodes.map(n => n.index),
      partition: (groups) => {
        links.partition(groups)
        progress?.(`real stack: partition ${groups[0].length} | ${groups[1].length}`)
      },
      heal: () => { links.heal(); progress?.('real stack: healed') },
      stop: async (i) => {
        const n = nodes[i]
        n.up = false
        rpcsBefore += n.mesh.rpcCounts().rpcs
        pullsBefore += pullsOf(n.mesh)
        await n.mesh.stop()
        progress?.(`real stack: node ${i} stopped`)
      },
      start: async (i) => {
        const n = nodes[i]
        n.mesh = newMesh(i, n.records)
        metrics.catchUpStarted(i, 'return')
        await n.mesh.start()
        n.up = true
        progress?.(`real stack: node ${i} back`)
      },
      join: async () => {
        const j = nodeCount
        const peers = pickPeers(rng.fork('join'), j, [...Array(nodeCount).keys()], o.targetPeers, [], regionDialing(o)).map(b =>
          `${addr(b)}/p2p/${identities[b].peerId}`)
        const joiner = makeNode(j, peers, undefined)
        nodes.push(joiner) // the load picks it too, as the model's does, and it is stopped with the others
        metrics.widenTracksTo(j)
        const held = preload !== undefined ? nodes[0].records.countRecords() : 0
        metrics.catchUpStarted(j, 'fresh-join', held > 0 ? { target: held, count: () => joiner.records.countRecords() } : undefined)
        await joiner.mesh.start()
        progress?.(`real stack: node ${j} joined (${held} records to catch up on)`)
      },
      fail: (err) => { progress?.(`real stack: an event failed: ${err instanceof Error ? err.message : String(err)}`) }
    })
    const pending = new Set<Promise<unknown>>()
    let writeIds = 0
    for (const at of arrivals(wl.fork('arrivals'), o.rate, o.duration * 1000)) {
      await sleep(loadStart + at - clock())
      const node = wl.pick(nodes.filter(n => n.up))
      const op = makeOp(wl, spec, clock(), () => ++writeIds, known)
      if (op.kind === 'read') {
        metrics.reads++
        if (known.length > 0) node.records.getFlat(wl.pick(known))
        continue
      }
      const w = metrics.writeIssued(op.id, node.index)
      const p = node.records.mergeFlat(op.addr ?? op.newCid!, op.fields).then((res) => {
        metrics.writeAcked(w, `file:${res.rid}/log/${op.id}`)
        if (op.newCid !== undefined) known.push(op.newCid)
      }, () => { metrics.writeErrors++ })
      pending.add(p)
      void p.finally(() => { pending.delete(p) })
    }
    await Promise.all(pending)
    progress?.(`real stack: load done (${metrics.writes.length} writes), quiet tail of ${o.tail} s`)
    await sleep(loadStart + (o.duration + o.tail) * 1000 - clock())
    // As the model's run does: a catch-up still under way at the tail's end runs on, up to CATCH_UP_GRACE_MS more.
    const tailEnd = clock()
    const catching = (): boolean => metrics.catchUps.some(c => c.doneAt === undefined && nodes[c.node]?.up === true)
    while (catching() && clock() - tailEnd < CATCH_UP_GRACE_MS) await sleep(250)
    if (clock() - tailEnd > 1000) progress?.(`real stack: ran ${((clock() - tailEnd) / 1000).toFixed(0)} s past the tail for a catch-up${catching() ? ' (still under way at the limit)' : ''}`)

    const up = nodes.filter(n => n.up)
    const digests = new Set(up.map(n => n.mesh.digest().digest))
    const out = writeOutcomes(metrics.writes, up.map(n => n.index))
    const c = metrics.catchUps[0]
    const rpcs = rpcsBefore + up.reduce((a, n) => a + n.mesh.rpcCounts().rpcs, 0)
    const pulls = pullsBefore + up.reduce((a, n) => a + pullsOf(n.mesh), 0)
    const ops = metrics.writes.length + metrics.reads
    const [from, to] = metrics.window
    const writesUnderLoad = metrics.writes.filter(w => w.at >= from && w.at < to).length
    return {
      nodes: nodeCount,
      latencyMs,
      converged: digests.size === 1,
      lostWrites: out.lost + out.unavailable,
      operations: { total: ops, writes: metrics.writes.length, writesAcked: out.acked, reads: metrics.reads },
      messagesPerOp: round((rpcs + 2 * pulls) / Math.max(1, ops), 2),
      messagesPerWrite: round((rpcs + 2 * pulls) / Math.max(1, metrics.writes.length), 2),
      messages: { gossipRpcs: rpcs, pullMessages: 2 * pulls },
      bytesPerWriteUnderLoad: round(links.windowBytes / Math.max(1, writesUnderLoad), 0),
      latency: summarise(out.latencies, 1),
      ...(c !== undefined ? { catchUpMs: c.doneAt === undefined ? null : round(c.doneAt - c.startAt, 1) } : {}),
      events,
      wallMs: performance.now() - wall0
    }
  } finally {
    scheduled?.cancel()
    await Promise.allSettled(nodes.map(async n => { await n.mesh.stop() }))
    for (const n of nodes) n.kv.close()
  }
}
