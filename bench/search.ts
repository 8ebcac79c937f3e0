/**
 * bench:search — search on a synthetic library the size of the original's
 * (169k records, realistic fields, a tmdbid on most).
 *
 * Measures, in process: p50/p95 of a single-field filter (tmdbid exact), a
 * two-token free-text query, and filter + text, each against the
 * scan-everything reference measured in the same run (the baseline the
 * ratios are quoted against). Then starts a node serving that store in a
 * child process (src/node/main.ts, or a minimal node:http server over the same
 * search service if the node cannot start), and measures the time from spawn
 * to the first successful /health, the same queries over HTTP, and the
 * child's resident memory (VmRSS / VmHWM from /proc). Each server is started
 * once before that and stopped, its start time reported too: the first start
 * after a source change includes tsx transforming the changed files (0.8 s
 * more in alternated spawns on a 169k store), which the target is not about.
 *
 * The store is built once per size through the record write path with search
 * attached (so the FTS rows come from the same hooks as in production) and
 * kept under .bench-tmp/ with BENCH_KEEP=1, so re-runs skip the build
 * (removed when the run ends otherwise).
 *
 * Env: BENCH_SEARCH_RECORDS (default 169000; e.g. 5000 for a smoke run),
 * BENCH_SEARCH_QUERIES (per kind, default 200), BENCH_SEARCH_BASELINE (reference
 * scans per kind, default 1), BENCH_NO_DOC=1 (do not touch docs/benchmarks.md).
 * `tsx bench/search.ts --serve <db> <port>` is the minimal server mode.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { waitFor } from '../src/common/index.js'
import { midhashCidFromDigest } from '../src/cid/index.js'
import { openNodeStore } from '../src/records/index.js'
import { createSearch, type SearchRequest } from '../src/search/index.js'
import { referenceSearch } from '../src/search/testing.js'
import { prng, pick } from '../test/helpers/prng.js'
import { machineLine, percentile, removeUnlessKept, report } from './lib/report.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const N = Number(process.env.BENCH_SEARCH_RECORDS ?? 169_000)
const QUERIES = Number(process.env.BENCH_SEARCH_QUERIES ?? 200)
const BASELINE = Number(process.env.BENCH_SEARCH_BASELINE ?? 1)
/** Bump when the generated data changes, so a cached store of the old shape is not reused. */
const DATA_VERSION = 3
const IN_FLIGHT = 1000

// ------------------------------------------------------------------ synthetic library

const COMMON = ('the of a and in to love night dark man last day life war star king world girl house dead time black blood city ' +
  'story return secret lost red white big little last first heart moon sun fire ice water wild death road home game ' +
  'knight shadow dream summer winter empire rising fall iron golden silent hidden broken final edge light storm').split(' ')
const SYLLABLES = 'ka ri to mo na be lu xe qua zor vin tal dre sha pol mer gan ith ost rel vok ney dal sim tor ber lin cas fen'.split(' ')
const GENRES = ['Action', 'Adventure', 'Animation', 'Comedy', 'Crime', 'Documentary', 'Drama', 'Family', 'Fantasy', 'History',
  'Horror', 'Music', 'Mystery', 'Romance', 'Science Fiction', 'Thriller', 'War', 'Western']
const LANGS = ['eng', 'fre', 'ger', 'spa', 'ita', 'jpn', 'kor', 'por', 'rus', 'swe']
const ACCENTED = ['Amélie', 'Crème', 'Brûlée', 'Über', 'Straße', 'Niño', 'Façade', 'Æon', 'Øresund', 'Çatal']

function makeVocabulary (rand: () => number): string[] {
  const words = [...COMMON]
  while (words.length < 4000) {
    const n = 2 + Math.floor(rand() * 3)
    let w = ''
    for (let i = 0; i < n; i++) w += pick(rand, SYLLABLES)
    words.push(w)
  }
  return words
}

