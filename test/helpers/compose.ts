/**
 * Reads `docker-compose.peers.yml` and the `Dockerfile` the way Docker would
 * (YAML with merge keys, `${VAR}` interpolation, the image's ENV, ENTRYPOINT
 * and CMD, volumes and published ports) and turns each service into a local
 * process plan: the same command and environment, with container paths
 * mapped to temp folders, the HTTP and p2p ports to free ports on
 * 127.0.0.1, and `/dns4/<service>/tcp/<port>` addresses to localhost. No
 * Docker engine runs on the development machines; this keeps the files
 * honest instead.
 */
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { DockerfileParser, Env, type Instruction } from 'dockerfile-ast'
import YAML from 'yaml'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** Where the Dockerfile puts the package in the image. */
const APP_DIR = '/app'
/** The p2p port a node listens on when META_CORE_P2P_LISTEN is not set (config.ts). */
const DEFAULT_P2P_PORT = 4001

export interface ComposeService {
  command?: string[]
  environment?: Record<string, string> | string[]
  ports?: string[]
  volumes?: string[]
  depends_on?: Record<string, { condition?: string }> | string[]
  healthcheck?: { test: string[] | string, interval?: string, timeout?: string, start_period?: string, retries?: number }
  restart?: string
  build?: unknown
  image?: string
}

export interface ComposeFile {
  name?: string
  services: Record<string, ComposeService>
  volumes?: Record<string, unknown>
}

/** Compose interpolation: `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`, `$$`. */
export function interpolate (value: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (m, name?: string, op?: string, arg?: string, bare?: string) => {
    if (m === '$$') return '$'
    const key = name ?? bare ?? ''
    const v = env[key]
    const unset = op?.startsWith(':') === true ? v === undefined || v === '' : v === undefined
    if (op === undefined) return v ?? ''
    if (op.endsWith('-')) return unset ? (arg ?? '') : (v ?? '')
    if (unset) throw new Error(`compose: ${key}: ${arg ?? 'required'}`)
    return v ?? ''
  })
}

function interpolateAll (x: unknown, env: Readonly<Record<string, string | undefined>>): unknown {
  if (typeof x === 'string') return interpolate(x, env)
  if (Array.isArray(x)) return x.map(v => interpolateAll(v, env))
  if (x !== null && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, interpolateAll(v, env)]))
  return x
}

export function readCompose (env: Readonly<Record<string, string | undefined>>, file = path.join(ROOT, 'docker-compose.peers.yml')): ComposeFile {
  const raw = YAML.parse(fs.readFileSync(file, 'utf8'), { merge: true }) as ComposeFile
  return interpolateAll(raw, env) as ComposeFile
}

export function readDockerfile (file = path.join(ROOT, 'Dockerfile')): Instruction[] {
  return DockerfileParser.parse(fs.readFileSync(file, 'utf8')).getInstructions()
}

/** The instructions of each stage, in order (a stage starts at its FROM). */
export function stages (instructions: Instruction[]): Instruction[][] {
  const out: Instruction[][] = []
  for (const i of instructions) {
    if (i.getKeyword() === 'FROM') out.push([])
    out[out.length - 1]?.push(i)
  }
  return out
}

/** A JSON-form instruction's argument list (ENTRYPOINT ["node", "x"]). */
export function execForm (i: Instruction): string[] {
  const text = i.getArgumentsContent() ?? ''
  const parsed = JSON.parse(text) as unknown
  if (!Array.isArray(parsed) || !parsed.every(x => typeof x === 'string')) throw new Error(`${i.getKeyword()} is not in exec form: ${text}`)
  return parsed
}

/** What the final image runs: ENTRYPOINT, CMD and ENV of its last stage. */
export function imageDefaults (): { entrypoint: string[], cmd: string[], env: Record<string, string> } {
  const last = stages(readDockerfile()).pop() ?? []
  const find = (k: string): Instruction | undefined => last.filter(i => i.getKeyword() === k).pop()
  const env: Record<string, string> = {}
  for (const i of last) {
    if (i instanceof Env) for (const p of i.getProperties()) env[p.getName()] = p.getValue() ?? ''
  }
  const entry = find('ENTRYPOINT')
  const cmd = find('CMD')
  return { entrypoint: entry === undefined ? [] : execForm(entry), cmd: cmd === undefined ? [] : execForm(cmd), env }
}

/** A free TCP port on 127.0.0.1 (closed again: the process about to start takes it). */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const a = s.address()
      const port = typeof a === 'object' && a !== null ? a.port : 0
      s.close(() => { resolve(port) })
    })
  })
}

