/**
 * `npm start`: parses the configuration, starts a node and prints where it
 * listens. SIGINT/SIGTERM stop it in reverse start order and exit 0; a
 * second signal while stopping exits at once with 1. Bad configuration exits
 * 2 with every problem listed; a failed start exits 1.
 *
 * `npm start -- keygen <path>` writes a new swarm key (mode 0600, never
 * over an existing file) and exits.
 */
import '../mesh/libp2p/polyfill.js'
import { createLogger } from '../common/index.js'
import { MeshKeyError, writeNewSwarmKey } from '../mesh/libp2p/index.js'
import { ConfigError, parseConfig } from './config.js'
import { startNode } from './start-node.js'
import { packageVersion } from './version.js'

function keygen (args: string[]): number {
  if (args.length !== 1 || args[0].startsWith('-')) {
    process.stderr.write('usage: npm start -- keygen <path>   (writes a new swarm key for a private mesh)\n')
    return 2
  }
  try {
    writeNewSwarmKey(args[0])
  } catch (err) {
    if (err instanceof MeshKeyError) {
      process.stderr.write(`meta-core: ${err.message}\n`)
      return 1
    }
    throw err
  }
  process.stdout.write(`wrote a new swarm key to ${args[0]}: give every node of the mesh a copy (META_CORE_SWARM_KEY)\n`)
  return 0
}

function badConfiguration (err: ConfigError): number {
  process.stderr.write(`meta-core: bad configuration:\n${err.message.split('\n').map(l => `  - ${l}`).join('\n')}\n`)
  return 2
}

async function main (): Promise<number> {
  if (process.argv[2] === 'keygen') return keygen(process.argv.slice(3))
  let parsed
  try {
    parsed = parseConfig(process.argv.slice(2), process.env)
  } catch (err) {
    if (err instanceof ConfigError) return badConfiguration(err)
    throw err
  }
  if (parsed.kind === 'help') {
    process.stdout.write(parsed.text + '\n')
    return 0
  }
  const config = parsed.config
  const log = createLogger({ level: config.logLevel, name: 'meta-core' })
  let node
  try {
    node = await startNode(config, { logger: log, version: packageVersion() })
  } catch (err) {
    // Paths that exist but cannot be used are found at start (they need the file system): still a configuration problem.
    if (err instanceof ConfigError) return badConfiguration(err)
    throw err
  }
  // One write, so a reader never sees the listening line without the rest.
  process.stdout.write([
    `meta-core listening on ${node.url}`,
    `store: ${config.dbPath}`,
    `files: ${config.filesPath}`,
    `file watcher: ${config.enableFileWatcher ? 'on' : 'off'}${config.apiToken === undefined ? '' : ', API token required'}`,
    meshLine(node)
  ].join('\n') + '\n')

  return await new Promise<number>((resolve) => {
    let stopping = false
    const onSignal = (sig: NodeJS.Signals): void => {
      if (stopping) {
        log.warn(`${sig} again while stopping: exiting now`)
        resolve(1)
        return
      }
      stopping = true
      log.info(`${sig}: stopping`)
      node.stop().then(() => { resolve(0) }, (err: unknown) => {
        log.error('stop failed', { err })
        resolve(1)
      })
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
  })
}

function meshLine (node: Awaited<ReturnType<typeof startNode>>): string {
  const s = node.mesh.status()
  if (!s.enabled) return `mesh: standalone (no swarm key), node id ${s.self.peerId}`
  return `mesh ${s.meshId ?? ''}: peer id ${s.self.peerId}, p2p on ${s.self.addrs.join(', ') || 'no address'}`
}

main().then((code) => { process.exit(code) }, (err: unknown) => {
  process.stderr.write(`meta-core: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
