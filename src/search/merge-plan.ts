/**
 * The merger's decisions, as pure functions of its state (merger.ts runs
 * them; test/search/merge-plan.test.ts checks them case by case).
 *
 * The state has two parts. *Maintenance* is the one long job under way
 * beside the batches, an explicit phase:
 * - `none`;
 * - `rebuild`: the structures are emptied (`cleared` once the clear job
 *   has committed), then every live root is indexed again, a step at a
 *   time after `after`; queries read every record meanwhile. While records
 *   arrive in bulk in key order (`follow`: a join) it follows them, no
 *   further than the last root they have brought (other writes meanwhile,
 *   indexed by batches, may be far ahead of it): a step that finds no root
 *   left waits (`caughtUp`) for more instead of ending; it ends at the first
 *   such step after the bulk ended; records arriving behind its position
 *   take it back (phaseOnBulk);
 * - `renumber`: a round that re-indexes the oldest documents' roots under
 *   new ids (`moved` of at most `most`); `thenSweep` when it interrupted a
 *   sweep, which goes on after it;
 * - `sweep`: orphaned entries are being swept (the writer keeps the cursor).
 * The rest is the batches: roots staged, those in no batch in flight
 * (`free`), the jobs in flight, and the batch numbers.
 *
 * Jobs, most urgent first:
 * 1. clear: a rebuild empties the structures first;
 * 2. batch: up to `batchRoots` staged roots (the longest staged first),
 *    indexed in key order in one transaction of the index file; when it
 *    has committed, one small write of the store removes the batch's
 *    staged rows (those staged again since the batch began stay) with the
 *    batch's number and the change-log mark.
 *    A second batch of other staged roots may wait at the index writer
 *    behind the one it is indexing (`batchesInFlight`), so the writer
 *    starts it as soon as the first commits instead of idling until this
 *    thread, busy with a write, has read the answer and sent the next job.
 *    Until the writer starts it, roots staged meanwhile join it (up to
 *    `batchRoots`): the writer takes those that reached it before it began,
 *    and says how many, so it indexes what is staged then in one batch, as
 *    it would have if it had waited;
 * 3. rebuild step: the next `batchRoots` live roots, while a rebuild runs;
 * 4. renumber step: the `batchRoots` oldest documents' roots, indexed again
 *    under new document ids, once the ids from the oldest live document's
 *    to the newest's are more than `renumberAt` (4) times the documents
 *    (and four buckets more). A value probe seeks every bucket in that
 *    span, and a record never written again keeps its old id while the
 *    others take new ones, so churn would otherwise make every probe
 *    slower without bound.
 *    A round ends when the span is down to twice the documents (or one
 *    bucket more than them), or when it has moved as many roots as there
 *    were documents. Churn spread evenly over the records seldom starts
 *    one: it re-indexes the old documents itself;
 * 5. sweep step: orphaned entries (re-indexed roots' old documents) are
 *    swept in key order once they pass a tenth of the documents.
 */

/** The kinds of job the index writer runs (index-worker-client.ts IndexJob). */
export type JobKind = 'clear' | 'batch' | 'rebuild' | 'renumber' | 'sweep'

export type Maintenance =
  | { phase: 'none' }
  | {
    phase: 'rebuild'
    cleared: boolean
    after: string
    done: number
    total: number
    /** Records are still arriving in bulk, in key order (a join): a step that finds none left does not end the rebuild. */
    follow?: boolean
    /** Following, the last step found no root left: no step until more have arrived. */
    caughtUp?: boolean
  }
  | { phase: 'renumber', moved: number, most: number, thenSweep: boolean }
  | { phase: 'sweep' }

export interface PlanState {
  maintenance: Maintenance
  /** Roots staged (search_pending). */
  staged: number
  /** Staged roots in no batch in flight. */
  free: number
  /** Jobs sent to the index writer and not yet answered, in the order it runs them. */
  inFlight: readonly JobKind[]
  /** The number of the last batch the store unstaged, and of the last one sent. */
  gen: number
  sentGen: number
  /** What the index file holds, as the writer last said. */
  docs: number
  orphanDocs: number
  /** Document ids from the oldest live document's to the newest's. */
  span: number
  /** Writers wait at the backlog bound, or a caller waits for the merger to be idle: no reason to wait for more. */
  hurry: boolean
  stopped: boolean
}

