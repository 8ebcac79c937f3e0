/**
 * bench:api — `GET /api/meta/{cid}` under load, against the machine's ceiling.
 *
 * A store of BENCH_API_RECORDS records (default 169 000, the original's
 * library; ~20 realistic fields and two CIDs each) is built once through the
 * record write path with search attached and cached under .bench-tmp/. A
 * real node (`src/node/main.ts`, file watcher off) serves it from a child
 * process, so the load generator and the server each have a core. The load
 * generator is wrk when it is installed (Debian: `apt-get install wrk`; a C
 * client that leaves the server more of a two-core machine), else autocannon
 * in this process. Each route gets a warm-up, then rounds alternate
 * `/health` (a trivial route: the ceiling of fastify on this machine) and
 * `/api/meta/{cid}` with a random CID of the store per request. The figure
 * that matters is the ratio of the two, measured in the same round.
 *
 * Targets (issue): ≥ 10 000 requests/s and p99 ≤ 10 ms for /api/meta/{cid}
 * with 50 connections on loopback.
 *
 * Env: BENCH_API_RECORDS (default 169000; e.g. 2000 for a smoke run),
 * BENCH_API_DURATION_S (measured seconds per route and round, default 10),
 * BENCH_API_ROUNDS (alternating /health and /api/meta rounds, default 3),
 * BENCH_API_CONNECTIONS (default 50), BENCH_API_LOADGEN (wrk | autocannon; default
 * wrk when installed), BENCH_NO_DOC=1 (leave docs alone),
 * BENCH_API_BUILD_ONLY=1 (build or check the cached store, measure nothing).
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { encodeCidV1, midhashCidFromDigest, CODEC_RAW, MH_SHA2_256 } from '../src/cid/index.js'
import { waitFor, withTimeout } from '../src/common/index.js'
import { openNodeStore } from '../src/records/index.js'
import { createSearch } from '../src/search/index.js'
import { pick, prng } from '../test/helpers/prng.js'
import { machineLine, report, removeUnlessKept } from './lib/report.js'
import { wrk, wrkVersion, writeRandomPathScript, type LoadFigures } from './lib/wrk.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const N = Number(process.env.BENCH_API_RECORDS ?? 169_000)
const DURATION_S = Number(process.env.BENCH_API_DURATION_S ?? 10)
const CONNECTIONS = Number(process.env.BENCH_API_CONNECTIONS ?? 50)
const WARMUP_S = Math.min(5, DURATION_S)
const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 3)
/** Bump when the generated records change shape, so an old cached store is rebuilt. */
const DATA_VERSION = 2
/** Writes in flight while building: enough for group commit to batch well. */
const IN_FLIGHT = 1000

// autocannon ships no types; this is the part of its API used here.
interface AutocannonRequest { method?: string, path?: string }
interface AutocannonResult {
  requests: { average: number, total: number }
  latency: { p50: number, p90: number, p99: number, max: number, average: number }
  non2xx: number
  errors: number
  timeouts: number
  duration: number
}
type Autocannon = (opts: {
  url: string
  connections: number
  duration: number
  requests?: Array<{ setupRequest?: (req: AutocannonRequest) => AutocannonRequest }>
}) => Promise<AutocannonResult>
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

// ------------------------------------------------------------------ the store

const WORDS = ('the of night dark man last day life war star king world girl house dead time black blood city story return secret ' +
  'lost red white big little first heart moon sun fire ice water wild death road home game knight shadow dream summer winter').split(' ')
const GENRES = ['Action', 'Comedy', 'Crime', 'Drama', 'Fantasy', 'Horror', 'Mystery', 'Romance', 'Science Fiction', 'Thriller']

function digest (seed: string): Uint8Array {
  return new Uint8Array(createHash('sha256').update(seed).digest())
}

