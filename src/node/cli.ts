/**
 * The `meta-core` command (package bin `bin/meta-core.js`, `npm start`):
 *
 *   meta-core [start] [options]   run a node (the default)
 *   meta-core keygen <path>       write a new swarm key
 *   meta-core id                  this node's peer id and p2p addresses
 *   meta-core status              ask a running node for its health, records and mesh
 *   meta-core invite              print an invite to this node's mesh (a secret: it holds the key)
 *   meta-core join <invite>       join a mesh from an invite and run the node (start --invite)
 *   meta-core help [command]      (or --help after any command)
 *
 * Exit codes: 0 done, 1 failed (a failed start, an unreachable node), 2 bad
 * usage or configuration (every problem listed at once).
 */
import { ConfigError, OPTIONS, parseConfig, RETIRED_OPTIONS, usage, type NodeConfig } from './config.js'
import { inviteUsage, printInvite } from './invite-command.js'
import { applyInvite, InviteApplyError } from './mesh-folder.js'
import { idUsage, keygen, keygenUsage, printId } from './keys-commands.js'
import { parseOptions, unknownVariables } from './options.js'
import { PortUnavailableError } from './port-check.js'
import type { Output } from './run-node.js'
import { defaultNodeUrl, fetchStatus, formatStatus, meshProblem, STATUS_OPTIONS, StatusError, statusUsage } from './status-command.js'

const COMMANDS = ['start', 'keygen', 'id', 'status', 'invite', 'join', 'help'] as const
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
    '  invite    print an invite to this node\'s mesh: one line holding its key and addresses (a secret)',
    '  join      join a mesh from an invite and run the node: meta-core join <invite> [start options]',
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
    case 'invite': return inviteUsage()
    case 'join': return joinUsage()
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
  if (cmd === 'start' || cmd === 'join' || cmd === 'invite' || cmd === 'id' || cmd === 'status') warnUnknownVariables(env, io)
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
      case 'invite':
        return await printInvite(args, env, io)
      case 'join': {
        if (args[0] === '--help' || args[0] === '-h') { io.out(joinUsage() + '\n'); return 0 }
        const given = args[0] !== undefined && !args[0].startsWith('-')
        if (!given && env.META_CORE_INVITE === undefined && !args.some(a => a === '--invite' || a.startsWith('--invite='))) {
          io.err(`meta-core join: give the invite (meta-core invite prints one on a node of the mesh)\n\n${joinUsage()}\n`)
          return 2
        }
        return await start(given ? ['--invite', args[0], ...args.slice(1)] : args, env, io)
      }
      case 'start': {
        if (args.length === 1 && (args[0] === '--help' || args[0] === '-h') && first !== 'start') {
          io.out(cliUsage() + '\n\n' + usage() + '\n')
          return 0
        }
        return await start(args, env, io)
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

function joinUsage (): string {
  return [
    'Usage: meta-core join <invite> [start options]',
    '',
    'Joins the mesh an invite is for (meta-core invite prints one on a node of it) and runs the node:',
    'the invite\'s swarm key and addresses are written beside the store (<db name>.swarm.key and',
    '<db name>.bootstrap), so later starts need no option to stay in the mesh. The same as',
    'meta-core start --invite <invite>. A node already in another mesh is refused.',
    '',
    'Options: those of meta-core start --help.'
  ].join('\n')
}

/** `start`: parses the options, applies an invite given, and runs the node. */
async function start (args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Output): Promise<number> {
  const parsed = await parseConfig(args, env)
  if (parsed.kind === 'help') {
    io.out(parsed.text + '\n')
    return 0
  }
  let config: NodeConfig = parsed.config
  const invite = config.invite
  if (invite !== undefined) {
    try {
      const applied = applyInvite(invite, config.dbPath, config.swarmKeyPath, config.bootstrap)
      config = { ...config, swarmKeyPath: applied.swarmKeyPath, bootstrap: applied.bootstrap }
      io.out(`joining the mesh of the invite${invite.name === undefined ? '' : ` from ${invite.name}`}: swarm key ${applied.wroteKey ? 'written to' : 'already in'} ${applied.swarmKeyPath}, ${applied.added} address${applied.added === 1 ? '' : 'es'} added to ${applied.bootstrapFile}\n`)
    } catch (err) {
      if (!(err instanceof InviteApplyError)) throw err
      io.err(`meta-core: ${err.message}\n`)
      return 1
    }
  }
  // Loaded only to start a node: the other commands need none of the store, search or libp2p.
  const { runNode } = await import('./run-node.js')
  return await runNode(config, io)
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
