/**
 * Join benchmark (issue 42): a fresh node joins a peer holding N records of
 * ~40 fields (bench/lib/synthetic.ts), real nodes over libp2p TCP on
 * 127.0.0.1 (`startNode`: store, search, mesh, HTTP API; watcher off).
 *
 * - Peer A runs in a child process (`--peer` mode), so the two nodes do not
 *   share one event loop, as on two machines (they share the machine's two
 *   cores). Its store is filled before it starts, in bulk: the records as a
 *   peer's entries through `records.applyBatch` in transactions of 2,000
 *   roots, no search attached; then the node starts and search builds its
 *   index (a rebuild); A reports ready once that is done, so no work of A's
 *   own runs during the join. With BENCH_KEEP=1 A's folder is kept under
 *   .bench-tmp/join-peer-N and reused.
 * - The ceiling: the same `file:` rows (root ids minted as A's were, the same
 *   fields and values, in key order) into a bare SQLite table (`k TEXT PRIMARY KEY, v` WITHOUT ROWID, 32 rows per
 *   INSERT, 10,000 rows per transaction, WAL, synchronous NORMAL), measured
 *   before and after the join in the same run; the figure is the mean. The
 *   rows are generated a transaction's worth at a time, off the clock.
 * - Node B starts with an empty store, bootstrapping to A; the clock runs
 *   from its start until (1) B has pulled A's head (no resync under way, the
 *   cursor at A's head) and its digest equals A's, and (2) search answers
 *   from a complete index (search.whenIdle settled) and a query for the last
 *   record by an exact field and by a title word finds it. `seconds` is the
 *   later of the two. B's log (info) goes to stderr with a `B:` prefix.
 * - Bytes on the wire: the bytes of the pull replies B took (as counted by
 *   its mesh core) against the raw size of the range (the `file:` rows' keys
 *   and values) and against it with the `ver:` rows.
 *
 * - The baseline, in the same run: a second fresh node joins the same peer
 *   with the bulk path off (`bulkJoin: false`: every page through the
 *   write path, search staging each record and writers waiting on its
 *   backlog, as before the bulk path existed).
 *
 * Env: JOIN_RECORDS (169000; smaller for a quick run), JOIN_TIMEOUT_S (900:
 * past it the run reports how far B got), JOIN_BASELINE_TIMEOUT_S (400; 0
 * skips the baseline), BENCH_NO_DOC=1 (leave
 * docs/benchmarks.md alone), BENCH_KEEP=1 (keep and reuse A's store).
 */
import '../src/mesh/libp2p/polyfill.js'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { createLogger, waitFor } from '../src/common/index.js'
import { prefixEnd } from '../src/kv/index.js'
import type { RunningNode } from '../src/node/index.js'
import { formatHlc, newRecordId, openNodeStore, type RemoteEntry } from '../src/records/index.js'
import { startMeshNode, swarmKeyIn } from '../test/helpers/mesh-nodes.js'
import { BENCH_KEEP, machineLine, report } from './lib/report.js'
import { syntheticRecord } from './lib/synthetic.js'

const N = Number(process.env.JOIN_RECORDS ?? 169_000)
const TIMEOUT_S = Number(process.env.JOIN_TIMEOUT_S ?? 900)
const BASELINE_TIMEOUT_S = Number(process.env.JOIN_BASELINE_TIMEOUT_S ?? 400)
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TMP = path.join(ROOT, '.bench-tmp')
const PRELOAD_ROOTS = 2000
const ROWS_PER_STATEMENT = 32
const ROWS_PER_TX = 10_000
/** Bump when the generated records change, so a kept peer store of the old shape is not reused. */
const DATA_VERSION = 1

const log = (msg: string): void => { process.stderr.write(`bench:join: ${msg}\n`) }
const r2 = (x: number): number => Math.round(x * 100) / 100
const r3 = (x: number): number => Math.round(x * 1000) / 1000
const f0 = (x: number): string => Math.round(x).toLocaleString('en-US')

/** Root ids and versions of the records, the same in the peer and in the ceiling (versions in the past, one ms apart). */
function rootOf (i: number, baseMs: number): { rid: string, hlc: string } {
  return { rid: newRecordId(baseMs + i), hlc: formatHlc({ ms: baseMs + i, counter: 0 }) }
}

function entriesOf (from: number, to: number, baseMs: number): RemoteEntry[] {
  const out: RemoteEntry[] = []
  for (let i = from; i < to; i++) {
    const { rid, hlc } = rootOf(i, baseMs)
    const r = syntheticRecord(i)
    for (const f in r.fields) out.push({ key: `file:${rid}/${f}`, value: r.fields[f], hlc, origin: 'bench-origin' })
  }
  return out
}