function recordFields (i: number, rand: () => number): { filePath: string, size: number, fields: Record<string, string> } {
  const title = Array.from({ length: 2 + Math.floor(rand() * 3) }, () => pick(rand, WORDS)).join(' ')
  const year = String(1950 + Math.floor(rand() * 75))
  const midhash = midhashCidFromDigest(digest(`m${i}`))
  const sha = encodeCidV1(CODEC_RAW, MH_SHA2_256, digest(`s${i}`))
  const fields: Record<string, string> = {
    [`cids/${midhash}`]: 'true',
    [`cids/${sha}`]: 'true',
    title,
    year,
    type: 'movie',
    fileType: 'video',
    mimeType: 'video/x-matroska',
    extension: 'mkv',
    tmdbid: String(10_000 + i),
    imdbid: `tt${String(1_000_000 + i)}`,
    'fileinfo/duration': (3600 + rand() * 5400).toFixed(1),
    'fileinfo/formatName': 'matroska,webm',
    'stream/0': JSON.stringify({ type: 'video', codec: 'h264', index: 0, width: 1920, height: 1080, frameRate: '24000/1001' }),
    'stream/1': JSON.stringify({ type: 'audio', codec: 'aac', index: 1, language: 'eng', channelLayout: '5.1' }),
    [`genres/${pick(rand, GENRES)}`]: 'true',
    [`genres/${pick(rand, GENRES)}`]: 'true',
    'titles/eng': title,
    'description/eng': Array.from({ length: 30 }, () => pick(rand, WORDS)).join(' ')
  }
  return { filePath: `/files/watch/movies/${title.replace(/ /g, '.')}.${year}.${i}.mkv`, size: Math.floor(rand() * 2 ** 34), fields }
}

async function buildStore (dbPath: string): Promise<{ cached: boolean, ms: number }> {
  if (fs.existsSync(dbPath)) {
    const s = openNodeStore({ path: dbPath })
    const n = s.records.countRecords()
    s.close()
    if (n === N) return { cached: true, ms: 0 }
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(dbPath + suffix, { force: true })
  }
  const t0 = Date.now()
  const s = openNodeStore({ path: dbPath })
  const search = createSearch({ kv: s.kv, records: s.records })
  await search.start()
  const rand = prng(4242)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < N) {
      const i = next++
      const r = recordFields(i, rand)
      await s.records.mint(r.filePath, r.size, BigInt(1_700_000_000_000 + i) * 1_000_000n, r.fields)
      if (i % 20_000 === 0) process.stderr.write(`built ${i} / ${N}\n`)
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  await search.whenIdle()
  await search.stop()
  s.close()
  return { cached: false, ms: Date.now() - t0 }
}

/**
 * The store's CIDs, and what one document read costs in process (the same
 * call the route makes, which reads in one snapshot), to tell the store's share of a
 * request from the HTTP layer's.
 */
function storeProbe (dbPath: string): { cids: string[], getDocumentMicros: number } {
  const s = openNodeStore({ path: dbPath })
  try {
    const cids = s.kv.keys('cid:', 'cid;').map(k => k.slice(4))
    const rand = prng(11)
    const n = 20_000
    const t0 = performance.now()
    for (let i = 0; i < n; i++) s.records.getDocumentJson(cids[Math.floor(rand() * cids.length)])
    return { cids, getDocumentMicros: Math.round((performance.now() - t0) / n * 1000) }
  } finally {
    s.close()
  }
}

// ------------------------------------------------------------------ the server

interface Server { url: string, pid: number, stop: () => Promise<number | null> }

async function startServer (dbPath: string, filesPath: string): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/node/main.ts', '--port', '0', '--db-path', dbPath,
    '--files-path', filesPath, '--enable-file-watcher=false', '--log-level', 'warn'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (b: Buffer) => { out += b.toString() })
  const exited = new Promise<number | null>(resolve => { child.on('exit', code => { resolve(code) }) })
  await waitFor(() => /listening on (\S+)/.test(out) || child.exitCode !== null, { timeoutMs: 120_000, what: 'the node to listen' })
  const m = /listening on (\S+)/.exec(out)
  if (m === null) throw new Error('the node exited before listening')
  return {
    url: m[1],
    pid: child.pid ?? 0,
    stop: async () => {
      child.kill('SIGTERM')
      return await withTimeout(exited, 30_000, 'the node to stop')
    }
  }
}

