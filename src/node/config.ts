/**
 * Node configuration: every option is an environment variable and a
 * matching `--flag` (flags win), validated once at start. All problems are
 * reported together, each naming both spellings, so an operator fixes a bad
 * deployment in one round.
 */
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { MetaCoreError, type LogLevel } from '../common/index.js'
import { isPeerId, multiaddrProblem } from '../mesh/libp2p/addresses.js'
import { parseSwarmKey } from '../mesh/libp2p/swarm-key.js'

export interface NodeConfig {
  dbPath: string
  httpHost: string
  httpPort: number
  apiToken: string | undefined
  filesPath: string
  enableFileWatcher: boolean
  rescanIntervalMs: number
  settleMs: number
  hashConcurrency: number
  indexExcludePrefixes: string[]
  logLevel: LogLevel
  /** pnet swarm key file; unset: standalone (no p2p port). */
  swarmKeyPath: string | undefined
  /** The node's identity key file (defaults beside the store: `<db folder>/<db name>.key`). */
  keyPath: string
  p2pListen: string[]
  bootstrap: string[]
  blockedPeers: string[]
  antiEntropyMs: number
  maxClockDriftMs: number
}

/** The configuration cannot be used; the message says what to change. */
export class ConfigError extends MetaCoreError {
  constructor (message: string) {
    super('invalid_config', message)
  }
}

type Kind =
  | { type: 'path' }
  | { type: 'optpath' }
  | { type: 'swarmkey' }
  | { type: 'multiaddrs', peer: boolean }
  | { type: 'peerids' }
  | { type: 'host' }
  | { type: 'secret' }
  | { type: 'int', min: number, max: number }
  | { type: 'bool' }
  | { type: 'list' }
  | { type: 'enum', values: readonly string[] }