export interface LocalPlan {
  service: string
  /** argv for `node`: the image's entrypoint with /app mapped to this checkout, then the command. */
  argv: string[]
  env: Record<string, string>
  /** Host side of each published port, by container port ("127.0.0.1:9001:9000" → 9000 → {host: 9001}). */
  published: Map<number, { hostIp: string | undefined, hostPort: number }>
  httpPort: number
  p2pPort: number
  /** The healthcheck's arguments to `node`, mapped the same way. */
  healthcheck: string[] | undefined
  dependsOn: Array<{ service: string, condition: string }>
}

/**
 * Local plans for every service. `volumeDir(name)` gives the host folder of a
 * named volume; `ports` the local HTTP and p2p port of each service.
 */
export function localPlans (compose: ComposeFile, volumeDir: (name: string) => string, ports: Map<string, { http: number, p2p: number }>): LocalPlan[] {
  const image = imageDefaults()
  return Object.entries(compose.services).map(([service, s]) => {
    const mounts = (s.volumes ?? []).map(v => {
      const [source, target] = v.split(':')
      if (compose.volumes === undefined || !(source in compose.volumes)) throw new Error(`${service}: ${source} is not a named volume of the file`)
      return { target, host: volumeDir(source) }
    })
    const hostPath = (p: string): string => {
      if (p === APP_DIR || p.startsWith(APP_DIR + '/')) return ROOT + p.slice(APP_DIR.length)
      for (const m of mounts) if (p === m.target || p.startsWith(m.target + '/')) return m.host + p.slice(m.target.length)
      return p
    }
    const own = ports.get(service) ?? { http: 0, p2p: 0 }
    const serviceEnv = Array.isArray(s.environment)
      ? Object.fromEntries(s.environment.map(e => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
      : (s.environment ?? {})
    const env: Record<string, string> = {}
    for (const [k, v] of Object.entries({ ...image.env, ...serviceEnv })) env[k] = mapValue(k, String(v), hostPath, ports)
    // The container's own network is all this host's loopback gets.
    if (env.META_CORE_HTTP_HOST === '0.0.0.0') env.META_CORE_HTTP_HOST = '127.0.0.1'
    const published = new Map<number, { hostIp: string | undefined, hostPort: number }>()
    for (const p of s.ports ?? []) {
      const parts = String(p).split(':')
      const containerPort = Number(parts.pop())
      const hostPort = Number(parts.pop())
      published.set(containerPort, { hostIp: parts.pop(), hostPort })
    }
    const containerHttp = Number(env.META_CORE_HTTP_PORT ?? '9000')
    if (published.size > 0) env.META_CORE_HTTP_PORT = String(own.http)
    if (env.META_CORE_SWARM_KEY !== undefined) env.META_CORE_P2P_LISTEN = `/ip4/127.0.0.1/tcp/${own.p2p}`
    const argv = [...image.entrypoint.slice(1), ...(s.command ?? image.cmd)].map(hostPath)
    const test = s.healthcheck?.test
    if (test !== undefined && (!Array.isArray(test) || test[0] !== 'CMD' || test[1] !== 'node')) throw new Error(`${service}: the healthcheck is not ["CMD", "node", …]`)
    const healthcheck = test === undefined ? undefined : test.slice(2).map(hostPath)
    const dependsOn = Array.isArray(s.depends_on)
      ? s.depends_on.map(d => ({ service: d, condition: 'service_started' }))
      : Object.entries(s.depends_on ?? {}).map(([d, c]) => ({ service: d, condition: c.condition ?? 'service_started' }))
    if (image.entrypoint[0] !== 'node') throw new Error(`the image's entrypoint is ${image.entrypoint.join(' ')}, not node`)
    return { service, argv, env, published, httpPort: published.has(containerHttp) ? own.http : 0, p2pPort: own.p2p, healthcheck, dependsOn }
  })
}

/** Container paths → host paths; `/dns4/<service>/tcp/<port>` → the service's local p2p port on localhost. */
function mapValue (key: string, value: string, hostPath: (p: string) => string, ports: Map<string, { http: number, p2p: number }>): string {
  if (key === 'META_CORE_BOOTSTRAP') {
    return value.split(',').map(a => {
      const m = /^\/dns4\/([^/]+)\/tcp\/(\d+)(\/p2p\/.+)?$/.exec(a.trim())
      if (m === null) return a
      const target = ports.get(m[1])
      if (target === undefined) throw new Error(`bootstrap address ${a} names no service of the file`)
      if (Number(m[2]) !== DEFAULT_P2P_PORT) throw new Error(`bootstrap address ${a} is not the port the peers listen on (${DEFAULT_P2P_PORT})`)
      return `/dns4/localhost/tcp/${target.p2p}${m[3] ?? ''}`
    }).join(',')
  }
  return value.startsWith('/') ? hostPath(value) : value
}