function rssMiB (pid: number): { rss: number, peak: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN)
    return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) }
  } catch {
    return undefined // not on Linux: the figure is left out
  }
}

// ------------------------------------------------------------------ load

/** wrk when installed (less CPU per request than a Node.js client), else autocannon; BENCH_API_LOADGEN forces one. */
const WRK = process.env.BENCH_API_LOADGEN === 'autocannon' ? undefined : wrkVersion()
if (process.env.BENCH_API_LOADGEN === 'wrk' && WRK === undefined) throw new Error('BENCH_API_LOADGEN=wrk but wrk is not installed (Debian: apt-get install wrk)')
const LOADGEN = WRK ?? `autocannon ${(createRequire(import.meta.url)('autocannon/package.json') as { version: string }).version}`

/** A route to load: a fixed path, or paths drawn at random from a list (then `path` is only wrk's URL, the script picks the path). */
interface Target { path: string, paths?: string[], wrkScript?: string }

async function load (url: string, target: Target, seconds: number): Promise<LoadFigures> {
  if (WRK !== undefined) {
    if (target.paths !== undefined && target.wrkScript === undefined) {
      // Written once per target: the list of 338k paths is tens of MB of Lua.
      target.wrkScript = path.join(ROOT, '.bench-tmp', 'wrk-paths.lua')
      writeRandomPathScript(target.wrkScript, target.paths, 7)
    }
    return await wrk(url + target.path, { connections: CONNECTIONS, seconds, script: target.wrkScript })
  }
  const rand = prng(7)
  const paths = target.paths
  const pathFor = paths === undefined ? () => target.path : () => paths[Math.floor(rand() * paths.length)]
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [{ setupRequest: (req) => ({ ...req, method: 'GET', path: pathFor() }) }]
  })
  return {
    requestsPerSecond: Math.round(r.requests.total / r.duration),
    p50Ms: r.latency.p50,
    p90Ms: r.latency.p90,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts
  }
}

