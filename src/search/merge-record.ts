/**
 * What the merger keeps in the store beside the index file (`search_state`,
 * search-schema.ts): the number of the last batch the store unstaged, the
 * change-log mark up to which every change is indexed or staged, and the
 * flag of records that arrived in bulk and are not indexed yet. Each is
 * written in the transaction that makes it true, so a crash leaves them
 * level with the rows they describe.
 */
import type { KvStore, SqlStatement, Tx } from '../kv/index.js'
import type { IndexedRecords } from '../records/index.js'
import type { PendingBatch, PendingRoots } from './pending-roots.js'
import { STATE_BULK, STATE_GEN, STATE_LOG_MARK } from './search-schema.js'

export class MergeRecord {
  private readonly st: Record<'get' | 'put' | 'del', SqlStatement>

  constructor (private readonly kv: KvStore, private readonly records: IndexedRecords, private readonly pending: PendingRoots) {
    this.st = {
      get: kv.prepare('SELECT v FROM main.search_state WHERE k = ?').pluck(),
      put: kv.prepare('INSERT INTO main.search_state (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v'),
      del: kv.prepare('DELETE FROM main.search_state WHERE k = ?')
    }
  }

  /** Every change logged up to now is indexed or staged (all of this process's writes go through the hook). */
  mark (_tx: Tx): void {
    const head = this.records.changeLogHead()
    if (head !== undefined && this.st.get.get(STATE_LOG_MARK) !== head) this.st.put.run(STATE_LOG_MARK, head)
  }

  /** A batch the index file committed: its roots unstaged and its number recorded, in one transaction; `done` runs after the commit. */
  batchCommitted (batch: PendingBatch, gen: number, done: () => void): void {
    this.kv.writeSync(tx => {
      this.pending.finishBatch(tx, batch)
      this.st.put.run(STATE_GEN, String(gen))
      this.mark(tx)
      tx.afterCommit(done)
    })
  }

  /** A rebuild is over: the mark moves on, and records that arrived in bulk before it began are indexed now (unless more are arriving). */
  rebuildDone (bulkArriving: boolean): void {
    this.kv.writeSync(tx => {
      this.mark(tx)
      if (!bulkArriving) this.st.del.run(STATE_BULK)
    })
    if (!bulkArriving) this.pending.setBulkMarked(false)
  }
}