export interface PlanLimits {
  batchRoots: number
  /** 1 or 2 (MAX_BATCHES_IN_FLIGHT). */
  batchesInFlight: number
  renumberAt: number
  sweepMinOrphans: number
  bucketDocs: number
}

/** Most batches at the index writer at once: the index file is at most this many batches ahead of the store. */
export const MAX_BATCHES_IN_FLIGHT = 2
/** Spare buckets a value probe may seek before a renumbering round starts, however few the documents. */
const RENUMBER_MIN_BUCKETS = 4

/** What the merger does next (merger.ts `schedule`). */
export type Step =
  /** Nothing to do. */
  | 'idle'
  /** Run nextJob now. */
  | 'now'
  /** Wait the delay for more staged roots, then run nextJob. */
  | 'later'
  /** A batch is in flight and no second one is due: the roots just staged join the one queued behind it, if any. */
  | 'extend'

const rebuilding = (s: PlanState): boolean => s.maintenance.phase === 'rebuild'
/** A rebuild step may run: a rebuild is under way and not waiting for more rows to arrive. */
const rebuildRunnable = (s: PlanState): boolean => s.maintenance.phase === 'rebuild' && s.maintenance.caughtUp !== true
/** A rebuild has begun and its clear job has not committed yet. */
const clearDue = (s: PlanState): boolean => s.maintenance.phase === 'rebuild' && !s.maintenance.cleared
const sweeping = (s: PlanState): boolean => s.maintenance.phase === 'sweep' || (s.maintenance.phase === 'renumber' && s.maintenance.thenSweep)

/** No long job may start: a rebuild runs, roots are staged, or the merger stopped. */
const busy = (s: PlanState): boolean => s.stopped || rebuilding(s) || s.staged > 0

/** A renumbering round runs, or the span of live ids has passed `renumberAt` times the documents and four spare buckets. */
export function renumberDue (s: PlanState, o: PlanLimits): boolean {
  if (busy(s)) return false
  return s.maintenance.phase === 'renumber' || s.span - s.docs > Math.max((o.renumberAt - 1) * s.docs, RENUMBER_MIN_BUCKETS * o.bucketDocs)
}

/** Orphaned documents have passed `sweepMinOrphans` and a tenth of all. */
export function sweepDue (s: PlanState, o: PlanLimits): boolean {
  if (busy(s)) return false
  return s.orphanDocs >= o.sweepMinOrphans && s.orphanDocs * 10 >= s.docs
}

export function hasWork (s: PlanState, o: PlanLimits): boolean {
  return s.inFlight.length > 0 || s.staged > 0 || rebuildRunnable(s) || sweeping(s) || renumberDue(s, o) || sweepDue(s, o)
}

/**
 * A second batch may be queued behind the one in flight: only batches pair,
 * never past MAX_BATCHES_IN_FLIGHT numbers ahead of the store (after a
 * failed batch the next waits for the one still in flight), and only when
 * a quarter of a batch is staged outside it or someone waits.
 */
function secondBatchDue (s: PlanState, o: PlanLimits): boolean {
  if (s.inFlight.length >= o.batchesInFlight || clearDue(s) || s.inFlight.some(k => k !== 'batch')) return false
  if (s.sentGen - s.gen >= MAX_BATCHES_IN_FLIGHT) return false
  return s.free > 0 && (s.free * 4 >= o.batchRoots || s.hurry)
}

/** The job to send the index writer now, if any: beside one in flight only a second batch. */
export function nextJob (s: PlanState, o: PlanLimits): JobKind | undefined {
  if (s.inFlight.length > 0) return secondBatchDue(s, o) ? 'batch' : undefined
  if (clearDue(s)) return 'clear'
  if (s.staged > 0) return 'batch'
  if (rebuildRunnable(s)) return 'rebuild'
  if (renumberDue(s, o)) return 'renumber'
  if (sweeping(s) || sweepDue(s, o)) return 'sweep'
  return undefined
}

