/**
 * One whole node (`startNode` through test/helpers/mesh-nodes.ts: store,
 * search, mesh over libp2p TCP on 127.0.0.1, HTTP API; watcher off) in a
 * child process of bench:join, so that every node of a phase has its own
 * event loop, as on separate machines (they share the machine's cores).
 *
 * Started with a HostSpec (JSON) as its argument, it prints one JSON line
 * when ready, then answers JSON-line commands on stdin (`{id, cmd, args}`)
 * with `{id, result}` or `{id, error}` lines on stdout. Its log goes to
 * stderr, each line prefixed with its label. bench/lib/join-proc.ts is the
 * parent's side.
 *
 * Times crossing processes are wall-clock milliseconds with fractions
 * (`performance.timeOrigin + performance.now()`), comparable between the
 * processes of one machine.
 */
import '../../src/mesh/libp2p/polyfill.js'
import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { createLogger, silentLogger, waitFor, type LogLevel } from '../../src/common/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { openNodeStore, type RecordStore } from '../../src/records/index.js'
import { startMeshNode } from '../../test/helpers/mesh-nodes.js'
import { DATA_VERSION, entriesOf, storeFileOf } from './join-data.js'
import { rawRange } from './raw-range.js'
import { syntheticRecord } from './synthetic.js'

export interface HostSpec {
  /** Prefix of its log lines on stderr. */
  label: string
  dir: string
  swarmKey: string
  bootstrap?: string[]
  antiEntropyMs?: number
  streamRetention?: number
  trimEvery?: number
  /** Connections the mesh keeps (`--target-peers`; 0: its bootstrap list only). */
  targetPeers?: number
  bulkJoin?: boolean
  logLevel?: LogLevel
  /** Fill the store with this many synthetic records in bulk before the first start (peer A), unless a marker says it was done. */
  build?: number
  /** Report, in its ready line, when its digest first equals this one (polled every 5 ms from the start). */
  waitDigest?: string
  /** Wait for search's index to be complete before saying ready (default true). */
  waitSearch?: boolean
}

export interface HostReady {
  peerId: string
  addr: string
  url: string
  digest: string
  keys: number
  records: number
  head: string | null
  /** Wall-clock ms: startNode called, and returned. */
  startAt: number
  startedAt: number
  /** Wall-clock ms: a peer first connected, and the digest first equal to `waitDigest` (null: not within the timeout). */
  connectedAt: number | null
  digestEqualAt: number | null
  searchIdleAt: number | null
}

export interface PeerFigures {
  peerId: string
  connected: boolean
  addrs: string[]
  cursor: string | null
  behind: boolean
  resyncing: boolean
  reconciling: boolean
  lagMs: number
  bytesIn: number
  bytesServed: number
  pagesIn: number
  pagesServed: number
  resyncs: number
  reconciles: number
  reconcilesEqual: number
  reconKeysIn: number
  reconKeysOut: number
  busyRefusals: number
  pullFailures: number
  framesIn: number
  frameBytesIn: number
}

export interface HostStatus { records: number, digest: string, keys: number, head: string | null, peers: PeerFigures[], bytesOut: number }

export const wallNow = (): number => performance.timeOrigin + performance.now()

/** Writes of new 40-field records (synthetic records from `first` on) at a steady rate; with `mark`, each with a field `bench/w` holding its index. */
class Writer {
  private timer: NodeJS.Timeout | undefined
  private issued = 0
  private inFlight = 0
  written = 0
  failed = 0
  maxInFlight = 0
  readonly issuedAt: Array<[number, number]> = []
  private t0 = 0

  constructor (private readonly records: RecordStore, private readonly o: { rate: number, first: number, mark?: boolean, maxInFlight?: number }) {}

  start (): void {
    this.t0 = performance.now()
    this.startedAt = wallNow()
    this.timer = setInterval(() => { this.tick() }, 10)
  }

  private tick (): void {
    const due = Math.floor((performance.now() - this.t0) * this.o.rate / 1000) - this.issued
    for (let i = 0; i < due && this.inFlight < (this.o.maxInFlight ?? 2_000); i++) this.issue()
  }

  private issue (): void {
    const seq = this.issued++
    const r = syntheticRecord(this.o.first + seq)
    const fields = { ...r.fields }
    if (this.o.mark === true) {
      fields['bench/w'] = String(this.o.first + seq)
      this.issuedAt.push([this.o.first + seq, wallNow()])
    }
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    this.records.mergeFlat(r.cid, fields).then(() => { this.written++ }, () => { this.failed++ }).finally(() => { this.inFlight-- })
  }

  /** Wall-clock ms of its start and stop. */
  startedAt = 0
  stoppedAt = 0

