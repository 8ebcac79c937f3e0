/**
 * The FTS rows: one per record, written inside the record write that changed
 * them (a RecordIndexer), and the reads the planner makes of them.
 *
 * Invariant, after every commit of a process running search: every live
 * canonical root has exactly one row, holding buildHaystack of its visible
 * (group-merged) fields in `hay` and the lower-cased ids of the group's roots
 * in `ids`, and `idx:fts/<rid>` names that row; no other root has a row or a
 * mapping; `search_dirty` is empty. A write that touches no haystack field
 * and no group leaves the rows alone: FTS writes are the expensive part of
 * ingest.
 */
import type { KvStore, SqlStatement, Tx } from '../kv/index.js'
import { recordRows, type IndexedRecords, type RecordIndexer, type RecordId, type RowReader } from '../records/index.js'
import { HAY_FIELD_SET, buildHaystack, type Excluder } from './matchers.js'
import { FTS_MAP } from './search-schema.js'

export type FtsRow = [rid: string, hay: string, ids: string]
/** Separates the ids in the `ids` column; a query with whitespace can never match across two. */
export const IDS_SEPARATOR = ' '

export class FtsIndex implements RecordIndexer {
  private readonly st: Record<
  'get' | 'insert' | 'update' | 'delete' | 'match' | 'scan' | 'scanInstr' | 'dirtyDel' | 'dirtyList' | 'dirtyCount' | 'dirtyClear' | 'rowPage' | 'count',
  SqlStatement>

  constructor (
    private readonly kv: KvStore,
    private readonly records: IndexedRecords,
    private readonly excluded: Excluder,
    /** Told whenever group membership may have changed (the group cache drops itself). */
    private groupsChanged: () => void = () => {}
  ) {
    const p = (sql: string): SqlStatement => kv.prepare(sql)
    this.st = {
      get: p('SELECT hay, ids FROM fts WHERE rowid = ?').raw(),
      insert: p('INSERT INTO fts (rid, hay, ids) VALUES (?, ?, ?)'),
      update: p('UPDATE fts SET hay = ?, ids = ? WHERE rowid = ?'),
      delete: p('DELETE FROM fts WHERE rowid = ?'),
      match: p('SELECT rid, hay, ids FROM fts WHERE fts MATCH ?').raw(),
      scan: p('SELECT rid, hay, ids FROM fts').raw(),
      scanInstr: p('SELECT rid, hay, ids FROM fts WHERE instr(hay, ?) > 0').raw(),
      dirtyDel: p('DELETE FROM search_dirty WHERE rid = ?'),
      dirtyList: p('SELECT rid FROM search_dirty LIMIT ?').pluck(),
      dirtyCount: p('SELECT count(*) FROM search_dirty').pluck(),
      dirtyClear: p('DELETE FROM search_dirty'),
      rowPage: p('SELECT rowid, rid FROM fts WHERE rowid > ? ORDER BY rowid LIMIT ?').raw(),
      count: p('SELECT count(*) FROM fts').pluck()
    }
  }

  /** Whom to tell when group membership may have changed (a restarted service brings a new group cache). */
  onGroupsChanged (fn: () => void): void {
    this.groupsChanged = fn
  }

  // ------------------------------------------------------------ record hooks (inside the write transaction)

  onRecordChanged (tx: Tx, rid: RecordId, fields: ReadonlySet<string>): void {
    for (const f of fields) {
      if (HAY_FIELD_SET.has(f) && !this.excluded(f)) {
        this.refreshRoots(tx, [rid])
        return
      }
    }
  }

  onRecordDeleted (tx: Tx, rid: RecordId): void {
    // When rid was in a group, the records layer regroups next and onGroupChanged refreshes the survivors.
    this.removeRow(tx, rid)
  }

  onGroupChanged (tx: Tx, roots: readonly RecordId[]): void {
    this.groupsChanged()
    this.refreshRoots(tx, roots)
  }

