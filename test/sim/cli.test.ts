import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-sim-')
afterAll(() => { tmp.cleanup() })

function sim (args: string[]): { status: number | null, stdout: string, stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', ...args], { encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('npm run sim', () => {
  it('--help lists every scenario and option', () => {
    const r = sim(['--help'])
    expect(r.status).toBe(0)
    for (const s of ['baseline', 'partition-heal', 'fresh-join', 'return-after-absence', 'clock-skew', 'bad-peer', 'same-content-twice',
      'scale']) expect(r.stdout).toContain(s)
    for (const f of ['--nodes', '--latency', '--seed', '--out', '--partition-every', '--real']) expect(r.stdout).toContain(f)
  })

  it('refuses bad options with exit code 2 and a clear message', () => {
    for (const [args, msg] of [
      [['--nodes', 'many'], /--nodes/],
      [['--scenario', 'nope'], /unknown scenario/],
      [['--latency', 'fast'], /invalid latency/],
      [['--bogus', '1'], /unknown option --bogus/],
      [['--gossip-d', '2', '--gossip-dlo', '3'], /Dlo <= D/]
    ] as const) {
      const r = sim([...args])
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stderr).toMatch(msg)
    }
  })

  it('runs a scenario, writes report.json, report.html and timing.json, and prints the report path', () => {
    const out = path.join(tmp.dir, 'run')
    const r = sim(['--scenario', 'baseline', '--nodes', '5', '--latency', '50', '--seed', '3', '--warmup', '2', '--duration', '2', '--tail', '3', '--quiet',
      '--out', out])
    expect(r.status, r.stderr).toBe(0)
    const lines = r.stdout.trim().split('\n')
    expect(lines[lines.length - 1]).toBe(path.join(out, 'report.html'))
    const rep = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8')) as Record<string, unknown>
    for (const k of ['scenario', 'seed', 'nodes', 'converged', 'lostWrites', 'forgedApplied', 'messagesPerOp', 'bytesPerWrite',
      'latencyMs']) expect(rep).toHaveProperty(k)
    expect(rep.nodes).toBe(5)
    expect(rep.seed).toBe('3')
    const html = fs.readFileSync(path.join(out, 'report.html'), 'utf8')
    expect(html).toContain('<svg')
    expect(html).not.toMatch(/<script|src="http/) // self-contained
    const timing = JSON.parse(fs.readFileSync(path.join(out, 'timing.json'), 'utf8')) as { runs: Array<{ wallMs: number }> }
    expect(timing.runs[0].wallMs).toBeGreaterThan(0)
  })

  it('exits within seconds of its report when a preloaded joiner is still copying the range as the run ends', async () => {
    // A joiner of 1,500 preloaded records over slow uplinks: the records reach it through its range copy and its other
    // peers' rounds, and the copy still goes through the rest of the range when the run ends. Its stopped core used to
    // ask again and again for ever, in promises alone, holding a core and the process.
    const out = path.join(tmp.dir, 'copying')
    const child = spawn(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--scenario', 'fresh-join', '--nodes', '3', '--preload', '1500', '--record-shape',
      'library',
      '--bandwidth', '0.02', '--request-timeout', '3600000', '--warmup', '1', '--duration', '2', '--join-at', '1', '--tail', '1', '--seed', '5', '--quiet',
        '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString() })
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString() })
    let code: number | null | undefined
    child.on('exit', (c) => { code = c })
    try {
      await waitFor(() => stdout.includes(path.join(out, 'report.html')) || code !== undefined, { timeoutMs: 60_000, what: `the report (stderr: ${stderr.slice(-300)})` })
      expect(fs.existsSync(path.join(out, 'report.html'))).toBe(true)
      await waitFor(() => code !== undefined, { timeoutMs: 10_000, what: 'the simulator to exit after its report' })
      expect(code, stderr).toBe(0)
    } finally {
      if (code === undefined) child.kill('SIGKILL')
    }
  }, 90_000)
})
