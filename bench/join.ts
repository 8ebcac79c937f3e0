/**
 * Join benchmark (issue 42): how a node joins a mesh and reconciles with
 * it, real nodes (`startNode`: store, search, mesh over libp2p TCP on
 * 127.0.0.1, HTTP API; watcher off), every figure beside a baseline
 * measured in the same run. One command runs every phase, in this order
 * (JOIN_ONLY=fresh,equal,... runs some of them):
 *
 * - fresh (figure 1): a fresh node B joins peer A holding N records of ~40
 *   fields (bench/lib/synthetic.ts). A runs in a child process
 *   (bench/lib/join-host.ts), so the two nodes do not share one event loop,
 *   as on two machines (they share the machine's two cores). Its store is
 *   filled before it starts, in bulk: the records as a peer's entries
 *   through `records.applyBatch` in transactions of 2,000 roots, no search
 *   attached; then the node starts and search builds its index; A reports
 *   ready once that is done, so no work of A's own runs during the join.
 *   With BENCH_KEEP=1 A's folder is kept under .bench-tmp/join-peer-N and
 *   reused (no phase writes to A's store: the phases that write use copies).
 *   B starts with an empty store, bootstrapping to A; the clock runs from
 *   its start until (1) B has pulled A's head (no resync under way, the
 *   cursor at A's head) and its digest equals A's, and (2) search answers
 *   from a complete index (search.whenIdle settled) and a query for the
 *   last record by an exact field and by a title word finds it. `seconds`
 *   is the later of the two. B's log (info) goes to stderr with a `B:`
 *   prefix. Bytes: the pull replies B took (as its mesh core counts them)
 *   against the raw size of the range (the `file:` rows' keys and values)
 *   and against it with the `ver:` rows. Baselines: the bare-kv ceiling (the
 *   same `file:` rows, root ids minted as A's were, in key order, into a bare
 *   SQLite table, 32 rows per INSERT, 10,000 rows per transaction, WAL,
 *   synchronous NORMAL; before and after the join, the mean) and a second
 *   fresh node joining with the bulk path off (`bulkJoin: false`: every page
 *   through the write path, search staging each record).
 * - equal (figure 4), diff (figure 3), missed (figure 2): two copies of A's
 *   stopped store meeting through a byte-counting relay: bench/lib/join-meet.ts.
 * - digest: `GET /api/mesh/digest` latency and the event loop's largest
 *   stall under writes: bench/lib/join-digest.ts.
 * - busy: a fresh node joins a copy of A that keeps writing: bench/lib/join-busy.ts.
 * - sustained (figure 5): 3 nodes writing, the offered rate stepped up:
 *   bench/lib/join-sustained.ts.
 *
 * Env: JOIN_RECORDS (169000; smaller for a quick run), JOIN_ONLY (phases,
 * comma-separated; all by default), JOIN_TIMEOUT_S (900: past it a join
 * reports how far it got; also the meetings' bound), JOIN_BASELINE_TIMEOUT_S
 * (400; 0 skips the page-path join), JOIN_MISSED (1000 writes),
 * JOIN_MISSED_RETENTION (500 log entries on P for the trimmed case),
 * JOIN_DIGEST_REQUESTS (2000), JOIN_DIGEST_LOAD_S (10), JOIN_DIGEST_WRITE_RATE
 * (100 records/s), JOIN_BUSY_RATE (100 records/s), JOIN_BUSY_AFTER_S (10),
 * JOIN_BUSY_RETENTION (the node's default when unset), JOIN_SUSTAINED_RATES
 * (250,500,1000,2000,3000 records/s mesh-wide), JOIN_SUSTAINED_STEP_S (20),
 * JOIN_SUSTAINED_DRAIN_S (15), JOIN_SUSTAINED_SOLO (10000 records for the
 * lone node's rate), JOIN_SUSTAINED_ALL=1 (every step even past one that
 * did not keep up), JOIN_NODE_LOG (the child nodes' log level on stderr,
 * warn by default), JOIN_PEER_NODE_ARGS (more node flags for the child
 * processes, e.g. --cpu-prof), BENCH_NO_DOC=1 (leave docs/benchmarks.md
 * alone; a run of some phases only leaves it alone too), BENCH_KEEP=1 (keep
 * and reuse A's store).
 */
