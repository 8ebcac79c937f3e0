/**
 * The roots whose index entries may be stale, and search's record hook that
 * stages them. Inside every record write the hook inserts the changed root
 * (and, on a group change, every root involved) into `search_pending`: one
 * tiny row per record, in the writer's own transaction, which is all the
 * derived work a commit does. The merger indexes staged roots later, in
 * sorted batches outside the writers' commits, and removes their rows in
 * the transaction that completes their entries.
 *
 * The set is mirrored in memory so a query reads it without SQL. The mirror
 * equals the committed table: it changes only in after-commit hooks, of the
 * write that staged a root and of the batch that indexed it; a write that
 * rolls back never reaches it.
 */
import type { KvStore, SqlStatement, Tx } from '../kv/index.js'
import type { RecordId, RecordIndexer } from '../records/index.js'
import type { Excluder } from './matchers.js'

export class PendingRoots implements RecordIndexer {
  private readonly roots = new Set<string>()
  private readonly st: Record<'ins' | 'del' | 'all', SqlStatement>
  /** Roots of the batch being merged; one staged again meanwhile stays pending when the batch finishes. */
  private inFlight: ReadonlySet<string> | undefined
  private readonly restaged = new Set<string>()
  /** Told after every commit that staged something (the merger schedules itself). */
  onStaged: () => void = () => {}
  /** The merger's backlog bound (RecordIndexer.whenWritable). */
  gate: () => Promise<void> | undefined = () => undefined

  /** Told whenever group membership may have changed (the group cache drops itself). */
  groupsChanged: () => void = () => {}

  constructor (kv: KvStore, private readonly excluded: Excluder) {
    this.st = {
      ins: kv.prepare('INSERT OR IGNORE INTO search_pending (rid) VALUES (?)'),
      del: kv.prepare('DELETE FROM search_pending WHERE rid = ?'),
      all: kv.prepare('SELECT rid FROM search_pending').pluck()
    }
  }

  /** The staged roots, as committed. */
  get set (): ReadonlySet<string> {
    return this.roots
  }

  get size (): number {
    return this.roots.size
  }

  /** Reads the table into the mirror (at open). */
  load (): void {
    this.roots.clear()
    for (const r of this.st.all.iterate() as IterableIterator<string>) this.roots.add(r)
  }

  /** Inside a write: stages roots; they join the mirror when the write commits. */
  stage (tx: Tx, rids: Iterable<string>): void {
    const list = [...rids]
    for (const r of list) this.st.ins.run(r)
    tx.afterCommit(() => {
      for (const r of list) {
        this.roots.add(r)
        if (this.inFlight?.has(r) === true) this.restaged.add(r)
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

  // ------------------------------------------------------------ the merger's side

  /** A batch of these roots starts: from now on a root of it staged again is remembered. */
  beginBatch (rids: readonly string[]): void {
    this.inFlight = new Set(rids)
    this.restaged.clear()
  }

  /** Inside the batch's last write: unstages its roots, except those staged again since it began. */
  finishBatch (tx: Tx, rids: readonly string[]): void {
    const done = rids.filter(r => !this.restaged.has(r))
    for (const r of done) this.st.del.run(r)
    tx.afterCommit(() => {
      for (const r of done) this.roots.delete(r)
      this.endBatch()
    })
  }

  /** The batch ended (finished, or abandoned: its roots stay staged). */
  endBatch (): void {
    this.inFlight = undefined
    this.restaged.clear()
  }
}
