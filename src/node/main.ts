/**
 * `npm start`: parses the configuration, starts a node and prints where it
 * listens. SIGINT/SIGTERM stop it in reverse start order and exit 0; a
 * second signal while stopping exits at once with 1. Bad configuration exits
 * 2 with every problem listed; a failed start exits 1.
 */
import { createLogger } from '../common/index.js'
import { ConfigError, parseConfig } from './config.js'
import { startNode } from './start-node.js'
import { packageVersion } from './version.js'

async function main (): Promise<number> {
  let parsed
  try {
    parsed = parseConfig(process.argv.slice(2), process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`meta-core: bad configuration:\n${err.message.split('\n').map(l => `  - ${l}`).join('\n')}\n`)
      return 2
    }
    throw err
  }
  if (parsed.kind === 'help') {
    process.stdout.write(parsed.text + '\n')
    return 0
  }
  const config = parsed.config
  const log = createLogger({ level: config.logLevel, name: 'meta-core' })
  const node = await startNode(config, { logger: log, version: packageVersion() })
  // One write, so a reader never sees the listening line without the rest.
  process.stdout.write([
    `meta-core listening on ${node.url}`,
    `store: ${config.dbPath}`,
    `files: ${config.filesPath}`,
    `file watcher: ${config.enableFileWatcher ? 'on' : 'off'}${config.apiToken === undefined ? '' : ', API token required'}`
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

main().then((code) => { process.exit(code) }, (err: unknown) => {
  process.stderr.write(`meta-core: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