  async stop (): Promise<{ issued: number, written: number, failed: number, seconds: number, maxInFlight: number, startedAt: number, stoppedAt: number }> {
    clearInterval(this.timer)
    this.stoppedAt = wallNow()
    const seconds = (performance.now() - this.t0) / 1000
    await waitFor(() => this.inFlight === 0, { timeoutMs: 120_000, what: 'the writer\'s writes to commit', intervalMs: 20 })
    return { issued: this.issued, written: this.written, failed: this.failed, seconds, maxInFlight: this.maxInFlight, startedAt: this.startedAt,
      stoppedAt: this.stoppedAt }
  }
}

function peerFigures (n: RunningNode): PeerFigures[] {
  return n.mesh.status().peers.map(p => ({
    peerId: p.peerId,
    connected: p.connected,
    addrs: p.addrs,
    cursor: p.cursor,
    behind: p.behind,
    resyncing: p.resyncing,
    reconciling: (p as { reconciling?: boolean }).reconciling === true,
    lagMs: p.lagMs,
    bytesIn: p.bytesIn,
    bytesServed: p.bytesServed,
    pagesIn: p.pagesIn,
    pagesServed: p.pagesServed,
    resyncs: p.resyncs,
    reconciles: p.reconciles,
    reconcilesEqual: p.reconcilesEqual,
    reconKeysIn: p.reconKeysIn,
    reconKeysOut: p.reconKeysOut,
    busyRefusals: p.busyRefusals,
    pullFailures: p.pullFailures,
    framesIn: p.framesIn,
    frameBytesIn: p.frameBytesIn
  }))
}

