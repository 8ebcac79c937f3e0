/**
 * Start order and stop order of a node. Start: paths and ports checked → identity key read (its peer
 * id is the origin the store writes with; a new one is written only once the
 * store opened as ours) → store → holder members moved to that id, or a copied store recognised (holder-id.ts) →
 * search (it registers its indexer before any write runs) → roots that are no records taken out (once) → mesh →
 * watcher → API listening. Stop runs in reverse, every step even when one
 * fails (stopAll), so the mesh stops before the store closes, the store is
 * always closed last and nothing writes into a closed store.
 */
import fs from 'node:fs'
import { createLogger, stopAll, type Logger } from '../common/index.js'
import { buildApp, ByteCache, NodeMetrics, openServableCopy, releaseCachedCopies } from '../api/index.js'
import { StandaloneMesh, type MeshService } from '../mesh/index.js'
import type { NodeIdentity } from '../mesh/libp2p/index.js'
import { readSwarmKey } from '../mesh/libp2p/swarm-key.js'
import { openNodeStore, type NodeStore } from '../records/index.js'
import { createSearch, type Search } from '../search/index.js'
import { createWatcher, recordedFile, type WatcherHandle } from '../watcher/index.js'
import type { FastifyInstance } from 'fastify'
import { ConfigError, pathProblems, type NodeConfig } from './config.js'
import { uiDistPath } from './version.js'
import { adoptHolderId } from './holder-id.js'
import { checkPorts } from './port-check.js'

export interface RunningNode {
  config: NodeConfig
  store: NodeStore
  app: FastifyInstance
  search: Search
  watcher: WatcherHandle
  /** The mesh (a standalone one, with no peers and no p2p port, without a swarm key). */
  mesh: MeshService
  /** `http://host:port` with the port actually bound (for `--port 0`). */
  url: string
  port: number
  /** Prometheus figures behind `GET /metrics`. */
  metrics: NodeMetrics
  /** Stops everything in reverse start order. Idempotent. */
  stop: () => Promise<void>
  /** While stopping: the component being stopped now (for a shutdown that overruns its deadline). */
  stoppingStep: () => string | undefined
}

interface StartOptions {
  logger?: Logger
  version?: string
  /** The built web page (default: the package's ui/dist). */
  uiPath?: string
  /** Event-stream retention of the store (tests and benchmarks of trimmed streams; the defaults otherwise). */
  streamRetention?: number
  trimEvery?: number
  /** False: a join's pages never take the bulk path (benchmarks measure the page path beside it). Default true. */
  bulkJoin?: boolean
}

type Maybe<T> = T | Promise<T>

