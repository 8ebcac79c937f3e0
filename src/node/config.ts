/**
 * Node configuration: every option is an environment variable and a
 * matching `--flag` (flags win), validated once at start. All problems are
 * reported together, each naming both spellings, so an operator fixes a bad
 * deployment in one round.
 */
import net from 'node:net'
import path from 'node:path'
import { MetaCoreError, type LogLevel } from '../common/index.js'

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
}

/** The configuration cannot be used; the message says what to change. */
export class ConfigError extends MetaCoreError {
  constructor (message: string) {
    super('invalid_config', message)
  }
}

type Kind =
  | { type: 'path' }
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
  { key: 'logLevel', env: 'META_CORE_LOG_LEVEL', flag: 'log-level', kind: { type: 'enum', values: LOG_LEVELS }, def: 'info', help: `one of ${LOG_LEVELS.join(', ')}` }
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
  for (const o of OPTIONS) {
    const flag = fromFlags.get(o)
    const flagValue = flag?.value
    const envValue = env[o.env]
    // An empty environment variable means "unset" (compose files often pass VAR= ); only the exclude list gives empty a meaning.
    const raw = flagValue ?? (envValue === '' && o.kind.type !== 'list' ? undefined : envValue) ?? o.def
    const source = flag !== undefined ? flag.used : envValue !== undefined && raw === envValue ? o.env : 'default'
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