/** The first start makes the identity and the store; then the records go in with the node stopped, 2,000 roots per transaction. */
async function build (spec: HostSpec, n: number): Promise<void> {
  const marker = path.join(spec.dir, `ready-${n}-v${DATA_VERSION}`)
  if (fs.existsSync(marker)) return
  fs.rmSync(spec.dir, { recursive: true, force: true })
  const first = await startMeshNode({ dir: spec.dir, swarmKey: spec.swarmKey, antiEntropyMs: 600_000 })
  const peerId = first.mesh.peerId
  await first.stop()
  const s = openNodeStore({ path: storeFileOf(spec.dir), nodeId: peerId })
  const baseMs = Date.now() - n - 120_000
  const t0 = performance.now()
  for (let from = 0; from < n; from += 2000) {
    await s.records.applyBatch(entriesOf(from, Math.min(n, from + 2000), baseMs), { rootsPerTransaction: 2000, entriesPerTransaction: Infinity })
  }
  s.close()
  process.stderr.write(`${spec.label}: ${n} records written in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
  fs.writeFileSync(marker, '')
}

async function hostMain (spec: HostSpec): Promise<void> {
  if (spec.build !== undefined) await build(spec, spec.build)
  const logger = spec.logLevel === 'silent' ? silentLogger : createLogger({ level: spec.logLevel ?? 'warn',
    write: l => { process.stderr.write(`${spec.label}: ${l}\n`) } })
  const startAt = wallNow()
  const node = await startMeshNode({
    dir: spec.dir,
    swarmKey: spec.swarmKey,
    bootstrap: spec.bootstrap,
    antiEntropyMs: spec.antiEntropyMs ?? 600_000,
    streamRetention: spec.streamRetention,
    trimEvery: spec.trimEvery,
    bulkJoin: spec.bulkJoin,
    logger,
    extraFlags: spec.targetPeers === undefined ? [] : ['--target-peers', String(spec.targetPeers)]
  })
  const startedAt = wallNow()
  let connectedAt: number | null = null
  let digestEqualAt: number | null = null
  if (spec.waitDigest !== undefined) {
    await waitFor(() => {
      if (connectedAt === null && node.mesh.status().peers.some(p => p.connected)) connectedAt = wallNow()
      if (node.mesh.digest().digest === spec.waitDigest) digestEqualAt = wallNow()
      return digestEqualAt !== null
    }, { timeoutMs: 600_000, what: 'the digest to equal the peer\'s',
      intervalMs: 5 }).catch((err: unknown) => { process.stderr.write(`${spec.label}: ${String(err)}\n`) })
  }
  let searchIdleAt: number | null = null
  if (spec.waitSearch !== false) {
    await node.search.whenIdle()
    searchIdleAt = wallNow()
  }
  const d = node.mesh.digest()
  const ready: HostReady = {
    peerId: node.mesh.peerId,
    addr: node.mesh.status().self.addrs[0],
    url: node.url,
    digest: d.digest,
    keys: d.keys,
    records: node.store.records.countRecords(),
    head: node.store.kv.streamHead('meta:events') ?? null,
    startAt,
    startedAt,
    connectedAt,
    digestEqualAt,
    searchIdleAt
  }
  process.stdout.write(JSON.stringify({ ready }) + '\n')

  let writer: Writer | undefined
  let loop: { h: ReturnType<typeof monitorEventLoopDelay>, resolutionMs: number } | undefined
  let seen: Array<[number, number]> = []
  let cpuMark = process.cpuUsage()
  node.store.records.onChanges((changes) => {
    const at = wallNow()
    for (const c of changes) if (c.value !== null && c.key.endsWith('/bench/w')) seen.push([Number(c.value), at])
  })
  const commands: Record<string, (a: any) => unknown> = {
    status: (): HostStatus => {
      const dd = node.mesh.digest()
      return { records: node.store.records.countRecords(), digest: dd.digest, keys: dd.keys, head: node.store.kv.streamHead('meta:events') ?? null,
        peers: peerFigures(node), bytesOut: node.mesh.status().self.bytesOut }
    },
    digest: () => node.mesh.digest(),
    /** The replicated range's raw size (raw-range.ts). */
    raw: () => rawRange(node.store.kv),
    /** Figure 2's writes: an edit of the title and the bitrate of each record named (its index); the raw keys and values they changed. */
    edit: async (a: { indexes: number[], tag: string }) => {
      const changed = new Map<string, number>()
      for (const i of a.indexes) {
        const r = syntheticRecord(i)
        const fields = { title: `${r.fields.title} (${a.tag})`, 'fileinfo/bitrate': String(1_000_000 + i) }
        const { rid } = await node.store.records.mergeFlat(r.cid, fields)
        for (const [f, v] of Object.entries(fields)) changed.set(`file:${rid}/${f}`, Buffer.byteLength(`file:${rid}/${f}`) + Buffer.byteLength(v))
      }
      let bytes = 0
      for (const b of changed.values()) bytes += b
      return { writes: a.indexes.length, changedKeys: changed.size, rawBytes: bytes }
    },
    writer: (a: { rate: number, first: number, mark?: boolean }) => {
      if (writer !== undefined) throw new Error('a writer runs already')
      writer = new Writer(node.store.records, a)
      writer.start()
      return true
    },
    writerStop: async () => {
      const w = writer
      writer = undefined
      if (w === undefined) return null
      return { ...await w.stop(), issuedAt: w.issuedAt }
    },
    /** Records' `bench/w` marks committed here since the last call (own writes and replicated ones), and the process's CPU meanwhile. */
    seen: () => {
      const out = seen
      seen = []
      const cpu = process.cpuUsage(cpuMark)
      cpuMark = process.cpuUsage()
      return { seen: out, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }
    },
    /** As fast as it goes: `count` new records, `concurrency` writes in flight. */
    burst: async (a: { first: number, count: number, concurrency: number }) => {
      let next = 0
      const t0 = performance.now()
      await Promise.all(Array.from({ length: a.concurrency }, async () => {
        while (next < a.count) {
          const r = syntheticRecord(a.first + next++)
          await node.store.records.mergeFlat(r.cid, r.fields)
        }
      }))
      const seconds = (performance.now() - t0) / 1000
      return { records: a.count, seconds, recordsPerSecond: a.count / seconds }
    },
    loopStart: (a: { resolutionMs?: number }) => {
      loop?.h.disable()
      loop = { h: monitorEventLoopDelay({ resolution: a.resolutionMs ?? 5 }), resolutionMs: a.resolutionMs ?? 5 }
      loop.h.enable()
      return true
    },
    /** The loop's delays since loopStart: the histogram holds each timer interval, so the resolution is taken off (a stall is what exceeds it). */
    loopStop: () => {
      const l = loop
      loop = undefined
      if (l === undefined) return null
      l.h.disable()
      const stall = (ns: number): number => Math.max(0, ns / 1e6 - l.resolutionMs)
      return { maxMs: stall(l.h.max), p99Ms: stall(l.h.percentile(99)), meanMs: stall(l.h.mean), samples: l.h.count }
    },
    whenSearchIdle: async () => { await node.search.whenIdle(); return true }
  }
  const rl = readline.createInterface({ input: process.stdin })
  for await (const line of rl) {
    if (line.trim() === '') continue
    const { id, cmd, args } = JSON.parse(line) as { id: number, cmd: string, args?: unknown }
    if (cmd === 'stop') {
      await writer?.stop()
      await node.stop()
      process.stdout.write(JSON.stringify({ id, result: true }) + '\n')
      break
    }
    const fn = commands[cmd]
    void (async () => {
      try {
        if (fn === undefined) throw new Error(`unknown command ${cmd}`)
        process.stdout.write(JSON.stringify({ id, result: await fn(args ?? {}) }) + '\n')
      } catch (err) {
        process.stdout.write(JSON.stringify({ id, error: String(err) }) + '\n')
      }
    })()
  }
  process.exit(0)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await hostMain(JSON.parse(process.argv[2]) as HostSpec)
