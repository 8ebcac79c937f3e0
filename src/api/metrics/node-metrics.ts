/**
 * The node's Prometheus metrics (prom-client). Three kinds of figure:
 *
 * - observed as work happens: HTTP latency by route (the metrics plugin's
 *   hooks), write batches and events appended (the node feeds them from
 *   the store's batch and commit listeners), search latency (the API's
 *   search calls, timed);
 * - read when scraped, from the components' own status: records, open SSE
 *   streams, the watcher's progress, and per peer the mesh's frame
 *   counters and catch-up lag (the mesh counts; these only copy, so a
 *   scrape never disagrees with `GET /api/mesh`);
 * - the process's default metrics (CPU, memory, event-loop lag, GC), one
 *   set per process whatever the number of apps in it.
 *
 * Counters copied from a component restart at 0 when the node restarts,
 * as Prometheus expects of counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { MeshService } from '../../mesh/index.js'
import type { RecordReads } from '../../records/index.js'
import type { SearchService } from '../../search/types.js'
import type { Watcher } from '../../watcher/types.js'
import { BytesMetrics } from './bytes-metrics.js'

/** What the scrape-time figures are read from (bound by the API when it is built). */
interface MetricSources {
  records: Pick<RecordReads, 'countRecords'>
  mesh?: MeshService
  watcher?: Watcher
  sseStreams: () => number
}

/** One group-commit transaction, as the store reports it (kv's BatchStats). */
interface WriteBatchFigures {
  writes: number
  failed: number
  durationMs: number
}

const PREFIX = 'meta_core_'
/** Request latencies from a cached read (~0.2 ms) to a slow scan or a large upload. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Write functions per transaction: group commit takes at most 2,000. */
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]

let processRegistry: Registry | undefined
/** Default metrics are process-wide: collected once, on a registry of their own. */
function defaultMetrics (): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

type PeerCounter = 'framesIn' | 'framesRejected' | 'framesDropped' | 'driftRefusals' | 'forged' | 'entriesDropped' | 'replays' | 'pagesIn' | 'bytesIn'
  | 'pagesServed' | 'bytesServed' | 'pullFailures' | 'resyncs' | 'busyRefusals'

/** Per-peer counters of the mesh core, as `meta_core_mesh_<name>_total{peer}`. */
const PEER_COUNTERS: ReadonlyArray<[PeerCounter, string, string]> = [
  ['framesIn', 'frames_in', 'gossip frames signed by the peer that reached this node, accepted or not'],
  ['framesRejected', 'frames_rejected', 'frames and pull replies from the peer refused as bad (malformed, oversized, forged, replayed, far-future)'],
  ['framesDropped', 'frames_dropped', 'frames dropped because too many of the peer\'s frames were waiting (pulled instead)'],
  ['driftRefusals', 'drift_refusals', 'entries from the peer refused for being too far ahead of this node\'s clock'],
  ['forged', 'frames_forged', 'frames whose entries named another origin than their signer, and pulled entries claiming this node\'s origin with a version it never issued'],
  ['entriesDropped', 'entries_dropped', 'pulled entries dropped: malformed, or past what is kept aside for retry'],
  ['replays', 'frames_replayed', 'frames whose sequence number was already seen'],
  ['pagesIn', 'pages_in', 'pages pulled from the peer'],
  ['bytesIn', 'pull_bytes_in', 'bytes of pages pulled from the peer'],
  ['pagesServed', 'pages_out', 'pages served to the peer (what this node sends a peer directly; gossip goes to the whole mesh)'],
  ['bytesServed', 'pull_bytes_out', 'bytes of pages served to the peer'],
  ['pullFailures', 'pull_failures', 'pulls from the peer that failed (timeout, stream error, refusal)'],
  ['resyncs', 'resyncs', 'full resyncs started from the peer'],
  ['busyRefusals', 'busy_refusals', 'pulls by the peer refused by its rate limit']
]

export class NodeMetrics {
  readonly registry = new Registry()
  private sources: MetricSources | undefined
  private readonly httpSeconds: Histogram<'method' | 'route' | 'status'>
  private readonly batchSize: Histogram
  private readonly batchSeconds: Histogram
  private readonly writesFailed: Counter
  private readonly events: Counter<'stream'>
  private readonly searchSeconds: Histogram<'operation'>
  /** Figures read when scraped: kept here only so they are plainly owned (the registry holds them too). */
  private readonly scraped: Array<Gauge<string> | Counter<string>> = []
  /** File bytes moved between nodes (bytes-metrics.ts). */
  readonly bytes: BytesMetrics