/** Zipf-like: common words often, the long tail rarely. */
const word = (rand: () => number, vocab: string[]): string => vocab[Math.floor(vocab.length * rand() ** 3)]
const cap = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1)

interface Generated { filePath: string, size: number, mtime: number, fields: Record<string, string> }

function generate (i: number, rand: () => number, vocab: string[]): Generated {
  const titleWords = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => cap(word(rand, vocab)))
  const title = titleWords.join(' ')
  const year = String(1950 + Math.floor(rand() * 76))
  const res = pick(rand, ['720p', '1080p', '2160p'])
  const codec = pick(rand, ['h264', 'hevc', 'av1'])
  const tv = rand() < 0.45
  const fields: Record<string, string> = {}
  let filePath: string
  if (tv) {
    const showIdx = Math.floor(rand() * 3000)
    const sr = prng(showIdx + 1)
    const show = Array.from({ length: 1 + Math.floor(sr() * 3) }, () => cap(word(sr, vocab))).join(' ')
    const s = String(1 + Math.floor(rand() * 8)).padStart(2, '0')
    const e = String(1 + Math.floor(rand() * 24)).padStart(2, '0')
    filePath = `/files/watch/tv/${show}/Season ${s}/${show.replaceAll(' ', '.')}.S${s}E${e}.${res}.${codec}.mkv`
    Object.assign(fields, { showtitle: show, type: 'episode', season: String(Number(s)), episode: String(Number(e)) })
    if (rand() < 0.93) fields.tmdbid = String(100_000 + showIdx)
  } else {
    filePath = `/files/watch/movies/${titleWords.join('.')}.${year}.${res}.${codec}-GRP${i % 97}.mkv`
    fields.type = 'movie'
    if (rand() < 0.92) fields.tmdbid = String(1_000_000 + i)
  }
  Object.assign(fields, {
    title,
    fileName: path.basename(filePath),
    year,
    'fileinfo/duration': String(1200 + Math.floor(rand() * 8000)),
    'fileinfo/streamdetails/video/0/codec': codec,
    'fileinfo/streamdetails/video/0/width': res === '720p' ? '1280' : res === '1080p' ? '1920' : '3840',
    'fileinfo/streamdetails/video/0/height': res === '720p' ? '720' : res === '1080p' ? '1080' : '2160',
    'fileinfo/streamdetails/audio/0/codec': pick(rand, ['aac', 'ac3', 'eac3', 'dts', 'truehd']),
    'fileinfo/streamdetails/audio/0/channels': pick(rand, ['2', '6', '8']),
    'fileinfo/streamdetails/audio/0/language': pick(rand, LANGS),
    rating: (rand() * 10).toFixed(1),
    votes: String(Math.floor(rand() * 100_000)),
    studio: cap(word(rand, vocab)) + ' ' + pick(rand, ['Pictures', 'Studios', 'Films', 'Television']),
    country: pick(rand, ['US', 'GB', 'FR', 'DE', 'JP', 'KR', 'IT', 'ES', 'SE', 'IN']),
    director: `${cap(word(rand, vocab))} ${cap(word(rand, vocab))}`,
    mpaa: pick(rand, ['G', 'PG', 'PG-13', 'R', 'NR'])
  })
  for (let a = 1; a < Math.floor(rand() * 3); a++) fields[`fileinfo/streamdetails/audio/${a}/language`] = pick(rand, LANGS)
  for (let t = 0; t < Math.floor(rand() * 4); t++) fields[`fileinfo/streamdetails/subtitle/${t}/language`] = pick(rand, LANGS)
  if (rand() < 0.7) fields.imdbid = 'tt' + String(Math.floor(rand() * 9_999_999)).padStart(7, '0')
  if (rand() < 0.25) fields.originaltitle = `${pick(rand, ACCENTED)} ${cap(word(rand, vocab))}`
  const genres = Array.from(new Set(Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(rand, GENRES))))
  if (rand() < 0.6) fields.genre = genres.join(', ')
  else for (const g of genres) fields[`genres/${g.toLowerCase()}`] = 'true'
  if (rand() < 0.6) fields.plot = Array.from({ length: 20 + Math.floor(rand() * 20) }, () => word(rand, vocab)).join(' ')
  if (rand() < 0.1) fields[`categories/newznab/${pick(rand, ['2030', '2040', '2045', '5030', '5040'])}`] = 'true'
  const digest = new Uint8Array(32)
  for (let b = 0; b < 32; b++) digest[b] = Math.floor(rand() * 256)
  fields[`cids/${midhashCidFromDigest(digest)}`] = 'true'
  return { filePath, size: Math.floor(rand() * 4e9), mtime: 1_700_000_000_000_000_000 + i, fields }
}

