/**
 * Benchmarks print one JSON object on stdout and rewrite their own section of
 * docs/benchmarks.md (between `<!-- bench:NAME -->` markers), so several
 * benchmarks share the file without touching each other's figures.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { statCpuMs } from './proc-cpu.js'

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/benchmarks.md')

export function machineLine (): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown cpu'
  return `${os.cpus().length} × ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`
}

export function report (name: string, json: unknown, markdown: string): void {
  process.stdout.write(JSON.stringify(json, null, 2) + '\n')
  if (process.env.BENCH_NO_DOC === '1') return
  const begin = `<!-- bench:${name} -->`
  const end = `<!-- /bench:${name} -->`
  const section = `${begin}\n${markdown.trim()}\n${end}`
  let doc = fs.existsSync(DOC) ? fs.readFileSync(DOC, 'utf8') : '# Benchmarks\n\nFigures from `npm run bench:*` on the machine named in each section. Speeds are quoted against a baseline measured in the same run where one exists, because the machine is shared and noisy.\n'
  const i = doc.indexOf(begin)
  const j = doc.indexOf(end)
  if (i >= 0 && j > i) doc = doc.slice(0, i) + section + doc.slice(j + end.length)
  else doc = doc.trimEnd() + '\n\n' + section + '\n'
  fs.writeFileSync(DOC, doc)
}

/** Percentile (0..100) of a numeric array (sorted copy). */
export function percentile (xs: number[], p: number): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))
  return s[i]
}

/**
 * BENCH_KEEP=1 keeps a benchmark's stores and generated files under
 * .bench-tmp/ (a later run reuses them); by default they are removed when
 * the benchmark finishes, so the shared disk does not fill up.
 */
export const BENCH_KEEP = process.env.BENCH_KEEP === '1'

export function removeUnlessKept (...paths: string[]): void {
  if (BENCH_KEEP) return
  for (const p of paths) fs.rmSync(p, { recursive: true, force: true })
}

/** CPU time (ms) of this process's main thread and of all its other threads together. */
export interface ThreadCpu { main: number, others: number }

/**
 * CPU time used so far by the main thread (from /proc, Linux only) and by
 * every other thread of the process (worker threads such as search's index
 * writer and the checkpointer, V8's helper threads, libuv's pool): the
 * process's total less the main thread's. Undefined where /proc is missing.
 * The main thread's figure moves in steps of 10 ms. Subtract two readings.
 */
export function threadCpu (): ThreadCpu | undefined {
  let main: number
  try {
    main = statCpuMs(`/proc/self/task/${process.pid}/stat`)
  } catch {
    return undefined
  }
  const u = process.cpuUsage()
  return { main, others: Math.max(0, Math.round((u.user + u.system) / 1000 - main)) }
}

/** `b - a`, or undefined when either reading is. */
export function cpuBetween (a: ThreadCpu | undefined, b: ThreadCpu | undefined): ThreadCpu | undefined {
  return a === undefined || b === undefined ? undefined : { main: b.main - a.main, others: b.others - a.others }
}