interface OptionSpec {
  key: keyof NodeConfig
  env: string
  flag: string
  aliases?: string[]
  kind: Kind
  /** Raw default, parsed like any other value; undefined = unset. */
  def: string | undefined
  help: string
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
/** The multiaddr the mesh listens on when a swarm key is set and META_CORE_P2P_LISTEN is not. */
const DEFAULT_P2P_LISTEN = '/ip4/0.0.0.0/tcp/4001'

/** The agreed option table; the order is the order of `--help`. */
export const OPTIONS: readonly OptionSpec[] = [
  { key: 'dbPath', env: 'META_CORE_DB_PATH', flag: 'db-path', kind: { type: 'path' }, def: './data/meta-core.db', help: 'SQLite store file (created with its folder if missing)' },
  { key: 'httpHost', env: 'META_CORE_HTTP_HOST', flag: 'http-host', aliases: ['host'], kind: { type: 'host' }, def: '127.0.0.1', help: 'address the API listens on; a non-loopback address needs META_CORE_API_TOKEN' },
  { key: 'httpPort', env: 'META_CORE_HTTP_PORT', flag: 'http-port', aliases: ['port'], kind: { type: 'int', min: 0, max: 65535 }, def: '9000', help: 'API port (0 picks a free one; the real port is printed)' },
  { key: 'apiToken', env: 'META_CORE_API_TOKEN', flag: 'api-token', kind: { type: 'secret' }, def: undefined, help: 'bearer token every write and internal read needs (unset: no auth, loopback only)' },
  { key: 'filesPath', env: 'FILES_PATH', flag: 'files-path', kind: { type: 'path' }, def: './files', help: 'library folder: watched, and the only place file bytes are served from' },
  { key: 'enableFileWatcher', env: 'ENABLE_FILE_WATCHER', flag: 'enable-file-watcher', kind: { type: 'bool' }, def: 'true', help: 'watch FILES_PATH for changes (false: only POST /api/files/register records files)' },
  { key: 'rescanIntervalMs', env: 'META_CORE_RESCAN_INTERVAL_MS', flag: 'rescan-interval-ms', kind: { type: 'int', min: 1000, max: 7 * 24 * 3_600_000 }, def: '300000', help: 'periodic safety-net rescan of FILES_PATH, in ms' },
  { key: 'settleMs', env: 'META_CORE_SETTLE_MS', flag: 'settle-ms', kind: { type: 'int', min: 0, max: 3_600_000 }, def: '2000', help: 'a file is hashed once its size and mtime held still this long, in ms' },
  { key: 'hashConcurrency', env: 'META_CORE_HASH_CONCURRENCY', flag: 'hash-concurrency', kind: { type: 'int', min: 1, max: 64 }, def: '4', help: 'files hashed at once' },
  { key: 'indexExcludePrefixes', env: 'META_CORE_INDEX_EXCLUDE_PREFIXES', flag: 'index-exclude-prefixes', kind: { type: 'list' }, def: 'categories/newznab/', help: 'comma-separated field prefixes left out of search (explicit empty: exclude nothing)' },
  { key: 'logLevel', env: 'META_CORE_LOG_LEVEL', flag: 'log-level', kind: { type: 'enum', values: LOG_LEVELS }, def: 'info', help: `one of ${LOG_LEVELS.join(', ')}` },
  { key: 'swarmKeyPath', env: 'META_CORE_SWARM_KEY', flag: 'swarm-key', kind: { type: 'swarmkey' }, def: undefined, help: 'swarm key file of the private mesh to join (unset: standalone, no p2p port; npm start -- keygen <path> writes one)' },
  { key: 'keyPath', env: 'META_CORE_KEY_PATH', flag: 'key-path', kind: { type: 'optpath' }, def: undefined, help: 'this node\'s identity key file, created on first start with mode 0600 (default beside the store: <db folder>/<db name>.key)' },
  { key: 'p2pListen', env: 'META_CORE_P2P_LISTEN', flag: 'p2p-listen', kind: { type: 'multiaddrs', peer: false }, def: DEFAULT_P2P_LISTEN, help: 'comma-separated multiaddrs the mesh listens on (port 0 binds a free port; GET /api/mesh shows it)' },
  { key: 'bootstrap', env: 'META_CORE_BOOTSTRAP', flag: 'bootstrap', kind: { type: 'multiaddrs', peer: true }, def: '', help: 'comma-separated multiaddrs of peers to keep connected, each ending in /p2p/<peerId>' },
  { key: 'blockedPeers', env: 'META_CORE_BLOCKED_PEERS', flag: 'blocked-peers', kind: { type: 'peerids' }, def: '', help: 'comma-separated peer ids whose connections, frames and pulls are refused' },
  { key: 'antiEntropyMs', env: 'META_CORE_ANTI_ENTROPY_MS', flag: 'anti-entropy-ms', kind: { type: 'int', min: 100, max: 3_600_000 }, def: '15000', help: 'each peer is pulled from about this often (jittered), in ms' },
  { key: 'maxClockDriftMs', env: 'META_CORE_MAX_CLOCK_DRIFT_MS', flag: 'max-clock-drift-ms', kind: { type: 'int', min: 0, max: 3_600_000 }, def: '10000', help: 'remote versions further ahead of this node\'s clock are refused, in ms' }
]

export type ParseResult = { kind: 'config', config: NodeConfig } | { kind: 'help', text: string }

/**
 * Parses `argv` (without node and the script) over `env`. Throws ConfigError
 * listing every problem. `--help` returns the usage text instead.
 */
export function parseConfig (argv: readonly string[], env: Readonly<Record<string, string | undefined>>, cwd = process.cwd()): ParseResult {
  const problems: string[] = []
  const fromFlags = new Map<OptionSpec, { value: string, used: string }>()
  const byFlag = new Map<string, OptionSpec>()
  for (const o of OPTIONS) for (const f of [o.flag, ...(o.aliases ?? [])]) byFlag.set(f, o)

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--help' || arg === '-h') return { kind: 'help', text: usage() }
    if (!arg.startsWith('--')) { problems.push(`unexpected argument ${JSON.stringify(arg)} (options are --name value or --name=value)`); continue }
    const eq = arg.indexOf('=')
    const name = arg.slice(2, eq < 0 ? undefined : eq)
    const spec = byFlag.get(name)
    if (spec === undefined) { problems.push(`unknown option --${name} (see --help)`); continue }
    let value: string
    if (eq >= 0) value = arg.slice(eq + 1)
    else if (spec.kind.type === 'bool' && !isBoolWord(argv[i + 1])) value = 'true' // a bare boolean flag turns it on
    else if (i + 1 < argv.length) value = argv[++i]
    else { problems.push(`--${name} needs a value`); continue }
    fromFlags.set(spec, { value, used: `--${name}` })
  }

