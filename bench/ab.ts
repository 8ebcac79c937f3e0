/**
 * bench:ab — one benchmark on two commits, side by side in one run.
 *
 *   npm run bench:ab -- --a b7da065 --b fc3bd6b --bench ingest --rounds 3 --env BENCH_INGEST_LARGE=0
 *
 * Each commit is checked out in a detached throwaway worktree under
 * .bench-tmp/ab/ (`git worktree add --detach`; an existing one at the same
 * commit is reused) and gets `npm ci` unless its node_modules is there. Then
 * the benchmark (`tsx bench/<name>.ts` in that worktree, so each side runs
 * its own code and its own copy of the benchmark) runs alternately A, B, A,
 * B, … for the given rounds (`--order abba` swaps the order every other
 * round). Each run's JSON is read from its stdout and the figures the
 * benchmark's section of docs/benchmarks.md quotes are taken out of it
 * (bench/lib/ab.ts names them per benchmark; `--metric name=path` picks
 * others, for any benchmark). The result, on stdout as JSON: every round's
 * figures, the medians of each side, B/A of the medians, B/A within each
 * round, and whether B stays within the tolerance of A (default 5 %) on each
 * headline figure. A summary goes to stderr.
 *
 * Speeds on a shared machine move with its load: the two sides of a round
 * run back to back so both meet the same conditions, and a figure both sides
 * compute with the same code (ingest's bare-table ceiling, api's /health) is
 * reported as a control. Run it under `flock /work/.bench.lock`.
 *
 * The runs get BENCH_NO_DOC=1 (their docs stay as they are) and BENCH_KEEP=1
 * (a store a benchmark caches, such as bench:api's, is built once per side,
 * by that side's code, in an unmeasured preparing run where the benchmark has
 * one; it goes with the worktree). The worktrees are removed at the end
 * unless BENCH_KEEP=1 is set for bench:ab itself.
 *
 * Options: --a REF, --b REF (any commit-ish; the same commit twice measures
 * the noise), --bench NAME (repeatable or comma-separated: ingest, api, or
 * any bench/NAME.ts with --metric), --rounds N (3), --env KEY=VALUE
 * (repeatable, for every run), --metric NAME=PATH[|PATH] (repeatable; dot
 * path into the JSON, replaces the built-in figures; a NAME ending in Ms,
 * Seconds or Bytes is better lower), --order ab|abba (ab),
 * --tolerance FRACTION (0.05), --run-timeout-min M (30, per run).
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { BENCHES, extractJson, metricValue, parseEnvOption, parseMetricOption, sidesOfRound, summarise, type BenchSpec, type MetricSpec,
  type MetricSummary } from './lib/ab.js'
import { BENCH_KEEP, machineLine } from './lib/report.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const AB_DIR = path.join(ROOT, '.bench-tmp', 'ab')

const { values: opts } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    bench: { type: 'string', multiple: true },
    rounds: { type: 'string', default: '3' },
    env: { type: 'string', multiple: true, default: [] },
    metric: { type: 'string', multiple: true, default: [] },
    order: { type: 'string', default: 'ab' },
    tolerance: { type: 'string', default: '0.05' },
    'run-timeout-min': { type: 'string', default: '30' },
    help: { type: 'boolean', default: false }
  }
})

function usage (): string {
  return fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('*/')[0].replace(/^\/\*\*\n/, '').replace(/^ \* ?/gm, '')
}

if (opts.help) {
  process.stdout.write(usage())
  process.exit(0)
}

function fail (message: string): never {
  process.stderr.write(`bench:ab: ${message}\n`)
  process.exit(2)
}

if (opts.a === undefined || opts.b === undefined || opts.bench === undefined) fail('--a, --b and --bench are required (--help for the rest)')
const ROUNDS = Number(opts.rounds)
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) fail(`--rounds wants a positive integer, got ${opts.rounds}`)
if (opts.order !== 'ab' && opts.order !== 'abba') fail(`--order is ab or abba, got ${opts.order}`)
const ORDER = opts.order
const TOLERANCE = Number(opts.tolerance)
if (!(TOLERANCE >= 0 && TOLERANCE < 1)) fail(`--tolerance wants a fraction such as 0.05, got ${opts.tolerance}`)
const RUN_TIMEOUT_MS = Number(opts['run-timeout-min']) * 60_000
if (!(RUN_TIMEOUT_MS > 0)) fail(`--run-timeout-min wants minutes, got ${opts['run-timeout-min']}`)
const BENCH_NAMES = opts.bench.flatMap(b => b.split(',')).filter(b => b !== '')
const EXTRA_ENV = Object.fromEntries(opts.env.map(parseEnvOption))
const CUSTOM_METRICS = opts.metric.map(parseMetricOption)
for (const name of BENCH_NAMES) {
  if (!/^[\w-]+$/.test(name)) fail(`bad benchmark name ${name}`)
  if (BENCHES[name] === undefined && CUSTOM_METRICS.length === 0) fail(`bench ${name} has no built-in figures: name them with --metric NAME=PATH`)
}

