/**
 * Mesh nodes as separate `meta-core` processes (`node bin/meta-core.js`)
 * over TCP on 127.0.0.1, for e2e tests: each with its own store under a
 * folder, a free HTTP and p2p port, the watcher off. The caller keeps the
 * `Cli`s and reaps them (reapClis) after each test.
 */
import fs from 'node:fs'
import path from 'node:path'
import { listeningUrl, reapClis, runCli, type Cli } from './node-cli.js'
import { tmpDir } from './tmp.js'

export interface MeshProcess { name: string, url: string, cli: Cli }

/** Starts node `name` (store under `<dir>/<name>`), joining the mesh of `key` through `bootstrap`; `clis` gets its process. */
export async function startMeshProcess (clis: Cli[], o: { name: string, dir: string, key: string, bootstrap?: string[], env?: Record<string, string>,
  args?: string[] }): Promise<MeshProcess> {
  const d = path.join(o.dir, o.name)
  fs.mkdirSync(d, { recursive: true })
  const bootstrap = o.bootstrap ?? []
  const cli = runCli([
    '--db-path', path.join(d, 'db', 'meta-core.db'),
    '--files-path', path.join(d, 'files'),
    '--http-port', '0',
    '--swarm-key', o.key,
    '--p2p-listen', '/ip4/127.0.0.1/tcp/0',
    '--enable-file-watcher', 'false',
    '--anti-entropy-ms', '1000',
    '--log-level', 'info',
    ...(bootstrap.length > 0 ? ['--bootstrap', bootstrap.join(',')] : []),
    ...(o.args ?? [])
  ], o.env ?? {})
  clis.push(cli)
  return { name: o.name, url: await listeningUrl(cli), cli }
}

/** One HTTP request to a node's API; the body parsed as JSON. */
export async function http (n: MeshProcess, method: string, url: string, body?: unknown): Promise<{ status: number, body: any }> {
  const r = await fetch(n.url + url, { method, headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await r.text()
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) }
}

/** The node's first listening p2p address (with its peer id). */
export async function p2pAddrOf (n: MeshProcess): Promise<string> {
  return (await http(n, 'GET', '/api/mesh')).body.self.addrs[0]
}

/** Stops the node with SIGTERM and waits for it to exit. */
export async function stopProcess (n: MeshProcess): Promise<void> {
  n.cli.child.kill('SIGTERM')
  await n.cli.exited
}

/** One test's processes and folder: pass `cleanup` to afterEach (every process reaped, the folder removed). */
export function processTestState (prefix: string): { clis: Cli[], dir: () => string, cleanup: () => Promise<void> } {
  const clis: Cli[] = []
  let tmp: ReturnType<typeof tmpDir> | undefined
  return {
    clis,
    dir: () => (tmp ??= tmpDir(prefix)).dir,
    cleanup: async () => {
      await reapClis(clis)
      tmp?.cleanup()
      tmp = undefined
    }
  }
}