// ---------------------------------------------------------------- peer A (child process)

async function peerMain (dir: string, swarmKey: string): Promise<void> {
  const marker = path.join(dir, `ready-${N}-v${DATA_VERSION}`)
  const dbPath = path.join(dir, 'db', 'meta-core.db')
  if (!fs.existsSync(marker)) {
    fs.rmSync(dir, { recursive: true, force: true })
    // A first start makes the identity and the store; then the records go in with the node stopped.
    const first = await startMeshNode({ dir, swarmKey, antiEntropyMs: 600_000 })
    const peerId = first.mesh.peerId
    await first.stop()
    const s = openNodeStore({ path: dbPath, nodeId: peerId })
    const baseMs = Date.now() - N - 120_000
    const t0 = performance.now()
    for (let from = 0; from < N; from += PRELOAD_ROOTS) {
      await s.records.applyBatch(entriesOf(from, Math.min(N, from + PRELOAD_ROOTS), baseMs), { rootsPerTransaction: PRELOAD_ROOTS, entriesPerTransaction: Infinity })
    }
    s.close()
    process.stderr.write(`bench:join: peer: ${N} records written in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
  }
  const t1 = performance.now()
  const a = await startMeshNode({ dir, swarmKey, antiEntropyMs: 600_000 })
  await a.search.whenIdle()
  const searchSeconds = (performance.now() - t1) / 1000
  fs.writeFileSync(marker, '')
  let fileBytes = 0
  let verBytes = 0
  let keys = 0
  for (const [k, v] of a.store.kv.iterate('file:', prefixEnd('file:'))) { fileBytes += Buffer.byteLength(k) + Buffer.byteLength(v); keys++ }
  for (const [k, v] of a.store.kv.iterate('ver:', prefixEnd('ver:'))) verBytes += Buffer.byteLength(k) + Buffer.byteLength(v)
  const d = a.mesh.digest()
  const head = a.store.kv.streamHead('meta:events') ?? null
  const sample = a.store.records.listRoots({ limit: 1, after: undefined })
  process.stdout.write(JSON.stringify({
    ready: true, addr: a.mesh.status().self.addrs[0], peerId: a.mesh.peerId, digest: d.digest, keys: d.keys, head, fileBytes, verBytes, fileKeys: keys,
    records: a.store.records.countRecords(), searchStartSeconds: r2(searchSeconds), firstRoot: sample[0] ?? null
  }) + '\n')
  const rl = readline.createInterface({ input: process.stdin })
  for await (const line of rl) {
    if (line.trim() === 'stop') break
  }
  await a.stop()
  process.exit(0)
}

// ---------------------------------------------------------------- the ceiling

/** The same rows as A's `file:` rows (root ids minted the same way, the same fields and values), generated a transaction's worth at a time off the clock. */
function ceilingRows (from: number, to: number, baseMs: number): Array<[string, string]> {
  const rows: Array<[string, string]> = []
  for (let i = from; i < to; i++) {
    const { rid } = rootOf(i, baseMs)
    const r = syntheticRecord(i)
    const fields = Object.keys(r.fields).sort()
    for (const f of fields) rows.push([`file:${rid}/${f}`, r.fields[f]])
  }
  return rows
}

function ceiling (dir: string): { seconds: number, recordsPerSecond: number } {
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const db = new Database(path.join(dir, 'bare.db'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID')
  const many = db.prepare(`INSERT INTO kv (k, v) VALUES ${Array.from({ length: ROWS_PER_STATEMENT }, () => '(?, ?)').join(', ')}`)
  const one = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)')
  const baseMs = Date.now() - N - 120_000
  let ms = 0
  const perTx = Math.max(1, Math.round(ROWS_PER_TX / 40))
  for (let from = 0; from < N; from += perTx) {
    const rows = ceilingRows(from, Math.min(N, from + perTx), baseMs)
    const t0 = performance.now()
    const end = rows.length
    db.transaction(() => {
      let j = 0
      for (; j + ROWS_PER_STATEMENT <= end; j += ROWS_PER_STATEMENT) {
        const args: string[] = []
        for (let x = j; x < j + ROWS_PER_STATEMENT; x++) args.push(rows[x][0], rows[x][1])
        many.run(...args)
      }
      for (; j < end; j++) one.run(rows[j][0], rows[j][1])
    })()
    ms += performance.now() - t0
  }
  const seconds = ms / 1000
  db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return { seconds, recordsPerSecond: N / seconds }
}

// ---------------------------------------------------------------- the join (parent)

interface PeerReady { addr: string, peerId: string, digest: string, keys: number, head: string | null, fileBytes: number, verBytes: number, fileKeys: number, records: number, searchStartSeconds: number }

async function startPeer (dir: string, key: string): Promise<{ ready: PeerReady, stop: () => Promise<void> }> {
  // JOIN_PEER_NODE_ARGS: more node flags for the peer's process (e.g. --cpu-prof).
  const extra = (process.env.JOIN_PEER_NODE_ARGS ?? '').split(' ').filter(a => a !== '')
  const child = spawn(process.execPath, [...extra, '--import', 'tsx', fileURLToPath(import.meta.url), '--peer', dir, key], {
    cwd: ROOT, env: { ...process.env }, stdio: ['pipe', 'pipe', 'inherit']
  })
  const exited = new Promise<void>(resolve => { child.once('exit', () => { resolve() }) })
  const rl = readline.createInterface({ input: child.stdout })
  const ready = await new Promise<PeerReady>((resolve, reject) => {
    rl.on('line', line => {
      try {
        const m = JSON.parse(line) as PeerReady & { ready?: boolean }
        if (m.ready === true) resolve(m)
      } catch {
        process.stderr.write(`peer: ${line}\n`)
      }
    })
    child.once('exit', code => { reject(new Error(`the peer exited (${String(code)}) before it was ready`)) })
  })
  return {
    ready,
    stop: async () => {
      child.stdin.write('stop\n')
      await Promise.race([exited, new Promise(resolve => setTimeout(resolve, 20_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  }
}

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
  searchWhileJoining: { answered: number, failed: number }
  joinStatus?: unknown
}

async function join (peer: PeerReady, key: string, dir: string, bulk: boolean, timeoutS: number): Promise<JoinResult> {
  const logger = createLogger({ level: 'info', write: l => { process.stderr.write(`B${bulk ? '' : ' (page path)'}: ${l}\n`) } })
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
    await waitFor(() => b.mesh.digest().digest === peer.digest, { timeoutMs: Math.max(1, deadline - performance.now()), what: 'B\'s digest to equal A\'s', intervalMs: 500 })
    digestSeconds = elapsed()
    log(`digest equal after ${digestSeconds.toFixed(1)} s`)
    let timer: NodeJS.Timeout | undefined
    await Promise.race([b.search.whenIdle(), new Promise((resolve, reject) => { timer = setTimeout(() => { reject(new Error('search not idle by the deadline')) }, Math.max(1, deadline - performance.now())) })])
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
    searchWhileJoining: searchWhile,
    ...(joinStatus === undefined ? {} : { joinStatus })
  }
  await b.stop()
  return out
}

async function main (): Promise<void> {
  const loadBefore = os.loadavg()[0]
  const dir = path.join(TMP, `join-${process.pid}`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const key = swarmKeyIn(dir)
  const peerDir = BENCH_KEEP ? path.join(TMP, `join-peer-${N}`) : path.join(dir, 'a')
  // A kept peer folder carries its swarm key: B must use the same one.
  const peerKey = BENCH_KEEP ? (fs.existsSync(path.join(peerDir, '..', `join-peer-${N}.key`)) ? path.join(peerDir, '..', `join-peer-${N}.key`) : (fs.copyFileSync(key, path.join(peerDir, '..', `join-peer-${N}.key`)), path.join(peerDir, '..', `join-peer-${N}.key`))) : key
  log(`starting peer A with ${N} records`)
  const t0 = performance.now()
  const peer = await startPeer(peerDir, peerKey)
  log(`peer A ready in ${((performance.now() - t0) / 1000).toFixed(1)} s (search on A: ${peer.ready.searchStartSeconds} s)`)
  const c1 = ceiling(path.join(dir, 'bare'))
  log(`ceiling (before): ${f0(c1.recordsPerSecond)} records/s`)
  const j = await join(peer.ready, peerKey, path.join(dir, 'b'), true, TIMEOUT_S)
  fs.rmSync(path.join(dir, 'b'), { recursive: true, force: true })
  const base = BASELINE_TIMEOUT_S > 0 ? await join(peer.ready, peerKey, path.join(dir, 'b0'), false, BASELINE_TIMEOUT_S) : undefined
  fs.rmSync(path.join(dir, 'b0'), { recursive: true, force: true })
  const c2 = ceiling(path.join(dir, 'bare'))
  log(`ceiling (after): ${f0(c2.recordsPerSecond)} records/s`)
  await peer.stop()
  if (!BENCH_KEEP) fs.rmSync(dir, { recursive: true, force: true })
  const loadAfter = os.loadavg()[0]
  const ceilingRate = (c1.recordsPerSecond + c2.recordsPerSecond) / 2
  const rate = j.seconds === null ? null : N / j.seconds
  const digestRate = j.digestSeconds === null ? null : N / j.digestSeconds
  const out = {
    records: N,
    fieldsPerRecord: r2(peer.ready.fileKeys / N),
    replicatedKeys: peer.ready.keys,
    rawFileBytes: peer.ready.fileBytes,
    rawVersionBytes: peer.ready.verBytes,
    join: j,
    pagePath: base === undefined ? null : { ...base, recordsPerSecond: base.seconds === null ? null : Math.round(N / base.seconds), fractionOfCeiling: base.seconds === null ? null : r3(N / base.seconds / ceilingRate) },
    speedup: base?.seconds == null || j.seconds === null ? null : r2(base.seconds / j.seconds),
    recordsPerSecond: rate === null ? null : Math.round(rate),
    digestRecordsPerSecond: digestRate === null ? null : Math.round(digestRate),
    ratioToRaw: r3(j.bytes / peer.ready.fileBytes),
    ratioToRawWithVersions: r3(j.bytes / (peer.ready.fileBytes + peer.ready.verBytes)),
    ceiling: { before: Math.round(c1.recordsPerSecond), after: Math.round(c2.recordsPerSecond), recordsPerSecond: Math.round(ceilingRate) },
    fractionOfCeiling: rate === null ? null : r3(rate / ceilingRate),
    target: { seconds: 60, recordsPerSecond: 2800, met: j.seconds !== null && j.seconds <= 60 },
    loadAverage: { before: r2(loadBefore), after: r2(loadAfter) }
  }
  const row = (name: string, x: JoinResult, timeoutS: number): string => {
    const last = x.samples[x.samples.length - 1]
    const xr = x.seconds === null ? null : N / x.seconds
    return `| ${name} | ${x.done ? `**${x.seconds} s** (${x.digestSeconds} s / ${x.searchSeconds} s)` : `not done in ${timeoutS} s (${f0(x.recordsAtEnd)} records on B; digest ${x.digestSeconds ?? '—'} s)`} | ${xr === null ? (last === undefined ? '—' : `${f0(last.records / last.s)} (when stopped)`) : `**${f0(xr)}**`} | ${xr === null ? '—' : `${(xr / ceilingRate * 100).toFixed(1)} %`} | ${f0(x.bytes)} | ${r3(x.bytes / peer.ready.fileBytes)}× | ${r3(x.bytes / (peer.ready.fileBytes + peer.ready.verBytes))}× |`
  }
  const md = [
    '## Join (`npm run bench:join`)',
    '',
    `${machineLine()}. A fresh node B joins a peer A holding ${f0(N)} records of ~${out.fieldsPerRecord} fields (bench/lib/synthetic.ts; ${f0(out.replicatedKeys)} versioned keys), real nodes over libp2p TCP on 127.0.0.1 (store, search, mesh, HTTP API; watcher off), A in a child process (its store filled in bulk before it starts, its search index built before the clock starts), B in the benchmark's process; the two cores are shared by both nodes and by search's index writers. The clock runs from B's start until B has pulled A's head with a digest equal to A's, and search answers from a complete index (a query by an exact field and one by a title word find the last record). Ceiling: the same \`file:\` rows into a bare SQLite table (32 rows per INSERT, 10,000 rows per transaction), before and after the join, the mean of the two. Load average (1 min) ${out.loadAverage.before} → ${out.loadAverage.after}.`,
    '',
    `${f0(N)} records, ${f0(peer.ready.fileBytes)} bytes of \`file:\` keys and values (${f0(peer.ready.verBytes)} more in \`ver:\` rows). Bare-kv ceiling: **${f0(ceilingRate)} records/s** (${f0(out.ceiling.before)} before, ${f0(out.ceiling.after)} after).`,
    '',
    '| B joins by | ready (digest equal / search built) | records/s | of the ceiling | bytes on the wire | of the raw range | with `ver:` rows |',
    '|---|---|---:|---:|---:|---:|---:|',
    row('the bulk path (the node as it ships)', j, TIMEOUT_S),
    ...(base === undefined ? [] : [row('the page path (bulk path off: each page through the write path, search staging every record; same build otherwise)', base, BASELINE_TIMEOUT_S)]),
    '',
    `Target (issue 42): ready in ≤ 60 s (≥ 2,800 records/s) ${out.target.met ? 'met' : 'not met'}; bytes ≤ 1.2× the raw range ${out.ratioToRaw <= 1.2 ? 'met' : 'not met'}. While B joined, ${j.searchWhileJoining.answered} searches through B's service answered and ${j.searchWhileJoining.failed} failed (one every 2 s). ${j.pages} pages pulled, ${j.resyncs} resync.`
  ]
  report('join', out, md.join('\n'))
}

if (process.argv[2] === '--peer') {
  await peerMain(process.argv[3], process.argv[4])
} else {
  await main()
  // Whatever a stopped node's libraries leave scheduled must not keep the run open.
  process.exit(0)
}