  constructor () {
    const registers = [this.registry]
    this.httpSeconds = new Histogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'HTTP requests by method, route pattern and status code, from arrival to the response sent (an SSE stream counts until it ends)',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers
    })
    this.batchSize = new Histogram({
      name: `${PREFIX}write_batch_size`,
      help: 'write functions per group-commit transaction (_count: transactions, _sum: write functions)',
      buckets: BATCH_SIZE_BUCKETS,
      registers
    })
    this.batchSeconds = new Histogram({
      name: `${PREFIX}write_batch_duration_seconds`,
      help: 'time to run and commit one group-commit transaction',
      buckets: LATENCY_BUCKETS,
      registers
    })
    this.writesFailed = new Counter({
      name: `${PREFIX}writes_failed_total`,
      help: 'write functions rolled back (refused input, failed commits)',
      registers
    })
    this.events = new Counter({
      name: `${PREFIX}events_appended_total`,
      help: 'entries appended to the event streams, by stream (meta:events is the change log, file:events the watcher\'s)',
      labelNames: ['stream'],
      registers
    })
    this.searchSeconds = new Histogram({
      name: `${PREFIX}search_duration_seconds`,
      help: 'time to answer a search (operation=search) or a listing (operation=list), errors included',
      labelNames: ['operation'],
      buckets: LATENCY_BUCKETS,
      registers
    })
    this.scrapeTimeFigures()
    this.bytes = new BytesMetrics(this.registry, () => this.sources?.mesh?.bytes?.figures() ?? [])
  }

  /** Where the scrape-time figures come from (the API binds its components). */
  bind (sources: MetricSources): void {
    this.sources = sources
  }

  observeRequest (method: string, route: string, status: number, seconds: number): void {
    this.httpSeconds.observe({ method, route, status: String(status) }, seconds)
  }

  observeWriteBatch (b: WriteBatchFigures): void {
    this.batchSize.observe(b.writes)
    this.batchSeconds.observe(b.durationMs / 1000)
    if (b.failed > 0) this.writesFailed.inc(b.failed)
  }

  /** Counts a commit's stream entries, given as runs (kv's EntryRun: a stream and its entries). */
  countEvents (runs: ReadonlyArray<{ stream: string, entries: readonly unknown[] }>): void {
    if (runs.length === 0) return
    let stream = runs[0].stream
    let n = 0
    // Runs of one stream follow one another within a commit: a few inc calls per commit.
    for (const r of runs) {
      if (r.stream !== stream) {
        this.events.inc({ stream }, n)
        stream = r.stream
        n = 0
      }
      n += r.entries.length
    }
    this.events.inc({ stream }, n)
  }

  /** The same search service, its answers timed. */
  timeSearch (search: SearchService): SearchService {
    const timed = <A extends unknown[], R>(operation: string, fn: (...args: A) => R) => (...args: A): R => {
      const end = this.searchSeconds.startTimer({ operation })
      try {
        return fn(...args)
      } finally {
        end()
      }
    }
    // Every member delegates (a spread would lose a class instance's methods).
    return {
      search: timed('search', (req: Parameters<SearchService['search']>[0]) => search.search(req)),
      list: timed('list', (offset: number, limit: number) => search.list(offset, limit)),
      rebuild: async () => { await search.rebuild() },
      whenReady: search.whenReady === undefined ? undefined : async () => { await search.whenReady?.() },
      building: search.building === undefined ? undefined : () => search.building?.(),
      stop: search.stop === undefined ? undefined : async () => { await search.stop?.() }
    }
  }

  get contentType (): string {
    return this.registry.contentType
  }

  /** The exposition text: this node's metrics, then the process's. */
  async text (): Promise<string> {
    return (await this.registry.metrics()) + (await defaultMetrics().metrics())
  }

  private scrapeTimeFigures (): void {
    const registers = [this.registry]
    const src = (): MetricSources | undefined => this.sources
    this.scraped.push(new Gauge({
      name: `${PREFIX}records`,
      help: 'visible records (a group of roots sharing a CID counts once)',
      registers,
      collect () {
        const s = src()
        if (s !== undefined) this.set(s.records.countRecords())
      }
    }))
    this.scraped.push(new Gauge({
      name: `${PREFIX}sse_streams`,
      help: 'open SSE event streams',
      registers,
      collect () { this.set(src()?.sseStreams() ?? 0) }
    }))
    this.watcherFigures(registers, src)
    this.meshFigures(registers, src)
  }

  private watcherFigures (registers: Registry[], src: () => MetricSources | undefined): void {
    const fig = (name: string, help: string, read: (w: ReturnType<Watcher['status']>) => number | undefined): void => {
      this.scraped.push(new Gauge({
        name: `${PREFIX}watcher_${name}`,
        help,
        registers,
        collect () {
          this.reset()
          const w = src()?.watcher
          if (w === undefined) return
          const v = read(w.status())
          if (v !== undefined) this.set(v)
        }
      }))
    }
    fig('files', 'files the watcher knows in FILES_PATH', s => s.fileCount)
    fig('scanning', '1 while a scan runs', s => (s.isScanning ? 1 : 0))
    fig('scan_files_seen', 'files the current (or last) scan has seen', s => s.progress.filesSeen)
    fig('scan_files_hashed', 'files the current (or last) scan has hashed', s => s.progress.filesHashed)
    fig('scan_bytes_hashed', 'bytes the current (or last) scan has hashed', s => s.progress.bytesHashed)
    fig('files_pending', 'files found changed and not yet hashed (settling, queued or being hashed)', s => s.progress.filesPending ?? 0)
  }

  private meshFigures (registers: Registry[], src: () => MetricSources | undefined): void {
    const peers = (): ReturnType<MeshService['status']>['peers'] => src()?.mesh?.status().peers ?? []
    for (const [field, name, help] of PEER_COUNTERS) {
      this.scraped.push(new Counter({
        name: `${PREFIX}mesh_${name}_total`,
        help,
        labelNames: ['peer'],
        registers,
        collect () {
          this.reset()
          for (const p of peers()) this.inc({ peer: p.peerId }, p[field])
        }
      }))
    }
    const perPeer = (name: string, help: string, read: (p: ReturnType<typeof peers>[number]) => number): void => {
      this.scraped.push(new Gauge({
        name: `${PREFIX}mesh_peer_${name}`,
        help,
        labelNames: ['peer'],
        registers,
        collect () {
          this.reset()
          for (const p of peers()) this.set({ peer: p.peerId }, read(p))
        }
      }))
    }
    perPeer('connected', '1 while connected to the peer', p => (p.connected ? 1 : 0))
    perPeer('behind', '1 until a pull from the peer reaches the head it reported', p => (p.behind ? 1 : 0))
    perPeer('parked', 'entries from the peer refused for clock drift and kept aside, retried every round', p => p.parked)
    perPeer('lag_seconds', 'catch-up lag: 0 when the last pull reached the peer\'s head, else seconds since one last did', p => p.lagMs / 1000)
    const self = (name: string, help: string, read: (s: ReturnType<MeshService['status']>['self']) => number): void => {
      this.scraped.push(new Counter({
        name: `${PREFIX}mesh_${name}_total`,
        help,
        registers,
        collect () {
          this.reset()
          const m = src()?.mesh
          if (m !== undefined) this.inc(read(m.status().self))
        }
      }))
    }
    const clock = (name: string, help: string, read: (c: ReturnType<MeshService['status']>['self']['clock']) => number): void => {
      this.scraped.push(new Gauge({
        name: `${PREFIX}mesh_clock_${name}`,
        help,
        registers,
        collect () {
          this.reset()
          const m = src()?.mesh
          if (m !== undefined) this.set(read(m.status().self.clock))
        }
      }))
    }
    clock('out_of_bound', '1 while this node\'s clock is out of bound against most of the peers it measures (local writes refused)', c => (c.inBound ? 0 : 1))
    clock('offset_seconds', 'median offset of this node\'s clock to the peers it measures (positive: ahead)', c => (c.offsetMs ?? 0) / 1000)
    clock('peers_measured', 'connected peers whose clock this node measured', c => c.measured)
    self('frames_out', 'gossip frames this node published to the mesh (all peers at once)', s => s.framesOut)
    self('frame_bytes_out', 'bytes of the gossip frames this node published', s => s.bytesOut)
    self('publish_failures', 'frames that could not be published (no peer subscribed yet, transport error)', s => s.publishFailures)
  }
}