// ------------------------------------------------------------------ git and worktrees

function git (...args: string[]): string {
  const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.trim()}`)
  return r.stdout.trim()
}

interface Side { label: 'a' | 'b', ref: string, commit: string, dir: string }

function resolveSide (label: 'a' | 'b', ref: string): Side {
  let commit: string
  try {
    commit = git('rev-parse', '--verify', `${ref}^{commit}`)
  } catch {
    fail(`--${label} ${ref} is not a commit of this repository`)
  }
  // The label is part of the folder, so A and B may be the same commit (an A/A run measures the noise).
  return { label, ref, commit, dir: path.join(AB_DIR, `${label}-${commit.slice(0, 12)}`) }
}

/** Runs a command with its output on stderr, each line prefixed; resolves with its stdout. */
async function run (cmd: string, args: string[], o: { cwd: string, env?: NodeJS.ProcessEnv, prefix: string, timeoutMs: number }): Promise<string> {
  // Its own process group, so a timeout ends the benchmark and whatever it spawned (bench:api's node).
  const child = spawn(cmd, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  current = child.pid
  let out = ''
  let partial = ''
  child.stdout.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr.on('data', (b: Buffer) => {
    const lines = (partial + b.toString()).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) process.stderr.write(`${o.prefix} ${line}\n`)
  })
  let timedOut = false
  const timer = setTimeout(() => { timedOut = true; killGroup(child.pid) }, o.timeoutMs)
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', resolve)
  }).finally(() => { clearTimeout(timer); current = undefined })
  if (partial !== '') process.stderr.write(`${o.prefix} ${partial}\n`)
  if (timedOut) throw new Error(`${cmd} ${args.join(' ')} in ${o.cwd}: no result within ${o.timeoutMs / 60_000} min`)
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${o.cwd} exited with ${code}`)
  return out
}

/** The process group of the run in progress, ended on a timeout or Ctrl-C. */
let current: number | undefined

function killGroup (pid: number | undefined): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, 'SIGTERM')
  } catch {
    // already gone
  }
}

async function prepareWorktree (side: Side): Promise<void> {
  const prefix = `[${side.label} ${side.commit.slice(0, 7)}]`
  if (fs.existsSync(side.dir)) {
    // A folder without its own .git file is not a worktree (git would answer for the enclosing checkout).
    const head = fs.existsSync(path.join(side.dir, '.git'))
      ? spawnSync('git', ['rev-parse', 'HEAD'], { cwd: side.dir, encoding: 'utf8' }).stdout.trim()
      : ''
    if (head !== side.commit) removeWorktree(side)
  }
  if (!fs.existsSync(side.dir)) {
    fs.mkdirSync(AB_DIR, { recursive: true })
    git('worktree', 'add', '--detach', side.dir, side.commit)
  }
  if (!fs.existsSync(path.join(side.dir, 'node_modules', '.package-lock.json'))) {
    process.stderr.write(`${prefix} npm ci\n`)
    await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: side.dir, prefix, timeoutMs: 15 * 60_000 })
  }
}

function removeWorktree (side: Side): void {
  try {
    git('worktree', 'remove', '--force', side.dir)
  } catch {
    fs.rmSync(side.dir, { recursive: true, force: true })
    git('worktree', 'prune')
  }
}

// ------------------------------------------------------------------ the rounds

function benchEnv (extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...EXTRA_ENV, BENCH_NO_DOC: '1', BENCH_KEEP: '1', ...extra }
}

async function runBench (side: Side, bench: string, env: NodeJS.ProcessEnv, tag: string): Promise<string> {
  const script = path.join('bench', `${bench}.ts`)
  if (!fs.existsSync(path.join(side.dir, script))) throw new Error(`${side.ref} (${side.commit.slice(0, 7)}) has no ${script}`)
  return await run(path.join(side.dir, 'node_modules', '.bin', 'tsx'), [script], {
    cwd: side.dir,
    env,
    prefix: `[${bench} ${tag} ${side.label} ${side.commit.slice(0, 7)}]`,
    timeoutMs: RUN_TIMEOUT_MS
  })
}

