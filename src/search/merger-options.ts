/** What the merger (merger.ts) is given: its components, and options a node leaves at their defaults (tests and benchmarks set them). */
import type { Clock, Logger } from '../common/index.js'
import type { KvStore } from '../kv/index.js'
import type { IndexedRecords } from '../records/index.js'
import type { IndexWorker } from './index-worker-client.js'
import type { PendingRoots } from './pending-roots.js'
import { MAX_BATCHES_IN_FLIGHT } from './merge-plan.js'

export interface MergerOptions {
  /** Most roots per batch (default 1,000). */
  batchRoots?: number
  /**
   * Batches at the index writer at once, 1 or 2 (default 2): with 2, a
   * second batch (once a quarter of a batch is staged outside the first, or
   * sooner when writers or callers wait) is queued behind the one being
   * indexed. Other jobs always run alone.
   */
  batchesInFlight?: number
  /** Writers wait while this many roots are staged (default 4,000), until a batch brings it under three quarters of it. */
  backlogLimit?: number
  /**
   * A backlog smaller than a quarter of a batch waits this long for more
   * before it is merged (default 100 ms): a trickle of writes is merged in
   * a few batches, not one per write.
   */
  delayMs?: number
  /**
   * A renumbering round starts once the live document ids span more than
   * this many times the documents, and four buckets more (default 4, at
   * least 2; Infinity: never).
   */
  renumberAt?: number
  /** Orphaned documents (re-indexed roots' old ones) that start a sweep, once they are also a tenth of all (default 1,000). */
  sweepMinOrphans?: number
  /** Progress lines while a backlog, a rebuild or a renumbering round lasts, this often (default 5,000 ms). */
  progressEveryMs?: number
  /** The index writer's thread ends after this long without work (default 30,000 ms), and starts again with the next. */
  idleCloseMs?: number
  /** The merger's timers (the delay, retries, the idle close) and progress times (default: the system clock). */
  clock?: Clock
}

export interface MergerDeps {
  kv: KvStore
  records: IndexedRecords
  pending: PendingRoots
  /** The index writer's thread if start-up already runs one (a rebuild, a schema to create). */
  worker?: IndexWorker
  /** Starts an index writer's thread (when there is work and none runs). */
  startWorker: () => Promise<IndexWorker>
  /** What the index file holds now (documents, orphaned documents, the span of live document ids). */
  docs: number
  orphanDocs: number
  span: number
  /** Documents per field-index bucket. */
  bucketDocs: number
  /** The number of the last batch the store unstaged (search_state). */
  gen: number
  /** The store's id for its index file (search_state). */
  indexId: string
  logger?: Logger
}

export type ResolvedMergerOptions = Required<Omit<MergerOptions, 'clock'>>

export function resolveMergerOptions (opts: MergerOptions): ResolvedMergerOptions {
  return {
    batchRoots: opts.batchRoots ?? 1000,
    batchesInFlight: Math.min(MAX_BATCHES_IN_FLIGHT, Math.max(1, Math.floor(opts.batchesInFlight ?? MAX_BATCHES_IN_FLIGHT))),
    backlogLimit: opts.backlogLimit ?? 4000,
    delayMs: opts.delayMs ?? 100,
    renumberAt: Math.max(2, opts.renumberAt ?? 4),
    sweepMinOrphans: opts.sweepMinOrphans ?? 1000,
    progressEveryMs: opts.progressEveryMs ?? 5000,
    idleCloseMs: opts.idleCloseMs ?? 30_000
  }
}
