/**
 * One option parser for the node and every subcommand: each option is an
 * environment variable and a `--flag` (flags win), converted and checked by
 * its kind, and every problem is collected so an operator fixes a bad
 * command line in one round. config.ts holds the node's table; the
 * subcommands (cli.ts) add their own few.
 */
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { parseSwarmKey } from '../mesh/libp2p/swarm-key.js'

export type Kind =
  | { type: 'path' }
  | { type: 'optpath' }
  | { type: 'swarmkey' }
  | { type: 'multiaddrs', dial: boolean }
  | { type: 'peerids' }
  | { type: 'host' }
  | { type: 'label', max: number }
  | { type: 'secret' }
  | { type: 'invite' }
  | { type: 'url' }
  | { type: 'int', min: number, max: number }
  | { type: 'bool' }
  | { type: 'list' }
  | { type: 'enum', values: readonly string[] }
  /** A comma-separated subset of `values`, or the word `none` for the empty set. */
  | { type: 'subset', values: readonly string[] }

export interface OptionSpec<K extends string = string> {
  key: K
  /** The environment variable; absent for a switch that only makes sense on a command line (`--json`). */
  env?: string
  flag: string
  aliases?: string[]
  kind: Kind
  /** Raw default, parsed like any other value; undefined = unset. */
  def: string | undefined
  help: string
}

interface ParsedOptions<K extends string> {
  values: Partial<Record<K, unknown>>
  /** Options set by a flag or a variable (not by their default). */
  explicit: Set<K>
  problems: string[]
  /** `--help` or `-h` was given. */
  help: boolean
  /**
   * Parsed without AddressChecks, a multiaddr or peer id option was given:
   * its value is not checked. Parse again with the checks (parseChecked).
   */
  addressChecksNeeded: boolean
}

/**
 * The mesh's checks of multiaddrs and peer ids (mesh/libp2p/addresses.ts).
 * They load libp2p's parsers, about a third of a second of a node's start,
 * so a command loads them only when it is given such an option: a
 * standalone node, `status` and `keygen` start without them.
 */
interface AddressChecks {
  isPeerId: (id: string) => boolean
  multiaddrProblem: (a: string, dial: boolean) => string | undefined
}

export async function loadAddressChecks (): Promise<AddressChecks> {
  return await import('../mesh/libp2p/addresses.js')
}

/** parseOptions, with the address checks loaded when an option needs them. */
export async function parseChecked<K extends string> (specs: ReadonlyArray<OptionSpec<K>>, argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>, cwd: string): Promise<ParsedOptions<K>> {
  const r = parseOptions(specs, argv, env, cwd)
  return r.addressChecksNeeded ? parseOptions(specs, argv, env, cwd, await loadAddressChecks()) : r
}

/** How an option is named in messages: its variable and its flag. */
export function optionName (o: OptionSpec): string {
  return o.env === undefined ? `--${o.flag}` : `${o.env} (--${o.flag})`
}

/**
 * Parses `argv` (options only: a subcommand was taken off already) over
 * `env`. Never throws: problems are returned, each naming the option, the
 * bad value (a secret is never shown) and where it came from. Multiaddrs
 * and peer ids are checked with `checks`; without them a given one is left
 * unchecked (`addressChecksNeeded`), and a default one is taken as it is
 * (the tables' defaults are valid: test/node/config.test.ts).
 */