/** The files of a store: the store file, search's index file beside it, their WALs, the lock and owner files. */
const FILES = ['', '-wal', '-shm', '-search', '-search-wal', '-search-shm', '.lock', '.owner']

async function buildStore (dbPath: string): Promise<{ ms: number, cached: boolean }> {
  if (fs.existsSync(dbPath)) return { ms: 0, cached: true }
  const tmp = `${dbPath}.building`
  for (const ext of FILES) fs.rmSync(tmp + ext, { force: true })
  const t0 = performance.now()
  const s = openNodeStore({ path: tmp, nodeId: 'bench-node' })
  const search = createSearch({ kv: s.kv, records: s.records })
  await search.start()
  const rand = prng(42)
  const vocab = makeVocabulary(rand)
  let next = 0
  let lastLog = Date.now()
  const worker = async (): Promise<void> => {
    while (next < N) {
      const g = generate(next++, rand, vocab)
      await s.records.mint(g.filePath, g.size, g.mtime, g.fields)
      if (Date.now() - lastLog > 5000) {
        lastLog = Date.now()
        process.stderr.write(`built ${next}/${N} records (${Math.round(next / ((performance.now() - t0) / 1000))}/s)\n`)
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  await search.whenIdle()
  await search.stop()
  s.close()
  // Fold each WAL into its file with a connection of our own (the store's background checkpointer may still
  // hold its own when close() runs its checkpoint), then move the store file and search's index file into
  // place together: a store opened without its index file would rebuild the index while it is measured.
  for (const file of [tmp, `${tmp}-search`]) {
    const db = new Database(file)
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  }
  for (const ext of FILES.filter(e => e !== '' && e !== '-search')) fs.rmSync(tmp + ext, { force: true })
  fs.renameSync(`${tmp}-search`, `${dbPath}-search`)
  fs.renameSync(tmp, dbPath)
  return { ms: performance.now() - t0, cached: false }
}

// ------------------------------------------------------------------ queries

interface Workload { single: SearchRequest[], text: SearchRequest[], both: SearchRequest[] }

/** Queries drawn from the stored records, so each finds something, as a user's would. */
function workload (records: ReturnType<typeof openNodeStore>['records']): Workload {
  const rand = prng(7)
  const rids = records.listRoots({ limit: 1_000_000 })
  const w: Workload = { single: [], text: [], both: [] }
  while (w.both.length < QUERIES) {
    const flat = records.getFlat(pick(rand, rids)) ?? {}
    const words = (flat.title ?? '').toLowerCase().split(' ').filter(x => x.length >= 3)
    if (flat.tmdbid === undefined || words.length === 0) continue
    const second = words.length > 1 ? words.find(x => x !== words[0]) ?? flat.year : flat.year
    const tmdb = { property: 'tmdbid', values: [flat.tmdbid], exact: true }
    w.single.push({ filters: [tmdb] })
    w.text.push({ query: `${words[0]} ${second ?? ''}`.trim() })
    w.both.push({ query: words[0], filters: [tmdb] })
  }
  return w
}

function timeAll (reqs: SearchRequest[], run: (r: SearchRequest) => unknown): { p50: number, p95: number, mean: number } {
  for (const r of reqs.slice(0, 10)) run(r) // warm the page cache and the statements
  const ms = reqs.map(r => {
    const t = performance.now()
    run(r)
    return performance.now() - t
  })
  return { p50: round(percentile(ms, 50)), p95: round(percentile(ms, 95)), mean: round(ms.reduce((a, b) => a + b, 0) / ms.length) }
}

async function timeAllAsync (reqs: SearchRequest[], run: (r: SearchRequest) => Promise<unknown>): Promise<{ p50: number, p95: number }> {
  for (const r of reqs.slice(0, 10)) await run(r)
  const ms: number[] = []
  for (const r of reqs) { const t = performance.now(); await run(r); ms.push(performance.now() - t) }
  return { p50: round(percentile(ms, 50)), p95: round(percentile(ms, 95)) }
}

const round = (x: number): number => Math.round(x * 100) / 100

// ------------------------------------------------------------------ the serving node

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port
      srv.close(() => { resolve(port) })
    })
  })
}