import '../src/mesh/libp2p/polyfill.js'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createLogger, waitFor } from '../src/common/index.js'
import type { RunningNode } from '../src/node/index.js'
import { startMeshNode, swarmKeyIn } from '../test/helpers/mesh-nodes.js'
import { busyJoin } from './lib/join-busy.js'
import { joinCeiling } from './lib/join-data.js'
import { digestFigures } from './lib/join-digest.js'
import type { HostReady } from './lib/join-host.js'
import { MeetPair } from './lib/join-meet.js'
import { NodeProc } from './lib/join-proc.js'
import { PHASES, parsePhases, phaseMarkdown } from './lib/join-report.js'
import { sustained } from './lib/join-sustained.js'
import { BENCH_KEEP, machineLine, report } from './lib/report.js'
import { threadTimes, threadsBetween, type ThreadsCpu } from './lib/proc-cpu.js'
import { syntheticRecord } from './lib/synthetic.js'

const N = Number(process.env.JOIN_RECORDS ?? 169_000)
const ONLY = parsePhases(process.env.JOIN_ONLY)
const TIMEOUT_S = Number(process.env.JOIN_TIMEOUT_S ?? 900)
const BASELINE_TIMEOUT_S = Number(process.env.JOIN_BASELINE_TIMEOUT_S ?? 400)
const env = (name: string, def: number): number => Number(process.env[name] ?? def)
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TMP = path.join(ROOT, '.bench-tmp')

const log = (msg: string): void => { process.stderr.write(`bench:join: ${msg}\n`) }
const r2 = (x: number): number => Math.round(x * 100) / 100
const r3 = (x: number): number => Math.round(x * 1000) / 1000
const f0 = (x: number): string => Math.round(x).toLocaleString('en-US')

// ---------------------------------------------------------------- figure 1: B joins A (B in this process)

interface JoinResult {
  done: boolean
  digestSeconds: number | null
  searchSeconds: number | null
  seconds: number | null
  recordsAtEnd: number
  bytes: number
  pages: number
  resyncs: number
  /** Figures sampled while the join ran: records on B over time. */
  samples: Array<{ s: number, records: number }>
  /**
   * CPU (ms) from B's start until it was ready: B's threads (its main thread, the others: search's index writer, the checkpointer,
   * V8's helpers), and the serving peer A's.
   */
  cpu: { b: ThreadsCpu, a: ThreadsCpu }
  searchWhileJoining: { answered: number, failed: number }
  joinStatus?: unknown
}

async function join (peer: HostReady, peerPid: number, key: string, dir: string, bulk: boolean, timeoutS: number): Promise<JoinResult> {
  const logger = createLogger({ level: 'info', write: l => { process.stderr.write(`B${bulk ? '' : ' (page path)'}: ${l}\n`) } })
  const cpu0 = { b: threadTimes(), a: threadTimes(peerPid) }
  const t0 = performance.now()
  const b: RunningNode = await startMeshNode({ dir, swarmKey: key, bootstrap: [peer.addr], antiEntropyMs: 600_000, logger, bulkJoin: bulk })
  const elapsed = (): number => (performance.now() - t0) / 1000
  const samples: JoinResult['samples'] = []
  const searchWhile = { answered: 0, failed: 0 }
  let joinStatus: unknown
  const sampler = setInterval(() => {
    samples.push({ s: r2(elapsed()), records: b.store.records.countRecords() })
    // The API answers during the join: a search for every record (its total), through the service the routes use.
    try { b.search.search({ limit: 1 }); searchWhile.answered++ } catch { searchWhile.failed++ }
    const st = b.mesh.status() as unknown as { join?: unknown }
    if (st.join !== undefined) joinStatus = st.join
  }, 2_000)
  const deadline = t0 + timeoutS * 1000
  let digestSeconds: number | null = null
  let searchSeconds: number | null = null
  try {
    await waitFor(() => {
      const p = b.mesh.status().peers.find(x => x.peerId === peer.peerId)
      return p !== undefined && !p.resyncing && p.cursor === peer.head
    }, { timeoutMs: Math.max(1, deadline - performance.now()), what: 'B to pull A\'s head', intervalMs: 20 })
    // The digest reads the whole store: asked once the head is reached (and again while it differs).
    await waitFor(() => b.mesh.digest().digest === peer.digest, { timeoutMs: Math.max(1, deadline - performance.now()), what: 'B\'s digest to equal A\'s',
      intervalMs: 500 })
    digestSeconds = elapsed()
    log(`digest equal after ${digestSeconds.toFixed(1)} s`)
    let timer: NodeJS.Timeout | undefined
    await Promise.race([b.search.whenIdle(),
      new Promise((resolve, reject) => { timer = setTimeout(() => { reject(new Error('search not idle by the deadline')) },
        Math.max(1, deadline - performance.now())) })])
      .finally(() => { clearTimeout(timer) })
    const last = syntheticRecord(N - 1)
    const byId = b.search.search({ filters: [{ property: 'imdbid', values: [last.fields.imdbid], exact: true }] })
    const byWord = b.search.search({ query: last.fields.title.split(' ')[0], limit: 1 })
    if (byId.total !== 1 || byWord.total === 0) throw new Error(`search on B does not find the last record (${byId.total}, ${byWord.total})`)
    searchSeconds = elapsed()
    log(`search built after ${searchSeconds.toFixed(1)} s`)
  } catch (err) {
    log(`not done: ${String(err)}`)
  }
  const cpu = { b: threadsBetween(cpu0.b, threadTimes(), process.pid), a: threadsBetween(cpu0.a, threadTimes(peerPid), peerPid) }
  clearInterval(sampler)
  const p = b.mesh.status().peers.find(x => x.peerId === peer.peerId)
  const out: JoinResult = {
    done: digestSeconds !== null && searchSeconds !== null,
    digestSeconds: digestSeconds === null ? null : r2(digestSeconds),
    searchSeconds: searchSeconds === null ? null : r2(searchSeconds),
    seconds: digestSeconds === null || searchSeconds === null ? null : r2(Math.max(digestSeconds, searchSeconds)),
    recordsAtEnd: b.store.records.countRecords(),
    bytes: p?.bytesIn ?? 0,
    pages: p?.pagesIn ?? 0,
    resyncs: p?.resyncs ?? 0,
    samples,
    cpu,
    searchWhileJoining: searchWhile,
    ...(joinStatus === undefined ? {} : { joinStatus })
  }
  await b.stop()
  return out
}


