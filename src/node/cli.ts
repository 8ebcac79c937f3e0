/**
 * The `meta-core` command (package bin `bin/meta-core.js`, `npm start`):
 *
 *   meta-core [start] [options]   run a node (the default)
 *   meta-core keygen <path>       write a new swarm key
 *   meta-core id                  this node's peer id and p2p addresses
 *   meta-core status              ask a running node for its health, records and mesh
 *   meta-core help [command]      (or --help after any command)
 *
 * Exit codes: 0 done, 1 failed (a failed start, an unreachable node), 2 bad
 * usage or configuration (every problem listed at once).
 */
import { ConfigError, OPTIONS, parseConfig, RETIRED_OPTIONS, usage } from './config.js'
import { idUsage, keygen, keygenUsage, printId } from './keys-commands.js'
import { parseOptions, unknownVariables } from './options.js'
import { PortUnavailableError } from './port-check.js'
import type { Output } from './run-node.js'
import { defaultNodeUrl, fetchStatus, formatStatus, meshProblem, STATUS_OPTIONS, StatusError, statusUsage } from './status-command.js'

const COMMANDS = ['start', 'keygen', 'id', 'status', 'help'] as const
type Command = typeof COMMANDS[number]

function cliUsage (): string {
  return [
    'Usage: meta-core <command> [options]     (npx meta-core … from a clone; npm start -- … runs the same)',
    '',
    'Commands:',
    '  start     run a node: store, search, file watcher, mesh, HTTP API (the default)',
    '  keygen    write a new swarm key for a private mesh',
    '  id        print this node\'s peer id and p2p addresses from its identity key',
    '  status    ask a running node for its health, record count and mesh peers (--json for scripts)',
    '  help      this text, or a command\'s: meta-core help status',
    '',
    'meta-core <command> --help lists the command\'s options.'
  ].join('\n')
}

function helpOf (cmd: Command): string {
  switch (cmd) {
    case 'start': return usage()
    case 'keygen': return keygenUsage()
    case 'id': return idUsage()
    case 'status': return statusUsage()
    case 'help': return cliUsage()
  }
}

export async function runCli (argv: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Output): Promise<number> {
  const first = argv[0]
  // No command, or options first: start (what `npm start -- --port 0` has always meant).
  const cmd: string = first === undefined || first.startsWith('-') ? 'start' : first
  const args = first === undefined || first.startsWith('-') ? argv : argv.slice(1)
  if (!(COMMANDS as readonly string[]).includes(cmd)) {
    io.err(`meta-core: unknown command ${JSON.stringify(cmd)}\n\n${cliUsage()}\n`)
    return 2
  }
  // The commands that read the environment name a variable none of their tables know (a typo is otherwise silently ignored).
  if (cmd === 'start' || cmd === 'id' || cmd === 'status') warnUnknownVariables(env, io)
  try {
    switch (cmd as Command) {
      case 'help': {
        const about = args[0]
        if (about !== undefined && !(COMMANDS as readonly string[]).includes(about)) {
          io.err(`meta-core: unknown command ${JSON.stringify(about)}\n\n${cliUsage()}\n`)
          return 2
        }
        io.out(helpOf((about ?? 'help') as Command) + '\n')
        return 0
      }
      case 'keygen':
        return keygen(args, io)
      case 'id':
        return await printId(args, env, io)
      case 'status':
        return await status(args, env, io)
      case 'start': {
        if (args.length === 1 && (args[0] === '--help' || args[0] === '-h') && first !== 'start') {
          io.out(cliUsage() + '\n\n' + usage() + '\n')
          return 0
        }
        const parsed = await parseConfig(args, env)
        if (parsed.kind === 'help') {
          io.out(parsed.text + '\n')
          return 0
        }
        // Loaded only to start a node: the other commands need none of the store, search or libp2p.
        const { runNode } = await import('./run-node.js')
        return await runNode(parsed.config, io)
      }
    }
  } catch (err) {
    if (err instanceof PortUnavailableError) {
      io.err(err.message.split('\n').map(l => `meta-core: ${l}\n`).join(''))
      return 1
    }
    if (err instanceof ConfigError) {
      io.err(`meta-core: bad configuration:\n${err.message.split('\n').map(l => `  - ${l}`).join('\n')}\n`)
      return 2
    }
    throw err
  }
}

/**
 * Every table's variables are known to every command: a variable for `status` in the shell that starts a node is no typo.
 * A retired option is known too: the configuration warns of it in its own words.
 */
function warnUnknownVariables (env: Readonly<Record<string, string | undefined>>, io: Output): void {
  const retired = RETIRED_OPTIONS.map(o => o.env)
  for (const u of unknownVariables(env, [...OPTIONS, ...STATUS_OPTIONS]).filter(u => !retired.includes(u.name))) {
    io.err(`meta-core: warning: ${u.name} is not a meta-core variable and is ignored (did you mean ${u.nearest}?)\n`)
  }
}

async function status (args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Output): Promise<number> {
  const { values, problems, help } = parseOptions(STATUS_OPTIONS, args, env, process.cwd())
  if (help) { io.out(statusUsage() + '\n'); return 0 }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'))
  const url = (values.url as string | undefined) ?? defaultNodeUrl(values.httpHost as string, values.httpPort as number)
  try {
    const report = await fetchStatus(url, values.apiToken as string | undefined, values.timeoutMs as number)
    io.out((values.json === true ? JSON.stringify(report, null, 2) : formatStatus(report)) + '\n')
    const problem = meshProblem(report)
    if (problem !== undefined && values.json === true) io.err(`meta-core status: ${problem}\n`)
    return report.health.status === 'ok' && problem === undefined ? 0 : 1
  } catch (err) {
    if (err instanceof StatusError) {
      io.err(`meta-core status: ${err.message}\n`)
      return 1
    }
    throw err
  }
}