  const out: Partial<Record<keyof NodeConfig, unknown>> = {}
  const explicit = new Set<keyof NodeConfig>()
  for (const o of OPTIONS) {
    const flag = fromFlags.get(o)
    const flagValue = flag?.value
    const envValue = env[o.env]
    // An empty environment variable means "unset" (compose files often pass VAR= ); only the exclude list gives empty a meaning.
    const raw = flagValue ?? (envValue === '' && o.kind.type !== 'list' ? undefined : envValue) ?? o.def
    const source = flag !== undefined ? flag.used : envValue !== undefined && raw === envValue ? o.env : 'default'
    if (source !== 'default') explicit.add(o.key)
    const name = `${o.env} (--${o.flag})`
    const r = convert(o.kind, raw, cwd)
    // A token is never echoed, even a malformed one.
    const shown = o.kind.type === 'secret' ? '(value hidden)' : JSON.stringify(raw)
    if (typeof r === 'object' && r !== null && 'problem' in r) problems.push(`invalid ${name} ${shown} from ${source}: ${r.problem}`)
    else out[o.key] = r
  }

  const host = out.httpHost as string | undefined
  if (host !== undefined && !isLoopback(host) && out.apiToken === undefined) {
    problems.push(`META_CORE_HTTP_HOST (--http-host) ${host} is not a loopback address: set META_CORE_API_TOKEN (--api-token) to listen on it, or use 127.0.0.1`)
  }
  if (out.swarmKeyPath === undefined) {
    for (const k of ['p2pListen', 'bootstrap', 'blockedPeers'] as const) {
      const o = OPTIONS.find(x => x.key === k)!
      if (explicit.has(k) && (out[k] as string[] | undefined)?.length !== 0) problems.push(`${o.env} (--${o.flag}) needs META_CORE_SWARM_KEY (--swarm-key): without a swarm key the node runs standalone`)
    }
  }
  if (out.keyPath === undefined && typeof out.dbPath === 'string') {
    out.keyPath = path.join(path.dirname(out.dbPath), path.basename(out.dbPath, path.extname(out.dbPath)) + '.key')
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'))
  return { kind: 'config', config: out as unknown as NodeConfig }
}

function isBoolWord (s: string | undefined): boolean {
  return s !== undefined && /^(true|false|1|0|yes|no|on|off)$/i.test(s)
}

function convert (kind: Kind, raw: string | undefined, cwd: string): unknown {
  switch (kind.type) {
    case 'secret':
      if (raw === undefined) return undefined
      if (!/^[\x21-\x7e]+$/.test(raw)) return { problem: 'must be printable ASCII without spaces (it travels in an Authorization header)' }
      return raw
    case 'path':
      if (raw === undefined || raw.trim() === '') return { problem: 'must be a path' }
      if (raw.includes('\u0000')) return { problem: 'contains a NUL character' }
      return path.resolve(cwd, raw)
    case 'optpath':
      return raw === undefined ? undefined : convert({ type: 'path' }, raw, cwd)
    case 'swarmkey': {
      if (raw === undefined) return undefined
      const file = convert({ type: 'path' }, raw, cwd)
      if (typeof file !== 'string') return file
      let text: string
      try {
        text = fs.readFileSync(file, 'utf8')
      } catch (err) {
        return { problem: `cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` }
      }
      if (parseSwarmKey(text) === undefined) return { problem: 'is not a swarm key (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits; npm start -- keygen <path> writes one)' }
      return file
    }
    case 'multiaddrs': {
      const list = (raw ?? '').split(',').map(x => x.trim()).filter(x => x !== '')
      for (const a of list) {
        const problem = multiaddrProblem(a, kind.peer)
        if (problem !== undefined) return { problem }
      }
      return list
    }
    case 'peerids': {
      const list = (raw ?? '').split(',').map(x => x.trim()).filter(x => x !== '')
      for (const id of list) {
        if (!isPeerId(id)) return { problem: `${JSON.stringify(id.slice(0, 80))} is not a peer id` }
      }
      return list
    }
    case 'host':
      if (raw === undefined || raw === '') return { problem: 'must be an IP address or host name' }
      if (net.isIP(raw) === 0 && !/^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(raw)) {
        return { problem: 'must be an IP address or host name' }
      }
      return raw
    case 'int': {
      if (raw === undefined || !/^\d{1,16}$/.test(raw.trim())) return { problem: `must be an integer from ${kind.min} to ${kind.max}` }
      const n = Number(raw.trim())
      if (n < kind.min || n > kind.max) return { problem: `must be an integer from ${kind.min} to ${kind.max}` }
      return n
    }
    case 'bool':
      if (raw !== undefined && /^(true|1|yes|on)$/i.test(raw)) return true
      if (raw !== undefined && /^(false|0|no|off)$/i.test(raw)) return false
      return { problem: 'must be true or false' }
    case 'list':
      return (raw ?? '').split(',').map(s => s.trim()).filter(s => s !== '')
    case 'enum':
      if (raw === undefined || !kind.values.includes(raw)) return { problem: `must be one of ${kind.values.join(', ')}` }
      return raw
  }
}

/** Loopback: `localhost`, 127.0.0.0/8, ::1 (and IPv4-mapped 127.x). */
export function isLoopback (host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h === '::1') return true
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h
  return net.isIPv4(v4) && v4.startsWith('127.')
}