interface Raw { fileBytes: number, verBytes: number, keys: number }

/** Figure 1 and its baselines: the ceiling, B joining by the bulk path, B0 by the page path, the ceiling again. */
async function fresh (a: NodeProc, key: string, dir: string): Promise<Record<string, unknown>> {
  const raw = await a.call<Raw>('raw')
  const c1 = joinCeiling(path.join(dir, 'bare'), N)
  log(`ceiling (before): ${f0(c1.recordsPerSecond)} records/s`)
  const j = await join(a.ready, a.pid, key, path.join(dir, 'b'), true, TIMEOUT_S)
  fs.rmSync(path.join(dir, 'b'), { recursive: true, force: true })
  const base = BASELINE_TIMEOUT_S > 0 ? await join(a.ready, a.pid, key, path.join(dir, 'b0'), false, BASELINE_TIMEOUT_S) : undefined
  fs.rmSync(path.join(dir, 'b0'), { recursive: true, force: true })
  const c2 = joinCeiling(path.join(dir, 'bare'), N)
  log(`ceiling (after): ${f0(c2.recordsPerSecond)} records/s`)
  const ceilingRate = (c1.recordsPerSecond + c2.recordsPerSecond) / 2
  const rate = j.seconds === null ? null : N / j.seconds
  const digestRate = j.digestSeconds === null ? null : N / j.digestSeconds
  return {
    fieldsPerRecord: r2(raw.keys / N),
    replicatedKeys: a.ready.keys,
    rawFileBytes: raw.fileBytes,
    rawVersionBytes: raw.verBytes,
    join: j,
    pagePath: base === undefined ? null : { ...base, recordsPerSecond: base.seconds === null ? null : Math.round(N / base.seconds),
      fractionOfCeiling: base.seconds === null ? null : r3(N / base.seconds / ceilingRate) },
    speedup: base?.seconds == null || j.seconds === null ? null : r2(base.seconds / j.seconds),
    recordsPerSecond: rate === null ? null : Math.round(rate),
    digestRecordsPerSecond: digestRate === null ? null : Math.round(digestRate),
    ratioToRaw: r3(j.bytes / raw.fileBytes),
    ratioToRawWithVersions: r3(j.bytes / (raw.fileBytes + raw.verBytes)),
    ceiling: { before: Math.round(c1.recordsPerSecond), after: Math.round(c2.recordsPerSecond), recordsPerSecond: Math.round(ceilingRate) },
    fractionOfCeiling: rate === null ? null : r3(rate / ceilingRate),
    target: { seconds: 60, recordsPerSecond: 2800, met: j.seconds !== null && j.seconds <= 60 && N / j.seconds >= 2800 }
  }
}