/**
 * Whether to run now: at once when there is reason to hurry (a long job
 * under way or due, a quarter of a batch staged, waiting writers or
 * callers), else after the delay. Under a steady stream of writes the index
 * writer then never idles: what was staged while a batch ran, once a
 * quarter of a batch, is the next one.
 */
export function nextStep (s: PlanState, o: PlanLimits): Step {
  if (s.inFlight.length > 0) return secondBatchDue(s, o) ? 'now' : 'extend'
  if (!hasWork(s, o)) return 'idle'
  const soon = rebuildRunnable(s) || sweeping(s) || s.staged * 4 >= o.batchRoots || s.hurry || renumberDue(s, o) || sweepDue(s, o)
  return soon ? 'now' : 'later'
}

/** A long job's first step: its phase begins (a renumbering round that interrupts a sweep resumes it after). */
export function phaseAtStart (m: Maintenance, job: JobKind, docs: number): Maintenance {
  if (job === 'renumber' && m.phase !== 'renumber') return { phase: 'renumber', moved: 0, most: docs, thenSweep: m.phase === 'sweep' }
  if (job === 'sweep' && m.phase !== 'sweep') return { phase: 'sweep' }
  return m
}

/** What the index writer answered for a maintenance job (index-writer.ts JobResult), with what the index holds after it. */
interface StepResult { roots?: number, last?: string, done?: boolean, more?: boolean, docs: number, span: number }

/**
 * The phase once a job has committed. A rebuild ends when its step says
 * done; a renumbering round when a step moved nothing, it has moved as many
 * roots as there were documents, or the span is down to twice the
 * documents (or one bucket more than them); a sweep when nothing more is
 * left. An answer for a phase that has been replaced since (a rebuild began
 * meanwhile) changes nothing.
 */
export function phaseAfter (m: Maintenance, job: JobKind, r: StepResult, bucketDocs: number): Maintenance {
  switch (job) {
    case 'batch': return m
    case 'clear': return m.phase === 'rebuild' ? { ...m, cleared: true } : m
    case 'rebuild':
      // A step answered before this rebuild's clear committed belongs to a rebuild this one replaced.
      if (m.phase !== 'rebuild' || !m.cleared) return m
      if (r.done === true) return m.follow === true ? { ...m, caughtUp: true } : { phase: 'none' }
      return { ...m, after: r.last ?? m.after, done: m.done + (r.roots ?? 0) }
    case 'renumber': {
      if (m.phase !== 'renumber') return m
      const moved = m.moved + (r.roots ?? 0)
      const over = (r.roots ?? 0) === 0 || moved >= m.most || r.span - r.docs <= Math.max(r.docs, bucketDocs)
      if (over) return m.thenSweep ? { phase: 'sweep' } : { phase: 'none' }
      return { ...m, moved }
    }
    case 'sweep': return m.phase === 'sweep' && r.more !== true ? { phase: 'none' } : m
  }
}

/**
 * Records arrived in bulk, the first of them `first`: a rebuild whose
 * position is at or past it (a resumed join whose pages come again, a
 * rebuild at open that went on ahead, pages out of key order) steps back to
 * just before it and goes on from there (the roots it indexes again are
 * indexed twice, which changes nothing); otherwise the phase stays.
 */
export function phaseOnBulk (m: Maintenance, first: string): Maintenance {
  if (m.phase !== 'rebuild' || m.after === '' || first > m.after) return m
  // The roots after `first` without its last character include it (and at most the few that differ from it only there).
  return { ...m, after: first.slice(0, -1), caughtUp: false }
}

/** The thread died: a sweep or a renumbering round starts over on the next thread; a rebuild goes on. */
export function phaseAfterDeath (m: Maintenance): Maintenance {
  return m.phase === 'rebuild' ? m : { phase: 'none' }
}