export function usage (): string {
  const lines = [
    'Usage: npm start -- [options]      (or: tsx src/node/main.ts [options])',
    '',
    'Runs a meta-core node: the store, search, the file watcher and the HTTP API.',
    'Every option is an environment variable and a flag; flags win. Values are checked at start.',
    ''
  ]
  for (const o of OPTIONS) {
    const flags = [o.flag, ...(o.aliases ?? [])].map(f => `--${f}`).join(', ')
    lines.push(`  ${flags} <value>`)
    lines.push(`      ${o.env}${o.def === undefined ? '' : ` (default ${o.def === '' ? '""' : o.def})`}`)
    lines.push(`      ${o.help}`)
  }
  lines.push('  -h, --help', '      this text')
  return lines.join('\n')
}

/**
 * What the file system says about the configured paths, checked at start
 * before anything is created: FILES_PATH must be a folder (or not exist
 * yet), the store path must not be a folder, and the folders on the way to
 * either must not be files. Returns the problems, each naming the option;
 * empty when both can be used.
 */
export function pathProblems (config: Pick<NodeConfig, 'filesPath' | 'dbPath'>): string[] {
  const problems: string[] = []
  const kind = (p: string): 'dir' | 'file' | 'none' | 'blocked' => {
    try {
      return fs.statSync(p).isDirectory() ? 'dir' : 'file'
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOTDIR' ? 'blocked' : 'none'
    }
  }
  /** The nearest existing ancestor of `p`, when it is a file: then `p` can never be created. */
  const fileAbove = (p: string): string | undefined => {
    for (let d = path.dirname(p); d !== path.dirname(d); d = path.dirname(d)) {
      const k = kind(d)
      if (k === 'file') return d
      if (k === 'dir') return undefined
    }
    return undefined
  }
  const files = kind(config.filesPath)
  if (files === 'file') problems.push(`FILES_PATH (--files-path) ${config.filesPath} is a file, not a folder: name the library folder (it is created if missing)`)
  else if (files !== 'dir') {
    const above = fileAbove(config.filesPath)
    if (above !== undefined) problems.push(`FILES_PATH (--files-path) ${config.filesPath} cannot be created: ${above} is a file, not a folder`)
  }
  const db = kind(config.dbPath)
  if (db === 'dir') problems.push(`META_CORE_DB_PATH (--db-path) ${config.dbPath} is a folder: name the store file (for example ${path.join(config.dbPath, 'meta-core.db')})`)
  else if (db !== 'file') {
    const above = fileAbove(config.dbPath)
    if (above !== undefined) problems.push(`META_CORE_DB_PATH (--db-path) ${config.dbPath} cannot be created: ${above} is a file, not a folder`)
  }
  return problems
}
