/**
 * `meta-core keygen` (a new swarm key) and `meta-core id` (this node's peer
 * id and p2p addresses, read from its identity key file).
 */
import fs from 'node:fs'
import { MeshKeyError } from '../mesh/libp2p/errors.js'
import { newSwarmKeyText, parseSwarmKey, writeNewSwarmKey } from '../mesh/libp2p/swarm-key.js'
import { ConfigError, parseNodeOptions } from './config.js'
import { optionLines, type OptionSpec } from './options.js'
import type { Output } from './run-node.js'

const KEYGEN_OPTIONS: ReadonlyArray<OptionSpec<'ifMissing'>> = [
  { key: 'ifMissing', flag: 'if-missing', kind: { type: 'bool' }, def: 'false', help: 'when <path> already holds a swarm key, keep it and exit 0 (a deployment\'s first-start step); anything else there is still an error' }
]

const ID_OPTIONS: ReadonlyArray<OptionSpec<'create' | 'json'>> = [
  { key: 'create', flag: 'create', kind: { type: 'bool' }, def: 'false',
    help: 'create the identity key when it does not exist yet (a node creates it on first start otherwise)' },
  { key: 'json', flag: 'json', kind: { type: 'bool' }, def: 'false', help: 'print {peerId, keyPath, addrs, swarmKey} as JSON' }
]

export function keygenUsage (): string {
  return [
    'Usage: meta-core keygen [--if-missing] <path>     (or - for standard output)',
    '',
    'Writes a new swarm key (mode 0600), never over an existing file. Every node of a mesh',
    'needs a copy of the same key (META_CORE_SWARM_KEY); a node with another key cannot connect.',
    '',
    ...optionLines(KEYGEN_OPTIONS),
    '  -h, --help',
    '      this text'
  ].join('\n')
}

export function idUsage (): string {
  return [
    'Usage: meta-core id [--create] [--json] [node options]',
    '',
    'Prints this node\'s peer id and p2p addresses, from its identity key file',
    '(META_CORE_KEY_PATH, default beside the store) and META_CORE_P2P_LISTEN. Takes the',
    'same options and variables as start, so it reads the key a node with them would use.',
    'Listen addresses with port 0 get their real port only when the node runs (GET /api/mesh).',
    '',
    ...optionLines(ID_OPTIONS),
    '  (and every option of meta-core start --help)'
  ].join('\n')
}

export function keygen (args: readonly string[], io: Output): number {
  const flags = args.filter(a => a.startsWith('--') || a === '-h')
  const paths = args.filter(a => !flags.includes(a))
  if (flags.includes('--help') || flags.includes('-h')) { io.out(keygenUsage() + '\n'); return 0 }
  const unknown = flags.filter(f => f !== '--if-missing')
  if (unknown.length > 0 || paths.length !== 1) {
    io.err(`${unknown.map(f => `meta-core keygen: unknown option ${f}\n`).join('')}${keygenUsage()}\n`)
    return 2
  }
  const file = paths[0]
  if (file === '-') {
    io.out(newSwarmKeyText())
    return 0
  }
  if (flags.includes('--if-missing') && fs.existsSync(file)) {
    let text = ''
    try {
      text = fs.readFileSync(file, 'utf8')
    } catch (err) {
      io.err(`meta-core: cannot read ${file}: ${(err as Error).message}\n`)
      return 1
    }
    if (parseSwarmKey(text) === undefined) {
      io.err(`meta-core: ${file} exists and is not a swarm key: move it away\n`)
      return 1
    }
    io.out(`kept the swarm key in ${file}\n`)
    return 0
  }
  try {
    writeNewSwarmKey(file)
  } catch (err) {
    if (err instanceof MeshKeyError) {
      io.err(`meta-core: ${err.message}\n`)
      return 1
    }
    throw err
  }
  io.out(`wrote a new swarm key to ${file}: give every node of the mesh a copy (META_CORE_SWARM_KEY)\n`)
  return 0
}

export async function printId (args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Output): Promise<number> {
  const r = await parseNodeOptions(ID_OPTIONS, args, env, process.cwd())
  if (r.help) { io.out(idUsage() + '\n'); return 0 }
  if (r.problems.length > 0) throw new ConfigError(r.problems.join('\n'))
  const { keyPath, p2pListen, swarmKeyPath } = r.config
  const exists = fs.existsSync(keyPath)
  if (!exists && r.extra.create !== true) {
    io.err(`meta-core: no identity key at ${keyPath} yet: a node creates it on first start (with a swarm key), or run meta-core id --create\n`)
    return 1
  }
  let peerId: string
  try {
    // Loaded here: the node's other commands (and its start) do without libp2p's key code.
    const { prepareIdentity } = await import('../mesh/libp2p/identity.js')
    const prepared = await prepareIdentity(keyPath)
    prepared.persist()
    peerId = prepared.identity.peerId
  } catch (err) {
    if (err instanceof MeshKeyError) { io.err(`meta-core: ${err.message}\n`); return 1 }
    throw err
  }
  const addrs = p2pListen.map(a => `${a}/p2p/${peerId}`)
  if (r.extra.json === true) {
    io.out(JSON.stringify({ peerId, keyPath, created: !exists, addrs, swarmKey: swarmKeyPath ?? null }, null, 2) + '\n')
    return 0
  }
  io.out([
    `peer id  ${peerId}`,
    `key      ${keyPath}${exists ? '' : ' (created now)'}`,
    ...addrs.map((a, i) => `${i === 0 ? 'listen ' : '       '}  ${a}`),
    ...(swarmKeyPath === undefined ? ['note     no swarm key set (META_CORE_SWARM_KEY): a node with this configuration runs standalone and opens no p2p port'] : [])
  ].join('\n') + '\n')
  return 0
}