async function fetchJson (url: string, body?: unknown): Promise<{ status: number, json: unknown }> {
  const res = await fetch(url, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const json: unknown = await res.json()
  return { status: res.status, json }
}

interface Served { child: ChildProcess, port: number, startMs: number, server: string, filesDir: string }
interface ServerRun {
  server: string
  /** The first start of the run: tsx transforms (and caches) whatever source changed since its last start. */
  firstStartToHealthMs: number
  /** The start measured against the target, with tsx's cache warm, as every start but the first after an upgrade. */
  startToHealthMs: number
  rssMiB: number
  hwmMiB: number
  latencyMs: Record<keyof Workload, { p50: number, p95: number }>
}

async function measureServer (dbPath: string, kind: 'node' | 'minimal', w: Workload): Promise<ServerRun> {
  const first = await startServer(dbPath, kind)
  await stopServer(first)
  const served = await startServer(dbPath, kind)
  try {
    const base = `http://127.0.0.1:${served.port}`
    const run = async (r: SearchRequest): Promise<void> => {
      const { status } = await fetchJson(`${base}/api/metadata/search`, r)
      if (status !== 200) throw new Error(`search over HTTP answered ${status}`)
    }
    const n = Math.min(QUERIES, 100)
    const latencyMs = {
      single: await timeAllAsync(w.single.slice(0, n), run),
      text: await timeAllAsync(w.text.slice(0, n), run),
      both: await timeAllAsync(w.both.slice(0, n), run)
    }
    return { server: served.server, firstStartToHealthMs: first.startMs, startToHealthMs: served.startMs, ...memoryOf(served.child.pid!), latencyMs }
  } finally {
    await stopServer(served)
  }
}

async function startServer (dbPath: string, kind: 'node' | 'minimal'): Promise<Served> {
  const port = await freePort()
  const filesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-bench-files-'))
  const args = kind === 'node'
    ? ['--import', 'tsx', path.join(ROOT, 'src/node/main.ts')]
    : ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', dbPath, String(port)]
  const t0 = performance.now()
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      META_CORE_DB_PATH: dbPath,
      META_CORE_HTTP_HOST: '127.0.0.1',
      META_CORE_HTTP_PORT: String(port),
      FILES_PATH: filesDir,
      META_CORE_LOG_LEVEL: 'warn'
    }
  })
  let stderr = ''
  child.stderr?.on('data', (b: Buffer) => { stderr += b.toString() })
  let exited = false
  child.once('exit', () => { exited = true })
  try {
    await waitFor(async () => {
      if (exited) throw new Error(`${kind} server exited before serving: ${stderr.slice(-2000)}`)
      try {
        return (await fetch(`http://127.0.0.1:${port}/health`)).ok
      } catch {
        return false // not listening yet
      }
    }, { timeoutMs: 120_000, intervalMs: 10, what: `the ${kind} server's /health on port ${port}` })
  } catch (err) {
    child.kill('SIGKILL')
    fs.rmSync(filesDir, { recursive: true, force: true })
    throw err
  }
  const server = kind === 'node' ? 'src/node/main.ts' : 'bench/search.ts --serve (minimal node:http server)'
  return { child, port, startMs: round(performance.now() - t0), server, filesDir }
}