function freshMarkdown (out: any): string[] {
  const j: JoinResult = out.join
  const base: JoinResult | null = out.pagePath
  const ceilingRate = out.ceiling.recordsPerSecond
  const row = (name: string, x: JoinResult, timeoutS: number): string => {
    const last = x.samples[x.samples.length - 1]
    const xr = x.seconds === null ? null : N / x.seconds
    return `| ${name} | ${x.done ? `**${x.seconds} s** (${x.digestSeconds} s / ${x.searchSeconds} s)` : `not done in ${timeoutS} s (${f0(x.recordsAtEnd)} records on B; digest ${x.digestSeconds ?? '—'} s)`} | ${xr === null ? (last === undefined ? '—' : `${f0(last.records / last.s)} (when stopped)`) : `**${f0(xr)}**`} | ${xr === null ? '—' : `${(xr / ceilingRate * 100).toFixed(1)} %`} | ${f0(x.bytes)} | ${r3(x.bytes / out.rawFileBytes)}× | ${r3(x.bytes / (out.rawFileBytes + out.rawVersionBytes))}× |`
  }
  return [
    `**1. A fresh node joins**: B joins a peer A holding ${f0(N)} records of ~${out.fieldsPerRecord} fields (bench/lib/synthetic.ts; ${f0(out.replicatedKeys)} versioned keys), A in a child process (its store filled in bulk before it starts, its search index built before the clock starts), B in the benchmark's process; the two cores are shared by both nodes and by search's index writers. The clock runs from B's start until B has pulled A's head with a digest equal to A's, and search answers from a complete index (a query by an exact field and one by a title word find the last record). Ceiling: the same \`file:\` rows into a bare SQLite table (32 rows per INSERT, 10,000 rows per transaction), before and after the join, the mean of the two.`,
    '',
    `${f0(N)} records, ${f0(out.rawFileBytes)} bytes of \`file:\` keys and values (${f0(out.rawVersionBytes)} more in \`ver:\` rows). Bare-kv ceiling: **${f0(ceilingRate)} records/s** (${f0(out.ceiling.before)} before, ${f0(out.ceiling.after)} after).`,
    '',
    '| B joins by | ready (digest equal / search built) | records/s | of the ceiling | bytes on the wire | of the raw range | with `ver:` rows |',
    '|---|---|---:|---:|---:|---:|---:|',
    row('the bulk path (the node as it ships)', j, TIMEOUT_S),
    ...(base === null ? [] : [row('the page path (bulk path off: each page through the write path, search staging every record; same build otherwise)', base, BASELINE_TIMEOUT_S)]),
    '',
    `Target (issue 42): ready in ≤ 60 s (≥ 2,800 records/s): ${out.target.met ? '**met**' : '**not met**'}; bytes ≤ 1.2× the raw range: ${out.ratioToRaw <= 1.2 ? '**met**' : '**not met**'}. While B joined, ${j.searchWhileJoining.answered} searches through B's service answered and ${j.searchWhileJoining.failed} failed (one every 2 s). ${j.pages} pages pulled, ${j.resyncs} resync.`,
    ''
  ]
}

