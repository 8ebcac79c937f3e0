/**
 * The roots whose index entries may be stale, and search's record hook that
 * stages them. Inside every record write the hook inserts the changed root
 * (and, on a group change, every root involved) into `search_pending`: one
 * tiny row per record, in the writer's own transaction, which is all the
 * derived work a commit does. The merger indexes staged roots later, in
 * sorted batches outside the writers' commits, and removes their rows in
 * the transaction that completes their entries.
 *
 * A bulk apply (a join) stages nothing per record: its transactions mark
 * the store (`search_state` bulk-unindexed, in the same transaction) and
 * the merger rebuilds the index behind the arriving records, in key order,
 * completing it once the bulk has ended (or rebuilds at the next open, if
 * the node stopped first); until then search reads every record.
 *
 * The set is mirrored in memory so a query reads it without SQL. The mirror
 * equals the committed table: it changes only in after-commit hooks, of the
 * write that staged a root and of the batch that indexed it; a write that
 * rolls back never reaches it.
 */
import type { KvStore, SqlStatement, Tx } from '../kv/index.js'
import type { BulkRoots, RecordId, RecordIndexer } from '../records/index.js'
import type { Excluder } from './matchers.js'
import { STATE_BULK } from './search-schema.js'

export class PendingRoots implements RecordIndexer {
  private readonly roots = new Set<string>()
  /** The staged roots in no batch being merged. */
  private readonly free = new Set<string>()
  private readonly st: Record<'ins' | 'del' | 'all' | 'bulkMark', SqlStatement>
  /** The store's bulk mark is written (by this process or before it). */
  private bulkMarked = false
  /** The batches being merged (disjoint): a root of one staged again meanwhile stays pending when it finishes. */
  private readonly inFlight = new Set<PendingBatch>()
  /** Told after every commit that staged something (the merger schedules itself). */
  onStaged: () => void = () => {}
  /** The merger's backlog bound (RecordIndexer.whenWritable). */
  gate: () => Promise<void> | undefined = () => undefined

  /** Told whenever group membership may have changed (the group cache drops itself). */
  groupsChanged: () => void = () => {}

  /** Told after a bulk apply's transaction commits, with its first and last root (the merger stops trusting the index). */
  onBulk: (first: string, last: string) => void = () => {}
  /** Told when a bulk apply has ended (`ordered`: its records came in key order), so the merger completes the index. */
  onBulkEnded: (ordered: boolean) => void = () => {}

  constructor (kv: KvStore, private readonly excluded: Excluder) {
    this.st = {
      ins: kv.prepare('INSERT OR IGNORE INTO search_pending (rid) VALUES (?)'),
      del: kv.prepare('DELETE FROM search_pending WHERE rid = ?'),
      all: kv.prepare('SELECT rid FROM search_pending').pluck(),
      bulkMark: kv.prepare(`INSERT OR IGNORE INTO main.search_state (k, v) VALUES ('${STATE_BULK}', '1')`)
    }
  }

  /** The staged roots, as committed. */
  get set (): ReadonlySet<string> {
    return this.roots
  }

  get size (): number {
    return this.roots.size
  }

  /** The staged roots in no batch being merged. */
  get freeRoots (): ReadonlySet<string> {
    return this.free
  }

  /**
   * Up to `n` free staged roots, the longest staged first (the set keeps
   * staging order). Never the whole set sorted: with a large backlog that
   * would cost more than the batch, and an extension runs at every commit.
   */
  oldestFree (n: number): string[] {
    const out: string[] = []
    if (n <= 0) return out
    for (const r of this.free) {
      out.push(r)
      if (out.length >= n) break
    }
    return out
  }

  /** Reads the table into the mirror (at open). */
  load (): void {
    this.roots.clear()
    this.free.clear()
    for (const r of this.st.all.iterate() as IterableIterator<string>) {
      this.roots.add(r)
      this.free.add(r)
    }
  }

  /** Inside a write: stages roots; they join the mirror when the write commits. */
  stage (tx: Tx, rids: Iterable<string>): void {
    const list = [...rids]
    for (const r of list) this.st.ins.run(r)
    tx.afterCommit(() => {
      for (const r of list) {
        this.roots.add(r)
        let held = false
        for (const b of this.inFlight) {
          if (b.rids.has(r)) {
            b.restaged.add(r)
            held = true
          }
        }
        if (!held) this.free.add(r)
      }
      this.onStaged()
    })
  }

  // ------------------------------------------------------------ RecordIndexer

  onRecordChanged (tx: Tx, rid: RecordId, fields: Iterable<string>): void {
    // Excluded fields are in no structure: a write of only those changes nothing search keeps.
    for (const f of fields) {
      if (!this.excluded(f)) {
        this.stage(tx, [rid])
        return
      }
    }
  }

  onRecordDeleted (tx: Tx, rid: RecordId): void {
    this.stage(tx, [rid])
  }

  onGroupChanged (tx: Tx, roots: readonly RecordId[]): void {
    // The cache reloads from the committed rows on next use; dropping it early is always safe.
    this.groupsChanged()
    this.stage(tx, roots)
  }

  whenWritable (): Promise<void> | undefined {
    return this.gate()
  }

  onBulkApply (tx: Tx, roots: BulkRoots): void {
    // The group cache reloads from the committed rows on next use: groups may change under a bulk apply too.
    this.groupsChanged()
    if (!this.bulkMarked) this.st.bulkMark.run()
    tx.afterCommit(() => {
      this.bulkMarked = true
      this.groupsChanged()
      this.onBulk(roots.first, roots.last)
    })
  }

  onBulkEnd (ordered: boolean): void {
    this.onBulkEnded(ordered)
  }

  /** The store's bulk mark was found at open, or is gone (the rebuild after a bulk apply removed it). */
  setBulkMarked (marked: boolean): void {
    this.bulkMarked = marked
  }

  // ------------------------------------------------------------ the merger's side

  /** A batch of these roots (free ones) starts: from now on a root of it staged again is remembered. */
  beginBatch (rids: readonly string[]): PendingBatch {
    const b: PendingBatch = { rids: new Set(), restaged: new Set() }
    this.inFlight.add(b)
    this.extendBatch(b, rids)
    return b
  }

  /** More free roots join a batch that has not started. */
  extendBatch (b: PendingBatch, rids: readonly string[]): void {
    for (const r of rids) {
      b.rids.add(r)
      this.free.delete(r)
    }
  }

  /** Roots a batch did not take after all (it had started before they reached it): free again. */
  releaseFromBatch (b: PendingBatch, rids: readonly string[]): void {
    for (const r of rids) {
      b.rids.delete(r)
      b.restaged.delete(r)
      if (this.roots.has(r)) this.free.add(r)
    }
  }

  /** Inside the batch's last write: unstages its roots, except those staged again since it began. */
  finishBatch (tx: Tx, b: PendingBatch): void {
    const done: string[] = []
    for (const r of b.rids) if (!b.restaged.has(r)) done.push(r)
    for (const r of done) this.st.del.run(r)
    tx.afterCommit(() => {
      for (const r of done) this.roots.delete(r)
      this.endBatch(b)
    })
  }

  /** The batch ended (finished, or abandoned: its roots stay staged): those still staged are free again. */
  endBatch (b: PendingBatch): void {
    if (!this.inFlight.delete(b)) return
    for (const r of b.rids) if (this.roots.has(r)) this.free.add(r)
  }
}

/** A batch being merged: its roots, and those of them staged again since they joined it. */
export interface PendingBatch {
  readonly rids: Set<string>
  readonly restaged: Set<string>
}