async function main (): Promise<void> {
  const dir = path.join(ROOT, '.bench-tmp', `api-${N}-v${DATA_VERSION}`)
  fs.mkdirSync(path.join(dir, 'files'), { recursive: true })
  const dbPath = path.join(dir, 'meta-core.db')
  const build = await buildStore(dbPath)
  if (process.env.BENCH_API_BUILD_ONLY === '1') {
    process.stdout.write(`store ready at ${dbPath} (${build.cached ? 'cached' : `built in ${Math.round(build.ms / 1000)} s`})\n`)
    return
  }
  const { cids, getDocumentMicros } = storeProbe(dbPath)
  const loadBefore = os.loadavg()[0]
  const server = await startServer(dbPath, path.join(dir, 'files'))
  const rounds: Array<{ health: LoadFigures, meta: LoadFigures, ratio: number }> = []
  let memory: { rss: number, peak: number } | undefined
  let loadAfter = 0
  try {
    const metaTarget: Target = { path: '/', paths: cids.map(c => `/api/meta/${c}`) }
    const check = await fetch(`${server.url}/api/meta/${cids[0]}`)
    if (check.status !== 200) throw new Error(`GET /api/meta/{cid} answered ${check.status}`)
    await load(server.url, { path: '/health' }, WARMUP_S)
    await load(server.url, metaTarget, WARMUP_S)
    // Alternating rounds: each ratio comes from two adjacent windows, so a
    // change in the shared machine's load hits both of its terms alike.
    for (let r = 0; r < ROUNDS; r++) {
      const health = await load(server.url, { path: '/health' }, DURATION_S)
      const meta = await load(server.url, metaTarget, DURATION_S)
      rounds.push({ health, meta, ratio: Math.round((meta.requestsPerSecond / health.requestsPerSecond) * 100) / 100 })
      process.stderr.write(`round ${r + 1}/${ROUNDS}: /health ${health.requestsPerSecond}/s, /api/meta ${meta.requestsPerSecond}/s (p99 ${meta.p99Ms} ms)\n`)
    }
    memory = rssMiB(server.pid)
  } finally {
    loadAfter = os.loadavg()[0]
    await server.stop()
  }
  // The headline is the round with the median /api/meta rate; every round is listed.
  const median = [...rounds].sort((x, y) => x.meta.requestsPerSecond - y.meta.requestsPerSecond)[Math.floor(rounds.length / 2)]
  const { health, meta } = median
  const meanRatio = Math.round(rounds.reduce((a, r) => a + r.ratio, 0) / rounds.length * 100) / 100
  const json = {
    bench: 'api',
    machine: machineLine(),
    records: N,
    cids: cids.length,
    connections: CONNECTIONS,
    loadGenerator: LOADGEN,
    durationSeconds: DURATION_S,
    store: build.cached ? 'cached' : { builtSeconds: Math.round(build.ms / 1000) },
    rounds,
    medianRound: { health, apiMetaCid: meta, ratioToHealth: median.ratio },
    meanRatioToHealth: meanRatio,
    getDocumentMicrosInProcess: getDocumentMicros,
    loadAverage1m: { before: Math.round(loadBefore * 100) / 100, after: Math.round(loadAfter * 100) / 100 },
    serverMemoryMiB: memory,
    targets: {
      requestsPerSecond10k: meta.requestsPerSecond >= 10_000,
      p99AtMost10ms: meta.p99Ms <= 10,
      noErrors: rounds.every(r => r.meta.non2xx === 0 && r.meta.errors === 0)
    }
  }
  const row = (round: number, route: string, x: LoadFigures): string =>
    `| ${round} | ${route} | ${x.requestsPerSecond.toLocaleString('en')} | ${x.p50Ms} ms | ${x.p90Ms} ms | ${x.p99Ms} ms | ${x.maxMs} ms | ${x.non2xx + x.errors} |`
  const md = `## API (\`npm run bench:api\`)

${machineLine()}. A node (\`src/node/main.ts\`, watcher off) in a child process serves a store of ${N.toLocaleString('en')} records
(~20 fields, two CIDs each); ${LOADGEN} drives it with ${CONNECTIONS} connections on loopback${WRK === undefined ? ' from the parent process'
  : ' (one client thread)'}, after a ${WARMUP_S} s warm-up per route.
${ROUNDS} alternating rounds of ${DURATION_S} s per route; \`/api/meta/{cid}\` asks for a random CID of the store per request.

| round | route | requests/s | p50 | p90 | p99 | max | non-2xx or errors |
|---|---|---:|---:|---:|---:|---:|---:|
${rounds.map((r, i) => `${row(i + 1, '`GET /health`', r.health)}\n${row(i + 1, '`GET /api/meta/{cid}`', r.meta)}`).join('\n')}

Median round (by \`/api/meta/{cid}\` rate): ${meta.requestsPerSecond.toLocaleString('en')} requests/s with p99 ${meta.p99Ms} ms, **${median.ratio}×**
the trivial route's rate in the same round (mean ratio over the rounds ${meanRatio}×). Target ≥ 10 000 requests/s with p99 ≤ 10 ms:
${json.targets.requestsPerSecond10k && json.targets.p99AtMost10ms ? 'met' : 'not met in this run'}. In process, one document read (the route's
\`records.getDocumentJson\`, one SQL statement) took ${getDocumentMicros} µs. Load average (1 min) of the shared machine:
${json.loadAverage1m.before} before, ${json.loadAverage1m.after} after (2 cores): absolute rates move with it, the ratio much less.${memory === undefined ? '' : ` Server memory after the run: ${memory.rss} MiB resident, ${memory.peak} MiB peak.`}
${build.cached ? 'Store reused from .bench-tmp/.' : `Store built in ${Math.round(build.ms / 1000)} s through the record write path, search attached.`}`
  report('api', json, md)
  removeUnlessKept(dir, path.join(ROOT, '.bench-tmp', 'wrk-paths.lua'))
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:api failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