async function main (): Promise<void> {
  const loadBefore = os.loadavg()[0]
  const dir = path.join(TMP, `join-${process.pid}`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const key = swarmKeyIn(dir)
  const peerDir = BENCH_KEEP ? path.join(TMP, `join-peer-${N}`) : path.join(dir, 'a')
  // A kept peer folder carries its swarm key: every node must use the same one.
  const keptKey = path.join(TMP, `join-peer-${N}.key`)
  if (BENCH_KEEP && !fs.existsSync(keptKey)) fs.copyFileSync(key, keptKey)
  const peerKey = BENCH_KEEP ? keptKey : key
  const out: Record<string, any> = { records: N, phases: ONLY }
  const needsA = ONLY.some(p => p !== 'sustained')
  if (needsA) {
    log(`starting peer A with ${N} records`)
    const t0 = performance.now()
    const a = await NodeProc.start({ label: 'A', dir: peerDir, swarmKey: peerKey, build: N })
    log(`peer A ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    try {
      if (ONLY.includes('fresh')) Object.assign(out, await fresh(a, peerKey, dir))
    } finally {
      await a.stop()
    }
  }
  if (ONLY.some(p => ['equal', 'diff', 'missed', 'digest', 'busy'].includes(p))) {
    const pair = new MeetPair({ baseDir: peerDir, workDir: path.join(dir, 'meet'), swarmKey: peerKey, records: N, log, timeoutS: TIMEOUT_S })
    try {
      if (ONLY.includes('equal')) { out.equal = await pair.equal(); log(`equal: ${JSON.stringify(out.equal)}`) }
      if (ONLY.includes('diff')) { out.diff = await pair.diff(); log(`diff: ${JSON.stringify(out.diff)}`) }
      if (ONLY.includes('missed')) {
        const writes = env('JOIN_MISSED', 1000)
        const trimmed = await pair.missed({ writes, from: 0, trimmed: true, retention: env('JOIN_MISSED_RETENTION', 500) })
        log(`missed (trimmed): ${JSON.stringify(trimmed)}`)
        const cursorPull = await pair.missed({ writes, from: writes, trimmed: false, retention: 0 })
        log(`missed (cursor pull): ${JSON.stringify(cursorPull)}`)
        out.missed = { trimmed, cursorPull }
      }
      if (ONLY.includes('digest')) {
        const p = await pair.startP()
        out.digest = await digestFigures(p, { requests: env('JOIN_DIGEST_REQUESTS', 2000), loadSeconds: env('JOIN_DIGEST_LOAD_S', 10),
          writeRate: env('JOIN_DIGEST_WRITE_RATE', 100), firstRecord: N + 2_000_000 })
        log(`digest: ${JSON.stringify(out.digest)}`)
        await pair.stop()
      }
      if (ONLY.includes('busy')) {
        const retention = process.env.JOIN_BUSY_RETENTION === undefined ? undefined : Number(process.env.JOIN_BUSY_RETENTION)
        const p = await pair.startP(retention === undefined ? {} : { streamRetention: retention, trimEvery: Math.max(1, Math.round(retention / 5)) })
        const idle = out.join?.digestSeconds == null ? null : { seconds: out.join.digestSeconds as number, records: N }
        const b = await busyJoin(p, { dir, swarmKey: peerKey, existing: pair.unchanged(), writeRate: env('JOIN_BUSY_RATE', 100), firstRecord: N + 5_000_000,
          afterSeconds: env('JOIN_BUSY_AFTER_S', 10), timeoutS: TIMEOUT_S, idle, log })
        out.busy = { ...b, retention: retention === undefined ? 'the default (100,000 entries)' : `${retention} entries` }
        log(`busy: ${JSON.stringify({ ...out.busy, samples: undefined })}`)
        await pair.stop()
      }
    } finally {
      await pair.close()
    }
  }
  if (ONLY.includes('sustained')) {
    const rates = (process.env.JOIN_SUSTAINED_RATES ?? '250,500,1000,2000,3000').split(',').map(Number)
    out.sustained = await sustained({ dir: path.join(dir, 'sustained'), rates, stepSeconds: env('JOIN_SUSTAINED_STEP_S', 20),
      drainSeconds: env('JOIN_SUSTAINED_DRAIN_S', 15), soloRecords: env('JOIN_SUSTAINED_SOLO', 10_000), allSteps: process.env.JOIN_SUSTAINED_ALL === '1', log })
  }
  fs.rmSync(dir, { recursive: true, force: true })
  out.loadAverage = { before: r2(loadBefore), after: r2(os.loadavg()[0]) }
  const md = [
    '## Join (`npm run bench:join`)',
    '',
    `${machineLine()}. Real nodes over libp2p TCP on 127.0.0.1 (store, search, mesh, HTTP API; watcher off); every figure beside a baseline measured in the same run. Load average (1 min) ${out.loadAverage.before} → ${out.loadAverage.after}.`,
    '',
    ...(out.join === undefined ? [] : freshMarkdown(out)),
    ...phaseMarkdown(out)
  ]
  if (ONLY.length < PHASES.length && process.env.BENCH_NO_DOC !== '1') {
    log(`docs/benchmarks.md left alone: only ${ONLY.join(', ')} ran`)
    process.env.BENCH_NO_DOC = '1'
  }
  report('join', out, md.join('\n'))
}

await main()
// Whatever a stopped node's libraries leave scheduled must not keep the run open.
process.exit(0)