export async function startNode (config: NodeConfig, opts: StartOptions = {}): Promise<RunningNode> {
  const log = opts.logger ?? createLogger({ level: config.logLevel, name: 'meta-core' })
  for (const w of config.retired ?? []) log.warn(w)
  const stops: Array<{ what: string, fn: () => Maybe<void> }> = []
  let step: string | undefined
  const unwind = async (): Promise<void> => {
    await stopAll([...stops].reverse().map(s => async () => { step = s.what; await s.fn() }))
    step = undefined
  }

  // Paths that can never work are a configuration problem, said as one before anything is created.
  const problems = pathProblems(config)
  if (problems.length > 0) throw new ConfigError(problems.join('\n'))
  // A taken port, too: found last, it would leave a new store and identity key behind.
  await checkPorts(config)
  // Keys are read (a new identity made, not yet written) before the store opens: the store writes with its peer id.
  const swarmKey = config.swarmKeyPath === undefined ? undefined : readSwarmKey(config.swarmKeyPath)
  // The libp2p stack (about a second to load) only for a node that joins a mesh: a standalone node starts without it.
  const p2p = swarmKey === undefined ? undefined : await import('../mesh/libp2p/index.js')
  const prepared = p2p === undefined ? undefined : await p2p.prepareIdentity(config.keyPath, log.child('mesh'))
  const identity: NodeIdentity | undefined = prepared?.identity
  // The store first: a node refused its store (another process owns it, or it is not a meta-core file) changes nothing on disk.
  const store = openNodeStore({
    path: config.dbPath,
    nodeId: identity?.peerId,
    maxClockDriftMs: config.maxClockDriftMs,
    streamRetention: opts.streamRetention,
    trimEvery: opts.trimEvery,
    logger: log.child('kv')
  })
  stops.push({ what: 'store', fn: () => { store.close() } })
  try {
    prepared?.persist()
    fs.mkdirSync(config.filesPath, { recursive: true })
    const { kv, records } = store
    // A store recorded under an id that is not this node's is a copy of another node's store (holder-id.ts).
    await adoptHolderId(store, log.child('node'), { keyPeerId: async () => identity?.peerId ?? await keyFilePeerId(config.keyPath, log) })
    // Batches and events are counted from here on: the store's own figures, fed to /metrics.
    const metrics = new NodeMetrics()
    stops.push({ what: 'metrics', fn: kv.onBatch(b => { metrics.observeWriteBatch(b) }) })
    stops.push({ what: 'metrics', fn: kv.onCommit(entries => { metrics.countEvents(entries) }) })

    // Search first: it registers its record hook before anything can write. A large store's
    // rows are rebuilt in the background; answers are correct (slower) meanwhile.
    const search = createSearch({ kv, records, logger: log.child('search') }, { excludePrefixes: config.indexExcludePrefixes })
    stops.push({ what: 'search', fn: () => search.stop() })
    await search.start()
    // A store from before the record rule may count roots that are no records: taken out once, search told.
    await records.sweepNonRecords()

    // The cache before the mesh: peers are served from it too, and its holder members follow what it keeps
    // (a record it kept whose file went, or every one when the node runs without a cache now, is released).
    const holding = { records, holderId: records.nodeId }
    const byteCache = config.cachePath === undefined ? undefined : new ByteCache(config.cachePath, config.cacheMaxBytes, log.child('cache'), holding)
    if (byteCache !== undefined) await byteCache.reconcile()
    else await releaseCachedCopies(holding, log.child('cache'))

    const mesh: MeshService = swarmKey === undefined || identity === undefined || p2p === undefined
      ? new StandaloneMesh(records, config.nodeName)
      : new p2p.Libp2pMesh({ records, logger: log.child('mesh') }, {
        identity,
        swarmKey,
        listen: config.p2pListen,
        bootstrap: config.bootstrap,
        nodeName: config.nodeName,
        // Peers get bytes only of this node's own copies, by the local /file route's rules, then of its cache's.
        localFiles: async (cid) => await openServableCopy(records, config.filesPath, cid, rel => recordedFile(records.local, rel)) ??
          await byteCache?.openForPeer(cid),
        bytesLimits: { bytesPerSecondPerPeer: config.peerBytesPerSecond, maxStreamsPerPeer: config.peerMaxTransfers },
        targetPeers: config.targetPeers,
        crossRegionPeers: config.crossRegionPeers,
        degree: { D: config.gossipD, Dlo: config.gossipDlo, Dhi: config.gossipDhi },
        reach: {
          relay: config.relay,
          relayVia: config.relayVia,
          announce: config.announce,
          upnp: config.upnp,
          mdns: config.mdns,
          relayLimits: { maxCircuits: config.relayMaxCircuits, maxCircuitsPerPeer: config.relayPeerCircuits, bytesPerSecond: config.relayBytesPerSecond,
            bytesPerSecondPerPeer: config.relayPeerBytesPerSecond }
        },
        options: { flushMs: config.pushWindowMs, antiEntropyMs: config.antiEntropyMs, maxClockDriftMs: config.maxClockDriftMs,
          blockedPeers: config.blockedPeers },
        ...(opts.bulkJoin === undefined ? {} : { bulkJoin: opts.bulkJoin })
      })
    stops.push({ what: 'mesh', fn: () => mesh.stop() })
    await mesh.start()

    const watcher = createWatcher({ records, logger: log.child('watcher') }, {
      filesPath: config.filesPath,
      enabled: config.enableFileWatcher,
      rescanIntervalMs: config.rescanIntervalMs,
      settleMs: config.settleMs,
      hashConcurrency: config.hashConcurrency,
      fullHash: config.fullHash,
      fullHashBytesPerSecond: config.fullHashBytesPerSecond
    })
    stops.push({ what: 'watcher', fn: () => watcher.stop() })
    // Starts watching and the initial scan in the background; the API can serve meanwhile.
    await watcher.start()

    const app = buildApp({ kv, records, search, watcher, mesh, metrics, logger: log.child('api') }, {
      filesPath: config.filesPath,
      apiToken: config.apiToken,
      metricsPublic: config.metricsPublic,
      healthNoPeerMs: config.healthNoPeerMs,
      byteCache,
      // Requests in flight get half the shutdown budget; the mesh and the store need the rest.
      closeGraceMs: Math.floor(config.shutdownTimeoutMs / 2),
      version: opts.version,
      uiPath: opts.uiPath ?? uiDistPath()
    })
    stops.push({ what: 'HTTP API (requests in flight, event streams)', fn: () => app.close() })
    await app.listen({ host: config.httpHost, port: config.httpPort })
    const addr = app.server.address()
    const port = addr !== null && typeof addr === 'object' ? addr.port : config.httpPort
    const hostForUrl = config.httpHost.includes(':') ? `[${config.httpHost}]` : config.httpHost
    // A second node started on this store is refused with this address in its message.
    kv.announceOwner({ url: `http://${hostForUrl}:${port}` })

    let stopping: Promise<void> | undefined
    return {
      config,
      store,
      app,
      search,
      watcher,
      mesh,
      metrics,
      url: `http://${hostForUrl}:${port}`,
      port,
      stop: async () => {
        stopping ??= unwind()
        await stopping
      },
      stoppingStep: () => step
    }
  } catch (err) {
    await unwind().catch((e: unknown) => { log.error('cleanup after a failed start also failed', { err: e }) }) // the start error is the one to report
    throw err
  }
}

/** The peer id of an existing identity key file (a standalone node that left its mesh keeps it), else undefined. */
async function keyFilePeerId (keyPath: string, log: Logger): Promise<string | undefined> {
  if (!fs.existsSync(keyPath)) return undefined
  const { prepareIdentity } = await import('../mesh/libp2p/index.js')
  return (await prepareIdentity(keyPath, log.child('mesh'))).identity.peerId
}