async function stopServer (s: Served): Promise<void> {
  if (s.child.exitCode === null) {
    const done = new Promise<void>(resolve => { s.child.once('exit', () => { resolve() }) })
    s.child.kill('SIGTERM')
    const timer = setTimeout(() => { s.child.kill('SIGKILL') }, 20_000)
    await done
    clearTimeout(timer)
  }
  fs.rmSync(s.filesDir, { recursive: true, force: true })
}

function memoryOf (pid: number): { rssMiB: number, hwmMiB: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMiB: round(kib('VmRSS') / 1024), hwmMiB: round(kib('VmHWM') / 1024) }
}

/** Minimal server: the store, search, and the two routes plus /health, on node:http. */
async function serve (dbPath: string, port: number): Promise<void> {
  const s = openNodeStore({ path: dbPath })
  const search = createSearch({ kv: s.kv, records: s.records })
  await search.start()
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    const url = new URL(req.url ?? '/', 'http://x')
    if (req.method === 'GET' && url.pathname === '/health') { send(200, { status: 'ok' }); return }
    if (req.method === 'GET' && url.pathname === '/api/metadata/list') {
      send(200, search.list(Number(url.searchParams.get('offset') ?? 0), Number(url.searchParams.get('limit') ?? 100)))
      return
    }
    if (req.method === 'POST' && url.pathname === '/api/metadata/search') {
      let body = ''
      req.on('data', (c: Buffer) => { body += c.toString() })
      req.on('end', () => {
        try { send(200, search.search(JSON.parse(body) as SearchRequest)) } catch (err) { send(400, { error: 'bad_request', message: (err as Error).message }) }
      })
      return
    }
    send(404, { error: 'not_found' })
  })
  server.listen(port, '127.0.0.1')
  process.once('SIGTERM', () => {
    server.close()
    void search.stop().then(() => { s.close(); process.exit(0) })
  })
}

// ------------------------------------------------------------------ main