export function parseOptions<K extends string> (specs: ReadonlyArray<OptionSpec<K>>, argv: readonly string[], env: Readonly<Record<string, string | undefined>>,
  cwd: string, checks?: AddressChecks): ParsedOptions<K> {
  const problems: string[] = []
  const fromFlags = new Map<OptionSpec<K>, { value: string, used: string }>()
  const byFlag = new Map<string, OptionSpec<K>>()
  let help = false
  for (const o of specs) for (const f of [o.flag, ...(o.aliases ?? [])]) byFlag.set(f, o)

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--help' || arg === '-h') { help = true; continue }
    if (!arg.startsWith('--')) {
      // An invite pasted where it does not go: said without its text, which holds a mesh's key.
      problems.push(arg.replace(/\s+/g, '').startsWith('meta-core-invite.')
        ? 'unexpected argument: an invite (not shown: it holds the mesh\'s key); give it as meta-core join <invite> or --invite <invite>'
        : `unexpected argument ${JSON.stringify(arg)} (options are --name value or --name=value)`)
      continue
    }
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

  const values: Partial<Record<K, unknown>> = {}
  const explicit = new Set<K>()
  let addressChecksNeeded = false
  for (const o of specs) {
    const flag = fromFlags.get(o)
    const envValue = o.env === undefined ? undefined : env[o.env]
    // An empty environment variable means "unset" (compose files often pass VAR= ); only a list gives empty a meaning.
    const raw = flag?.value ?? (envValue === '' && o.kind.type !== 'list' ? undefined : envValue) ?? o.def
    const source = flag !== undefined ? flag.used : envValue !== undefined && raw === envValue ? o.env : 'default'
    if (source !== 'default') explicit.add(o.key)
    if (checks === undefined && source !== 'default' && (o.kind.type === 'multiaddrs' || o.kind.type === 'peerids') &&
      listOf(raw).length > 0) addressChecksNeeded = true
    const r = convert(o.kind, raw, cwd, checks)
    // A token is never echoed, even a malformed one.
    const shown = o.kind.type === 'secret' || o.kind.type === 'invite' ? '(value hidden)' : JSON.stringify(raw)
    if (typeof r === 'object' && r !== null && 'problem' in r) problems.push(`invalid ${optionName(o)} ${shown} from ${source}: ${(r as { problem: string }).problem}`)
    else values[o.key] = r
  }
  return { values, explicit, problems, help, addressChecksNeeded }
}

function isBoolWord (s: string | undefined): boolean {
  return s !== undefined && /^(true|false|1|0|yes|no|on|off)$/i.test(s)
}

function convert (kind: Kind, raw: string | undefined, cwd: string, checks: AddressChecks | undefined): unknown {
  switch (kind.type) {
    case 'secret':
      if (raw === undefined) return undefined
      if (!/^[\x21-\x7e]+$/.test(raw)) return { problem: 'must be printable ASCII without spaces (it travels in an Authorization header)' }
      return raw
    case 'invite':
      // Read by the node's configuration (invite.ts), which says what is wrong with one; never echoed.
      return raw
    case 'path':
      if (raw === undefined || raw.trim() === '') return { problem: 'must be a path' }
      if (raw.includes('\u0000')) return { problem: 'contains a NUL character' }
      return path.resolve(cwd, raw)
    case 'optpath':
      return raw === undefined ? undefined : convert({ type: 'path' }, raw, cwd, checks)
    case 'swarmkey': {
      if (raw === undefined) return undefined
      const file = convert({ type: 'path' }, raw, cwd, checks)
      if (typeof file !== 'string') return file
      let text: string
      try {
        text = fs.readFileSync(file, 'utf8')
      } catch (err) {
        return { problem: `cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` }
      }
      if (parseSwarmKey(text) === undefined) return { problem: 'is not a swarm key (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits; meta-core keygen <path> writes one)' }
      return file
    }
    case 'multiaddrs':
      return multiaddrList(raw, kind.dial, checks)
    case 'peerids': {
      const list = listOf(raw)
      for (const id of list) {
        if (checks !== undefined && !checks.isPeerId(id)) return { problem: `${JSON.stringify(id.slice(0, 80))} is not a peer id` }
      }
      return list
    }
    case 'label':
      // A name for people, shown in terminals and pages: no control characters that could rewrite a line.
      if (raw === undefined) return undefined
      if (raw.trim() === '' || raw.length > kind.max || /\p{Cc}/u.test(raw)) return { problem: `must be 1 to ${kind.max} characters without control characters` }
      return raw.trim()
    case 'host':
      if (raw === undefined || raw === '') return { problem: 'must be an IP address or host name' }
      if (net.isIP(raw) === 0 && !/^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(raw)) {
        return { problem: 'must be an IP address or host name' }
      }
      return raw
    case 'url': {
      if (raw === undefined) return undefined
      let u: URL
      try {
        u = new URL(raw)
      } catch {
        return { problem: 'must be a URL like http://127.0.0.1:9000' }
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return { problem: 'must be an http:// or https:// URL' }
      return u.origin + u.pathname.replace(/\/+$/, '')
    }
    case 'int': {
      if (raw === undefined || !/^\d{1,16}$/.test(raw.trim())) return { problem: `must be an integer from ${kind.min} to ${kind.max}` }
      const n = Number(raw.trim())
      if (n < kind.min || n > kind.max) return { problem: `must be an integer from ${kind.min} to ${kind.max}` }
      return n
    }
    case 'bool':
      // No default: unset (the node's configuration decides, as for META_CORE_MDNS).
      if (raw === undefined) return undefined
      if (/^(true|1|yes|on)$/i.test(raw)) return true
      if (/^(false|0|no|off)$/i.test(raw)) return false
      return { problem: 'must be true or false' }
    case 'list':
      return listOf(raw)
    case 'enum':
      if (raw === undefined || !kind.values.includes(raw)) return { problem: `must be one of ${kind.values.join(', ')}` }
      return raw
    case 'subset': {
      const list = listOf(raw)
      if (list.length === 1 && list[0] === 'none') return []
      if (list.length === 0 || list.some(x => !kind.values.includes(x))) return { problem: `must be a comma-separated list of ${kind.values.join(', ')}, or none` }
      return [...new Set(list)]
    }
  }
}

/** The items of a comma-separated list, trimmed, empty ones left out. */
function listOf (raw: string | undefined): string[] {
  return (raw ?? '').split(',').map(x => x.trim()).filter(x => x !== '')
}

/** A comma-separated list of TCP multiaddrs (mesh/libp2p/addresses.ts says what a usable one is; unchecked without `checks`). */
function multiaddrList (raw: string | undefined, dial: boolean, checks: AddressChecks | undefined): string[] | { problem: string } {
  const list = listOf(raw)
  for (const a of list) {
    const problem = checks?.multiaddrProblem(a, dial)
    if (problem !== undefined) return { problem }
  }
  return list
}

/** Loopback: `localhost`, 127.0.0.0/8, ::1 (and IPv4-mapped 127.x). */
export function isLoopback (host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h === '::1') return true
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h
  return net.isIPv4(v4) && v4.startsWith('127.')
}

