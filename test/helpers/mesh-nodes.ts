/**
 * Real nodes in one process for mesh end-to-end tests: the whole node
 * (store, search, mesh over libp2p TCP on 127.0.0.1, watcher, HTTP API on
 * 127.0.0.1) started through `startNode` with a configuration parsed from
 * flags, as `npm start` would.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createLogger, silentLogger, waitFor, type Logger } from '../../src/common/index.js'
import { writeNewSwarmKey } from '../../src/mesh/libp2p/index.js'
import { parseConfig, startNode, type RunningNode } from '../../src/node/index.js'
import { tmpDir } from './tmp.js'

export interface MeshNodeOptions {
  /** Folder of this node (store, identity key, library). Reusing it restarts the same node. */
  dir: string
  swarmKey: string
  bootstrap?: string[]
  watcher?: boolean
  antiEntropyMs?: number
  settleMs?: number
  streamRetention?: number
  /** False: the node's joins take the page path, never the bulk path. */
  bulkJoin?: boolean
  trimEvery?: number
  extraFlags?: string[]
  /** Where the node logs (default: nowhere), at the level of `--log-level` in extraFlags. */
  logger?: Logger
  /** Collects the node's log lines (debug and up) here; without it the node logs nothing. */
  logLines?: string[]
}

export async function startMeshNode (o: MeshNodeOptions): Promise<RunningNode> {
  fs.mkdirSync(o.dir, { recursive: true })
  const argv = [
    '--db-path', path.join(o.dir, 'db', 'meta-core.db'),
    '--files-path', path.join(o.dir, 'files'),
    '--http-port', '0',
    '--swarm-key', o.swarmKey,
    '--p2p-listen', '/ip4/127.0.0.1/tcp/0',
    '--enable-file-watcher', String(o.watcher ?? false),
    '--settle-ms', String(o.settleMs ?? 100),
    '--anti-entropy-ms', String(o.antiEntropyMs ?? 1_000),
    '--log-level', 'silent',
    ...(o.bootstrap !== undefined && o.bootstrap.length > 0 ? ['--bootstrap', o.bootstrap.join(',')] : []),
    ...(o.extraFlags ?? [])
  ]
  const parsed = await parseConfig(argv, {})
  if (parsed.kind !== 'config') throw new Error('expected a configuration')
  const lines = o.logLines
  const logger = o.logger ?? (lines === undefined ? silentLogger : createLogger({ level: 'debug', write: l => { lines.push(l) } }))
  return await startNode(parsed.config, { logger, streamRetention: o.streamRetention, trimEvery: o.trimEvery,
    ...(o.bulkJoin === undefined ? {} : { bulkJoin: o.bulkJoin }) })
}

/** Waits until a node started with `logLines` has logged at least `n` failed dials of its bootstrap peers (peer-dialer.ts). */
export async function waitDialFailures (lines: readonly string[], n: number, timeoutMs = 15_000): Promise<void> {
  const attempts = (): number => Math.max(0, ...lines.filter(l => l.includes('cannot reach peer')).map(l => Number(/attempt=(\d+)/.exec(l)?.[1] ?? 0)))
  await waitFor(() => attempts() >= n, { timeoutMs, what: `${n} failed dials of a bootstrap peer` })
}

/**
 * Nodes and a temp folder a test file starts, stopped and removed by
 * `cleanup` (for afterEach): `nodes` is what is running now.
 */
export function meshTestState (): { nodes: RunningNode[], dir: () => string, cleanup: () => Promise<void> } {
  let tmp: ReturnType<typeof tmpDir> | undefined
  const state = {
    nodes: [] as RunningNode[],
    dir: () => { tmp ??= tmpDir('mc-e2e-'); return tmp.dir },
    cleanup: async () => {
      for (const n of state.nodes.splice(0)) await n.stop()
      tmp?.cleanup()
      tmp = undefined
    }
  }
  return state
}

/** A fresh swarm key file in `dir`. */
export function swarmKeyIn (dir: string, name = 'swarm.key'): string {
  const file = path.join(dir, name)
  writeNewSwarmKey(file)
  return file
}

/** The node's p2p address (listening, with /p2p/<peerId>). */
export function p2pAddr (n: RunningNode): string {
  const a = n.mesh.status().self.addrs[0]
  if (a === undefined) throw new Error('node has no p2p address')
  return a
}

export async function getJson<T = any> (n: RunningNode, url: string, init?: RequestInit): Promise<{ status: number, body: T }> {
  const headers = init?.body === undefined ? init?.headers : { 'content-type': 'application/json', ...(init.headers ?? {}) }
  const r = await fetch(n.url + url, { ...init, headers })
  const text = await r.text()
  return { status: r.status, body: (text === '' ? undefined : JSON.parse(text)) as T }
}

export async function send (n: RunningNode, method: string, url: string, body?: unknown): Promise<{ status: number, body: any }> {
  return await getJson(n, url, { method, body: body === undefined ? undefined : JSON.stringify(body) })
}

export async function digest (n: RunningNode): Promise<string> {
  return (await getJson<{ digest: string }>(n, '/api/mesh/digest')).body.digest
}

/** Waits until every node reports the same digest (over HTTP). */
export async function waitConverged (nodes: RunningNode[], timeoutMs = 20_000, what = 'the nodes to converge'): Promise<string> {
  let last: string[] = []
  await waitFor(async () => {
    last = await Promise.all(nodes.map(digest))
    return new Set(last).size === 1
  }, { timeoutMs, what: `${what} (digests ${last.join(' ')})`, intervalMs: 100 })
  return last[0]
}

/** Waits until every node is connected to `count` peers. */
export async function waitConnected (nodes: RunningNode[], count: number, timeoutMs = 15_000): Promise<void> {
  await waitFor(() => nodes.every(n => n.mesh.status().peers.filter(p => p.connected).length >= count),
    { timeoutMs, what: `every node connected to ${count} peers`, intervalMs: 50 })
}

/** Two connected nodes named `names` (the second bootstrapping from the first), on one fresh swarm key, added to `state`. */
export async function startNamedPair (state: ReturnType<typeof meshTestState>, names: [string,
  string]): Promise<{ a: RunningNode, b: RunningNode, key: string }> {
  const key = swarmKeyIn(state.dir())
  const a = await startMeshNode({ dir: path.join(state.dir(), 'a'), swarmKey: key, extraFlags: ['--node-name', names[0]] })
  state.nodes.push(a)
  const b = await startMeshNode({ dir: path.join(state.dir(), 'b'), swarmKey: key, bootstrap: [p2pAddr(a)], extraFlags: ['--node-name', names[1]] })
  state.nodes.push(b)
  await waitConnected([a, b], 1)
  return { a, b, key }
}