interface RoundRecord { round: number, order: string, a: Record<string, number>, b: Record<string, number>, seconds: { a: number, b: number },
  loadAverage1m: { a: number, b: number } }

async function measure (bench: string, sides: Record<'a' | 'b', Side>): Promise<{ bench: string, metrics: Record<string, MetricSummary>,
  rounds: RoundRecord[] }> {
  const spec: BenchSpec | undefined = BENCHES[bench]
  const metrics: MetricSpec[] = CUSTOM_METRICS.length > 0 || spec === undefined ? CUSTOM_METRICS : spec.metrics
  if (spec?.prepareEnv !== undefined) {
    for (const side of [sides.a, sides.b]) await runBench(side, bench, benchEnv(spec.prepareEnv), 'prepare')
  }
  const rounds: RoundRecord[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const order = sidesOfRound(ORDER, r)
    const record: RoundRecord = { round: r + 1, order: order.join('').toUpperCase(), a: {}, b: {}, seconds: { a: 0, b: 0 }, loadAverage1m: { a: 0, b: 0 } }
    for (const label of order) {
      record.loadAverage1m[label] = Math.round(os.loadavg()[0] * 100) / 100
      const t0 = performance.now()
      const json = extractJson(await runBench(sides[label], bench, benchEnv({}), `${r + 1}/${ROUNDS}`))
      record.seconds[label] = Math.round((performance.now() - t0) / 100) / 10
      for (const m of metrics) record[label][m.name] = Math.round(metricValue(json, m) * 100) / 100
    }
    process.stderr.write(`bench:ab ${bench} round ${r + 1}/${ROUNDS}: ${metrics.map(m => `${m.name} A ${record.a[m.name]} B ${record.b[m.name]}`).join(', ')}\n`)
    rounds.push(record)
  }
  const summary = Object.fromEntries(metrics.map(m => [m.name, summarise(m, rounds.map(x => x.a[m.name]), rounds.map(x => x.b[m.name]), TOLERANCE)]))
  return { bench, metrics: summary, rounds }
}

async function main (): Promise<void> {
  const sides = { a: resolveSide('a', opts.a ?? ''), b: resolveSide('b', opts.b ?? '') }
  const started = new Date()
  try {
    for (const side of [sides.a, sides.b]) await prepareWorktree(side)
    const results = []
    for (const bench of BENCH_NAMES) results.push(await measure(bench, sides))
    const headlines = results.flatMap(r => Object.entries(r.metrics).filter(([, m]) => m.headline).map(([name, m]) =>
      ({ bench: r.bench, name, ratio: m.ratio, withinTolerance: m.withinTolerance })))
    const json = {
      benchmark: 'ab',
      machine: machineLine(),
      started: started.toISOString(),
      minutes: Math.round((Date.now() - started.getTime()) / 6000) / 10,
      a: { ref: sides.a.ref, commit: sides.a.commit },
      b: { ref: sides.b.ref, commit: sides.b.commit },
      rounds: ROUNDS,
      order: ORDER,
      env: EXTRA_ENV,
      tolerance: TOLERANCE,
      results,
      gate: { holds: headlines.every(h => h.withinTolerance), headlines }
    }
    for (const r of results) {
      for (const [name, m] of Object.entries(r.metrics)) {
        process.stderr.write(`bench:ab ${r.bench} ${name}: A ${m.a.join(' ')} | B ${m.b.join(' ')} | medians ${m.medianA} → ${m.medianB}, B/A ${m.ratio} (per round ${m.roundRatios.join(' ')})${m.headline ? (m.withinTolerance ? ' within' : ' OUTSIDE') + ` ${TOLERANCE * 100} %` : ''}\n`)
      }
    }
    process.stdout.write(JSON.stringify(json, null, 2) + '\n')
  } finally {
    if (!BENCH_KEEP) {
      for (const side of [sides.a, sides.b]) removeWorktree(side)
      if (fs.existsSync(AB_DIR) && fs.readdirSync(AB_DIR).length === 0) fs.rmdirSync(AB_DIR)
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    // The finally in main does not run on a signal: end the run in progress; the worktrees stay for reuse.
    killGroup(current)
    process.stderr.write(`bench:ab: ${signal}; worktrees left in ${AB_DIR} (reused by the next run; git worktree remove to drop them)\n`)
    process.exit(130)
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:ab failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