/** The prefix of the variables the node reads (FILES_PATH and ENABLE_FILE_WATCHER are the original's names). */
const VARIABLE_PREFIX = 'META_CORE_'

/**
 * `META_CORE_*` variables set in `env` that no option of `specs` reads (a
 * typo, or an option this version does not have), each with the known
 * variable nearest to it by edit distance. Known names come from the option
 * tables only, so an option added to a table is known with it.
 */
export function unknownVariables (env: Readonly<Record<string, string | undefined>>, specs: readonly OptionSpec[]): Array<{ name: string, nearest: string }> {
  const known = [...new Set(specs.flatMap(o => o.env === undefined ? [] : [o.env]))]
  const out: Array<{ name: string, nearest: string }> = []
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(VARIABLE_PREFIX) || known.includes(name) || env[name] === undefined) continue
    let nearest = known[0] ?? ''
    let best = Infinity
    for (const k of known) {
      const d = editDistance(name, k)
      if (d < best) { best = d; nearest = k }
    }
    out.push({ name, nearest })
  }
  return out
}

/** Levenshtein distance (insertions, deletions, substitutions), two rows at a time. */
function editDistance (a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    prev = cur
  }
  return prev[b.length]
}

/** `--help` lines for a table of options. */
export function optionLines (specs: readonly OptionSpec[]): string[] {
  const lines: string[] = []
  for (const o of specs) {
    const flags = [o.flag, ...(o.aliases ?? [])].map(f => `--${f}`).join(', ')
    lines.push(`  ${flags}${o.kind.type === 'bool' ? '' : ' <value>'}`)
    const def = o.def === undefined ? '' : `default ${o.def === '' ? '""' : o.def}`
    const head = [o.env, def === '' ? '' : o.env === undefined ? def : `(${def})`].filter(x => x !== undefined && x !== '').join(' ')
    if (head !== '') lines.push(`      ${head}`)
    lines.push(`      ${o.help}`)
  }
  return lines
}