async function main (): Promise<void> {
  const dir = path.join(ROOT, '.bench-tmp')
  fs.mkdirSync(dir, { recursive: true })
  const dbPath = path.join(dir, `search-${N}-v${DATA_VERSION}.db`)
  const build = await buildStore(dbPath)
  // The store file and search's index file beside it.
  const indexPath = `${dbPath}-search`
  const dbMiB = round((fs.statSync(dbPath).size + (fs.existsSync(indexPath) ? fs.statSync(indexPath).size : 0)) / 2 ** 20)

  const s = openNodeStore({ path: dbPath })
  const tOpen = performance.now()
  const search = createSearch({ kv: s.kv, records: s.records })
  await search.start()
  const openMs = round(performance.now() - tOpen)
  await search.whenReady()
  const records = s.records.countRecords()
  const w = workload(s.records)
  const indexed = {
    single: timeAll(w.single, r => search.search(r)),
    text: timeAll(w.text, r => search.search(r)),
    both: timeAll(w.both, r => search.search(r))
  }
  const reference = {
    single: timeAll(w.single.slice(0, BASELINE), r => referenceSearch(s.records, r)),
    text: timeAll(w.text.slice(0, BASELINE), r => referenceSearch(s.records, r)),
    both: timeAll(w.both.slice(0, BASELINE), r => referenceSearch(s.records, r))
  }
  const avgHits = round(w.text.reduce((n, r) => n + search.search(r).total, 0) / w.text.length)
  await search.stop()
  s.close()

  // The node as shipped, then the minimal server (search alone): the difference is what the rest of the node adds.
  const runs: ServerRun[] = []
  try {
    runs.push(await measureServer(dbPath, 'node', w))
  } catch (err) {
    process.stderr.write(`the node did not start (${(err as Error).message.slice(0, 300)}); measuring the minimal server only\n`)
  }
  runs.push(await measureServer(dbPath, 'minimal', w))
  const main = runs[0]

  const ratio = (k: keyof Workload): number => round(reference[k].p50 / indexed[k].p50)
  const rate = build.cached ? 0 : Math.round(N / (build.ms / 1000))
  const json = {
    bench: 'search',
    machine: machineLine(),
    records,
    storeMiB: dbMiB,
    build: build.cached ? 'cached' : { ms: Math.round(build.ms), recordsPerSecond: rate },
    createSearchMs: openMs,
    queriesPerKind: QUERIES,
    avgTextHits: avgHits,
    indexedMs: indexed,
    referenceScanMs: reference,
    speedupVsScanP50: { single: ratio('single'), text: ratio('text'), both: ratio('both') },
    servers: runs
  }
  /* eslint-disable max-len -- docs/benchmarks.md as it reads: a paragraph or table row is one line */
  const md = `## search (\`npm run bench:search\`)

${machineLine()}. ${records.toLocaleString('en')} synthetic records (about 35 fields each, a tmdbid on ~92%), store and index files ${dbMiB} MiB.
${QUERIES} queries per kind drawn from the stored records; baseline: the scan-everything reference (every document read and matched), ${BASELINE} run per kind in the same process.

| query | p50 ms | p95 ms | target p50 | reference scan p50 ms | speed-up (p50) | over HTTP p50 / p95 ms |
|---|---|---|---|---|---|---|
| single-field filter (tmdbid exact) | ${indexed.single.p50} | ${indexed.single.p95} | ≤ 2 | ${reference.single.p50} | ${ratio('single')}× | ${main.latencyMs.single.p50} / ${main.latencyMs.single.p95} |
| two-token free text (avg ${avgHits} matches) | ${indexed.text.p50} | ${indexed.text.p95} | ≤ 15 | ${reference.text.p50} | ${ratio('text')}× | ${main.latencyMs.text.p50} / ${main.latencyMs.text.p95} |
| filter + text | ${indexed.both.p50} | ${indexed.both.p95} | ≤ 20 | ${reference.both.p50} | ${ratio('both')}× | ${main.latencyMs.both.p50} / ${main.latencyMs.both.p95} |

Over HTTP: ${main.server} in its default configuration (file watcher on, over an empty library folder), sequential requests on 127.0.0.1. createSearch on the built store: ${openMs} ms.

| serving process | spawn → first /health ms (target ≤ 2000) | the run's first start ms | RSS after the queries MiB (target ≤ 250) | peak RSS MiB |
|---|---|---|---|---|
${runs.map(r => `| ${r.server} | ${r.startToHealthMs} | ${r.firstStartToHealthMs} | ${r.rssMiB} | ${r.hwmMiB} |`).join('\n')}

Each server is started twice, and the second start is the one measured against the target: the first start after a change to the sources also has tsx transform the changed files (the node runs its TypeScript through tsx's loader, which caches what it transformed), as the first start after an upgrade does.

The original's Redis era used about 6.6 GB for 169k records.
${build.cached ? 'Store reused from .bench-tmp/.' : `Store built in ${Math.round(build.ms / 1000)} s (${rate} records/s through the record write path, search attached).`}`
  /* eslint-enable max-len */
  report('search', json, md)
  removeUnlessKept(...FILES.map(ext => dbPath + ext))
}

if (process.argv[2] === '--serve') await serve(process.argv[3], Number(process.argv[4]))
else await main()