  /** Brings the rows of these roots (and of their groups' canonical roots) in line with the kv rows. */
  refreshRoots (tx: Tx, roots: Iterable<string>): void {
    const canon = new Set<string>()
    for (const r of roots) {
      this.st.dirtyDel.run(r)
      if (!recordRows.isLive(tx, r)) {
        this.removeRow(tx, r)
        continue
      }
      const c = recordRows.canonOf(tx, r)
      if (c !== r) this.removeRow(tx, r)
      canon.add(c)
    }
    for (const c of canon) this.writeRow(tx, c)
  }

  private removeRow (tx: Tx, rid: string): void {
    this.st.dirtyDel.run(rid)
    const mk = FTS_MAP + rid
    const rowid = tx.get(mk)
    if (rowid === undefined) return
    this.st.delete.run(Number(rowid))
    tx.delete(mk)
  }

  private writeRow (tx: Tx, c: string): void {
    this.st.dirtyDel.run(c)
    const [hay, ids] = this.rowOf(tx, c)
    const mk = FTS_MAP + c
    const cur = tx.get(mk)
    if (cur !== undefined) {
      const old = this.st.get.get(Number(cur)) as [string, string] | undefined
      if (old !== undefined && old[0] === hay && old[1] === ids) return
      if (old !== undefined) {
        this.st.update.run(hay, ids, Number(cur))
        return
      }
    }
    const r = this.st.insert.run(c, hay, ids)
    tx.put(mk, String(r.lastInsertRowid))
  }

  /** The row of canonical root `c` from the kv rows: its own fields, or the group's merged fields and member ids. */
  rowOf (r: RowReader, c: string): [hay: string, ids: string] {
    const members = recordRows.membersOf(r, c)
    if (members.length === 1) {
      return [buildHaystack(f => (this.excluded(f) ? undefined : recordRows.field(r, c, f))), c.toLowerCase()]
    }
    // A group: the records layer merges its members (same connection, so inside a write it sees the write).
    const merged = this.records.getFlat(c) ?? {}
    const hay = buildHaystack(f => (this.excluded(f) || !Object.hasOwn(merged, f) ? undefined : merged[f]))
    return [hay, members.map(m => m.toLowerCase()).join(IDS_SEPARATOR)]
  }

  // ------------------------------------------------------------ reads

  /** Rows matching an FTS5 query (see ftsQuery). */
  match (query: string): FtsRow[] {
    return this.st.match.all(query) as FtsRow[]
  }

  /** Every row, or the rows whose haystack contains `needle` (well-formed: instr then equals a JS substring test). */
  scan (needle?: string): FtsRow[] {
    return (needle === undefined ? this.st.scan.all() : this.st.scanInstr.all(needle)) as FtsRow[]
  }

  /** Whether root `rid` has a row its mapping names. */
  hasRow (rid: string): boolean {
    const rowid = this.kv.get(FTS_MAP + rid)
    return rowid !== undefined && this.st.get.get(Number(rowid)) !== undefined
  }

  /** Roots listed as changed without the search hook (at most `limit`). */
  dirty (limit: number): string[] {
    return this.st.dirtyList.all(limit) as string[]
  }

  dirtyCount (): number {
    return this.st.dirtyCount.get() as number
  }

  /** Only for a full rebuild, which refreshes every root itself. */
  clearDirty (): void {
    this.st.dirtyClear.run()
  }

  rowCount (): number {
    return this.st.count.get() as number
  }

  /** Rows by rowid (the rebuild's sweep). */
  rowPage (afterRowid: number, limit: number): Array<[number, string]> {
    return this.st.rowPage.all(afterRowid, limit) as Array<[number, string]>
  }

  deleteRowid (rowid: number): void {
    this.st.delete.run(rowid)
  }
}

const phrase = (t: string): string => `"${t.replaceAll('"', '""')}"`

/**
 * An FTS5 query for rows whose haystack holds every token, or (when `idFragment`
 * is given) whose ids hold the fragment. Each string is a quoted phrase,
 * which the trigram tokenizer matches as a substring.
 */
export function ftsQuery (tokens: readonly string[], idFragment?: string): string {
  const hay = tokens.length === 0 ? undefined : `hay : (${tokens.map(phrase).join(' AND ')})`
  const ids = idFragment === undefined ? undefined : `ids : ${phrase(idFragment)}`
  return hay === undefined ? ids ?? '' : ids === undefined ? hay : `(${hay}) OR (${ids})`
}
