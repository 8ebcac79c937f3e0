/**
 * wrk (https://github.com/wg/wrk, Debian package `wrk`) as a load generator:
 * a C client that spends far less CPU per request than a Node.js one, which
 * matters on a two-core machine where client and server share the cores.
 * Benchmarks use it when it is installed and fall back to autocannon.
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

export interface LoadFigures { requestsPerSecond: number, p50Ms: number, p90Ms: number, p99Ms: number, maxMs: number, total: number, non2xx: number,
  errors: number }

/** wrk's version line, or undefined when wrk is not on PATH. */
export function wrkVersion (): string | undefined {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' })
  if (r.error !== undefined) return undefined
  return /wrk \S+/.exec(`${r.stdout}${r.stderr}`)?.[0]
}

/** A Lua script that requests a path drawn at random (seeded) from `paths` per request. */
export function writeRandomPathScript (file: string, paths: string[], seed: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const list = paths.map(p => JSON.stringify(p)).join(',\n')
  fs.writeFileSync(file, `local paths = {\n${list}\n}\nlocal n = #paths\nmath.randomseed(${seed})\n` +
    'request = function() return wrk.format("GET", paths[math.random(n)]) end\n')
}

function ms (value: string, unit: string): number {
  const x = Number(value)
  if (unit === 'us') return x / 1000
  if (unit === 's') return x * 1000
  if (unit === 'm') return x * 60_000
  return x
}

/** Parses wrk's `--latency` report. */
function parseWrk (out: string): LoadFigures {
  const pct = (p: string): number => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out)
    if (m === null) throw new Error(`wrk output has no ${p}% line:\n${out}`)
    return Math.round(ms(m[1], m[2]) * 100) / 100
  }
  const total = /(\d+) requests in/.exec(out)
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)
  const lat = /Latency\s+[\d.]+\w+\s+[\d.]+\w+\s+([\d.]+)(us|ms|s|m)/.exec(out)
  if (total === null || rps === null || lat === null) throw new Error(`cannot read wrk output:\n${out}`)
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  return {
    requestsPerSecond: Math.round(Number(rps[1])),
    p50Ms: pct('50'),
    p90Ms: pct('90'),
    p99Ms: pct('99'),
    maxMs: Math.round(ms(lat[1], lat[2]) * 100) / 100,
    total: Number(total[1]),
    non2xx,
    errors: sock === null ? 0 : sock.slice(1).reduce((a, b) => a + Number(b), 0)
  }
}

/** One wrk run: one thread (the other core is the server's), `connections` keep-alive connections. */
export async function wrk (url: string, opts: { connections: number, seconds: number, script?: string }): Promise<LoadFigures> {
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', '--timeout', '10s']
  if (opts.script !== undefined) args.push('-s', opts.script)
  args.push(url)
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (b: Buffer) => { out += b.toString() })
  const code = await new Promise<number | null>(resolve => child.on('exit', resolve))
  if (code !== 0) throw new Error(`wrk exited with ${code}:\n${out}`)
  return parseWrk(out)
}
