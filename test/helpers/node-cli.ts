/**
 * Runs the real `meta-core` command (`node bin/meta-core.js`, the package's
 * bin and what `npm start` runs) as a child process with a clean
 * environment, for node and e2e tests.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '../../src/common/index.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface Cli {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<number | null>
}

/** Starts the CLI with `args` and `env` added to a clean environment (none of our variables leak in from the test runner). */
export function runCli (args: string[], env: Record<string, string> = {}, opts: { cwd?: string } = {}): Cli {
  return runNodeScript([path.join(ROOT, 'bin', 'meta-core.js'), ...args], env, opts)
}

/**
 * `node <argv…>` with `env` added to a clean environment; with `wrap`, run
 * through that command (`ip netns exec <ns>`, which execs node in its place).
 */
export function runNodeScript (argv: string[], env: Record<string, string> = {}, opts: { cwd?: string, wrap?: string[] } = {}): Cli {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('META_CORE_') && k !== 'FILES_PATH' &&
    k !== 'ENABLE_FILE_WATCHER') base[k] = v
  const [cmd, ...args] = [...(opts.wrap ?? []), process.execPath, ...argv]
  const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout?.on('data', (b: Buffer) => { out += b.toString() })
  child.stderr?.on('data', (b: Buffer) => { err += b.toString() })
  const exited = new Promise<number | null>(resolve => { child.on('exit', code => { resolve(code) }) })
  return { child, stdout: () => out, stderr: () => err, exited }
}

/** Waits for the "listening on" line and returns the URL it names. */
export async function listeningUrl (cli: Cli): Promise<string> {
  await waitFor(() => /listening on (http:\/\/\S+)/.test(cli.stdout()) || cli.child.exitCode !== null, { timeoutMs: 30_000, what: `the node to listen (stderr: ${cli.stderr().slice(-500)})` })
  const m = /listening on (http:\/\/\S+)/.exec(cli.stdout())
  if (m === null) throw new Error(`node exited: ${cli.stderr()}`)
  return m[1]
}

/** Kills every CLI child still running and waits for each to exit (for afterEach). */
export async function reapClis (clis: Cli[]): Promise<void> {
  for (const c of clis.splice(0)) {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL')
    await c.exited
  }
}
