/**
 * Starting and stopping as a user does it: SIGTERM and SIGINT to the PID
 * that `npm start` and `npx meta-core` return stop the node (real npm and
 * npx processes, whose `sh -c` would otherwise leave the node running under
 * PID 1), and a taken HTTP or p2p port (held by another socket here) fails
 * the start with one line naming the port before any store or identity key
 * is created.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { runCli } from '../../src/node/cli.js'
import { ROOT } from '../helpers/compose.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-startstop-')
afterAll(() => { tmp.cleanup() })

/** Every process below `pid`, read from /proc (the node npm starts is a grandchild). */
function descendants (pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)])
    } catch { /* gone meanwhile */ }
  }
  const out: number[] = []
  const walk = (p: number): void => { for (const c of children.get(p) ?? []) { out.push(c); walk(c) } }
  walk(pid)
  return out
}

function alive (pid: number): boolean {
  try {
    // A zombie still answers signal 0; its /proc state says Z.
    process.kill(pid, 0)
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

const leftover: number[] = []
afterEach(() => {
  // A node that outlived its launcher (the defect under test) must not outlive the test.
  for (const pid of leftover.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL')
})

function launch (cmd: string, args: string[], extra: Record<string, string> = {}): { child: ChildProcess, out: () => string } {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('META_CORE_') && !k.startsWith('npm_') &&
    k !== 'FILES_PATH') env[k] = v
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr?.on('data', (b: Buffer) => { out += b.toString() })
  return { child, out: () => out }
}

describe('stopping the PID a launcher returns', () => {
  const node = (d: string): string[] => ['--port', '0', '--db-path', path.join(d, 'db'), '--files-path', path.join(d, 'files')]
  const npmStart = (d: string): string[] => ['start', '--silent', '--', ...node(d)]
  const npx = (d: string): string[] => ['--no', '--', 'meta-core', ...node(d)]
  const cases: Array<{ name: string, cmd: string, args: (dir: string) => string[], sig: NodeJS.Signals, env?: Record<string, string> }> = [
    { name: 'npm start, SIGTERM', cmd: 'npm', args: npmStart, sig: 'SIGTERM' },
    { name: 'npm start, SIGINT', cmd: 'npm', args: npmStart, sig: 'SIGINT' },
    { name: 'npx meta-core, SIGTERM', cmd: 'npx', args: npx, sig: 'SIGTERM' },
    { name: 'npx meta-core, SIGINT', cmd: 'npx', args: npx, sig: 'SIGINT' },
    // Without the project's .npmrc (script-shell=bash): dash stays between npm and the node, and dies of the
    // SIGTERM npm forwards; the node sees its launcher gone (src/node/launcher-watch.ts).
    { name: 'npx meta-core through dash, SIGTERM', cmd: 'npx', args: npx, sig: 'SIGTERM', env: { npm_config_script_shell: '/bin/sh' } }
  ]
  for (const c of cases) {
    it(`${c.name}: the node stops, its store is closed, and its port is free`, async () => {
      const dir = fs.mkdtempSync(path.join(tmp.dir, 'n-'))
      const run = launch(c.cmd, c.args(dir), c.env)
      await waitFor(() => /listening on http:\/\/\S+/.test(run.out()) || run.child.exitCode !== null, { timeoutMs: 60_000, what: `${c.name} to listen (${run.out().slice(-400)})` })
      const url = /listening on (http:\/\/\S+)/.exec(run.out())?.[1]
      expect(url, run.out()).toBeDefined()
      const below = descendants(run.child.pid!)
      leftover.push(...below)
      expect(below.length).toBeGreaterThan(0)
      run.child.kill(c.sig)
      await waitFor(() => below.every(p => !alive(p)), { timeoutMs: 15_000, what: `every process started by ${c.name} to exit` })
      // It stopped as on SIGTERM (store closed, "stopped" logged), not killed; the pipe may deliver the line after the exit.
      await waitFor(() => /\] stopped/.test(run.out()), { timeoutMs: 5_000, what: `the node's "stopped" line (${run.out().slice(-300)})` })
      await expect(fetch(url! + '/health')).rejects.toThrow()
    }, 90_000)
  }
})

async function holdPort (): Promise<{ port: number, close: () => Promise<void> }> {
  const server = net.createServer()
  await new Promise<void>(resolve => { server.listen({ host: '127.0.0.1', port: 0 }, resolve) })
  const port = (server.address() as net.AddressInfo).port
  return { port, close: async () => { await new Promise<void>(resolve => { server.close(() => { resolve() }) }) } }
}

async function cli (argv: string[]): Promise<{ code: number, out: string, err: string }> {
  let out = ''
  let err = ''
  const code = await runCli(argv, {}, { out: (t) => { out += t }, err: (t) => { err += t } })
  return { code, out, err }
}

describe('a port another program holds', () => {
  it('HTTP: one line naming the port and what to do, and no store, key or library folder made', async () => {
    const held = await holdPort()
    try {
      const dir = path.join(tmp.dir, 'http-busy')
      const r = await cli(['--port', String(held.port), '--db-path', path.join(dir, 'data', 'meta-core.db'), '--files-path', path.join(dir, 'files')])
      expect(r.code).toBe(1)
      expect(r.err.trim().split('\n')).toEqual([
        `meta-core: HTTP port ${held.port} on 127.0.0.1 is already in use (another meta-core node or another program): stop that program, or choose another with META_CORE_HTTP_PORT (--http-port)`
      ])
      expect(fs.existsSync(dir)).toBe(false)
    } finally {
      await held.close()
    }
  })

  it('p2p: the same, instead of libp2p\'s internals', async () => {
    const held = await holdPort()
    try {
      const dir = path.join(tmp.dir, 'p2p-busy')
      const keyFile = path.join(tmp.dir, 'swarm.key')
      expect((await cli(['keygen', keyFile])).code).toBe(0)
      const listen = `/ip4/127.0.0.1/tcp/${held.port}`
      const r = await cli(['--port', '0', '--swarm-key', keyFile, '--p2p-listen', listen, '--db-path', path.join(dir, 'data', 'meta-core.db'), '--files-path',
        path.join(dir, 'files')])
      expect(r.code).toBe(1)
      expect(r.err.trim().split('\n')).toEqual([
        `meta-core: p2p port ${held.port} on 127.0.0.1 is already in use (another meta-core node or another program): stop that program, or choose another in META_CORE_P2P_LISTEN (--p2p-listen), now ${listen}`
      ])
      expect(r.err).not.toMatch(/faultTolerance|at .*\.js/)
      expect(fs.existsSync(dir)).toBe(false)
    } finally {
      await held.close()
    }
  })
})
