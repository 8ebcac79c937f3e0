/**
 * `meta-core start`: runs a node until SIGTERM or SIGINT, then stops it in
 * reverse start order (node/start-node.ts): the API refuses new requests
 * with a retryable 503 and ends its event streams, requests in flight
 * finish (their writes commit), the watcher and the mesh finish their
 * writes, the store commits what is queued and closes. Exit 0.
 *
 * Deadlines: the whole stop has `shutdownTimeoutMs` (5 s by default;
 * requests in flight get half of it before their connections are cut).
 * Past it the process exits 1 naming the step it still waited for; nothing
 * acknowledged is lost even then (every acknowledged write was committed
 * to the WAL before its answer left). A second signal while stopping
 * exits 1 at once. Started through npm (`npx meta-core`, `npm start`), the
 * node also stops when that npm process is stopped (launcher-watch.ts).
 */
import { createLogger } from '../common/index.js'
import type { NodeConfig } from './config.js'
import { watchLauncher } from './launcher-watch.js'
import { startNode, type RunningNode } from './start-node.js'
import { packageVersion } from './version.js'

export interface Output {
  out: (text: string) => void
  err: (text: string) => void
}

export async function runNode (config: NodeConfig, io: Output): Promise<number> {
  const log = createLogger({ level: config.logLevel, name: 'meta-core' })
  const node = await startNode(config, { logger: log, version: packageVersion() })
  // One write, so a reader never sees the listening line without the rest.
  io.out([
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
      beginStop(sig)
    }
    const beginStop = (why: string): void => {
      stopping = true
      const began = Date.now()
      log.info(`${why}: stopping (refusing new requests, finishing writes in flight)`)
      const deadline = setTimeout(() => {
        log.error(`stopping took longer than ${config.shutdownTimeoutMs} ms: exiting`, { waitingFor: node.stoppingStep() ?? 'unknown' })
        resolve(1)
      }, config.shutdownTimeoutMs)
      node.stop().then(() => {
        clearTimeout(deadline)
        log.info('stopped', { ms: Date.now() - began })
        resolve(0)
      }, (err: unknown) => {
        clearTimeout(deadline)
        log.error('stop failed', { err })
        resolve(1)
      })
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    // Started through npx or npm: npm's own SIGTERM reaches only its shell (launcher-watch.ts).
    // Not a second signal: Ctrl-C reaches npm, its shell and the node at once, and npm then exits.
    watchLauncher(process.env, () => { if (!stopping) beginStop('the npm process that started this node exited') })
  })
}

function meshLine (node: RunningNode): string {
  const s = node.mesh.status()
  if (!s.enabled) return `mesh: standalone (no swarm key), node id ${s.self.peerId}`
  return `mesh ${s.meshId ?? ''}: peer id ${s.self.peerId}, p2p on ${s.self.addrs.join(', ') || 'no address'}`
}
