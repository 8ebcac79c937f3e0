/**
 * The index writer: the only code that writes the index file. It runs on
 * a worker thread (index-worker.ts) with a connection of its own, where the
 * index file is `main` and the store file is attached (read only by this
 * code), so its transactions never take the store's write lock: writers
 * commit while a batch is indexed, on the other core.
 *
 * Each job is one transaction of the index file and leaves it consistent:
 * - batch: per root, the old document (if any) is dropped with its FTS row,
 *   a live root gets a new document id (AUTOINCREMENT, never reused); then
 *   one statement computes the batch's field entries in SQL from their kv
 *   rows and inserts them into `search_field` in key order (SQLite sorts
 *   them first: consecutive entries land on the same pages), another adds
 *   the multi-valued ones to `search_fstat`; then the FTS rows of the
 *   canonical roots the batch touched, and the batch's number in
 *   `search_info`;
 * - rebuild step: the same for the next live roots in key order; the last
 *   step writes the format marker;
 * - sweep step: removes the entries of documents that no longer exist (a
 *   re-indexed root's old ones) in a slice of the index, in key order;
 * - renumber step: indexes again, as a batch would, the roots of the oldest
 *   documents, which gives them new document ids at the top. Churn leaves
 *   the ids of live documents ever more spread out (a re-indexed root takes
 *   a new id, and a root never written again keeps its old one), and a
 *   value probe seeks every bucket between the oldest live id and the
 *   newest (field-index.ts); renumbering packs them again.
 *
 * The writer reads the store at the snapshot its transaction starts with. A
 * root written after that snapshot is staged again by its write, and the
 * scheduler (merger.ts) keeps it staged when the batch finishes, so it is
 * indexed again by a later batch.
 */
import { prefixEnd, type SideFile, type SqlStatement } from '../kv/index.js'
import { recordRows, type RowReader } from '../records/index.js'
import { ftsRowOf } from './fts-index.js'
import { HAY_FIELDS, makeExcluder, type Excluder } from './matchers.js'
import {
  FIELD_AT, STATE_FORMAT, STATE_GEN, STATE_ID, STATE_ORPHANS, clearStructures, ensureIndexSchema, fillFieldsSql, fillFstatSql, multiCond, readIndexInfo,
    recordKey, spanSql,
  type IndexInfo
} from './search-schema.js'

/** Entries one sweep step looks at. */
const SWEEP_ENTRIES = 20_000

/** What a job changed that the scheduler keeps count of. */
export interface JobResult {
  orphans: number
  docs: number
  /** Document ids from the oldest live document's to the newest's (0 with none): what a value probe's buckets cover. */
  span: number
  /** Rebuild and renumber steps: roots indexed. Rebuild step: the last one, and whether the rebuild is complete. */
  roots?: number
  last?: string
  done?: boolean
  /** Sweep step: whether more of the index remains to be swept. */
  more?: boolean
  /** Batch: how many of the `extend` messages sent to join it it took (the first ones sent). */
  extra?: number
}

type Key = [string, number, string, number, string]

/** What a batch learned of a live root it indexed: its group's canonical root (undefined: in no group) and its new document. */
interface Indexed { group: string | undefined, d: number }

export class IndexWriter {
  private readonly r: RowReader
  private readonly excluded: Excluder
  /** The haystack fields that are not excluded, and a statement reading them of one root at once (none when all are). */
  private readonly hayFields: readonly string[]
  private readonly hayRows: SqlStatement | undefined
  private readonly st: Record<
  'docOf' | 'docIns' | 'docDel' | 'docSpan' | 'oldestDocs' | 'ftsDel' | 'ftsGet' | 'ftsPut' | 'fill' | 'fstatAdd' |
  'infoGet' | 'infoPut' | 'infoDel' | 'sweepPage' | 'fieldDel' | 'fstatDec' | 'fstatPrune', SqlStatement>

  private orphans: number
  private docs: number
  private sweepAfter: Key | undefined
  private orphansAtSweepStart = 0
  readonly info: IndexInfo

  /** `db`: the index file's connection with the store attached (its `kv` table is the store's). */
  constructor (private readonly db: SideFile, excludePrefixes: readonly string[], private readonly marker: string, bucketShift: number) {
    const created = ensureIndexSchema(db)
    this.excluded = makeExcluder(excludePrefixes)
    this.r = storeReader(db)
    this.hayFields = HAY_FIELDS.filter(f => !this.excluded(f))
    this.hayRows = this.hayFields.length === 0
      ? undefined
      : db.prepare(`SELECT substr(k, ${FIELD_AT}), v FROM kv WHERE k IN (${this.hayFields.map(() => '?').join(', ')})`).raw()
    const p = (sql: string): SqlStatement => db.prepare(sql)
    const key = 'ORDER BY f, b, v, d, rf'
    this.st = {
      docOf: p('SELECT d FROM search_doc WHERE rid = ?').pluck(),
      docIns: p('INSERT INTO search_doc (rid, g) VALUES (?, ?)'),
      docDel: p('DELETE FROM search_doc WHERE d = ?'),
      docSpan: p(spanSql('main')).pluck(),
      oldestDocs: p('SELECT rid FROM search_doc ORDER BY d LIMIT ?').pluck(),
      ftsDel: p('DELETE FROM search_fts WHERE rowid = ?'),
      ftsGet: p('SELECT hay, ids FROM search_fts WHERE rowid = ?').raw(),
      ftsPut: p('INSERT OR REPLACE INTO search_fts (rowid, hay, ids) VALUES (?, ?, ?)'),
      fill: p(fillFieldsSql(excludePrefixes, bucketShift)),
      fstatAdd: p(fillFstatSql(excludePrefixes)),
      infoGet: p('SELECT v FROM search_info WHERE k = ?').pluck(),
      infoPut: p('INSERT INTO search_info (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v'),
      infoDel: p('DELETE FROM search_info WHERE k = ?'),
      sweepPage: p(`SELECT f, b, v, d, rf, EXISTS (SELECT 1 FROM search_doc doc WHERE doc.d = s.d) AS live, ${multiCond('coalesce(s.rv, s.v)')} AS m
        FROM search_field s WHERE (f, b, v, d, rf) > (?, ?, ?, ?, ?) ${key} LIMIT ?`).raw(),
      fieldDel: p('DELETE FROM search_field WHERE f = ? AND b = ? AND v = ? AND d = ? AND rf = ?'),
      fstatDec: p('UPDATE search_fstat SET multi = multi - 1 WHERE f = ?'),
      fstatPrune: p('DELETE FROM search_fstat WHERE multi <= 0')
    }
    this.info = readIndexInfo(db, 'main', created)
    this.orphans = this.info.orphans
    this.docs = this.info.docs
  }

  /** Empties the structures for a rebuild, under the store's index id, numbering batches on from `gen`. */
  clear (id: string, gen: number): JobResult {
    this.db.transaction(() => {
      clearStructures(this.db)
      this.st.infoDel.run(STATE_FORMAT)
      this.st.infoPut.run(STATE_ORPHANS, '0')
      this.st.infoPut.run(STATE_ID, id)
      this.st.infoPut.run(STATE_GEN, String(gen))
    })
    this.orphans = 0
    this.docs = 0
    this.sweepAfter = undefined
    return this.result()
  }

  /** Indexes staged roots (sorted), as batch number `gen`. */
  batch (rids: readonly string[], gen: number): JobResult {
    this.db.transaction(() => {
      this.index(rids)
      this.st.infoPut.run(STATE_GEN, String(gen))
    })
    return this.result()
  }

  /**
   * Indexes up to `n` live roots after `after` ('' from the first), and no
   * root past `upTo` when given (a rebuild following records arriving in
   * bulk goes no further than they have come). The step that finds none
   * left, with no such bound, writes the format marker.
   */
  rebuildStep (after: string, n: number, upTo?: string): JobResult {
    let rids: string[] = []
    this.db.transaction(() => {
      rids = recordRows.liveRoots(this.r, after === '' ? undefined : after, n, upTo)
      if (rids.length > 0) this.index(rids)
      else if (upTo === undefined) this.st.infoPut.run(STATE_FORMAT, this.marker)
    })
    return { ...this.result(), roots: rids.length, done: rids.length === 0, ...(rids.length === 0 ? {} : { last: rids[rids.length - 1] }) }
  }

  /** Indexes the roots of the `n` oldest documents again, under new document ids (in key order, as a batch). */
  renumberStep (n: number): JobResult {
    let rids: string[] = []
    this.db.transaction(() => {
      rids = (this.st.oldestDocs.all(n) as string[]).sort()
      if (rids.length > 0) this.index(rids)
    })
    return { ...this.result(), roots: rids.length }
  }

  /** One slice of a sweep of orphaned entries (the first call starts one). */
  sweepStep (): JobResult {
    let more = false
    this.db.transaction(() => {
      if (this.sweepAfter === undefined) {
        this.sweepAfter = ['', -1, '', -1, '']
        this.orphansAtSweepStart = this.orphans
      }
      const rows = this.st.sweepPage.all(...this.sweepAfter, SWEEP_ENTRIES) as Array<[string, number, string, number, string, number, number]>
      for (const [f, b, v, d, rf, live, m] of rows) {
        if (live === 1) continue
        this.st.fieldDel.run(f, b, v, d, rf)
        if (m === 1) this.st.fstatDec.run(f)
      }
      if (rows.length === SWEEP_ENTRIES) {
        const last = rows[rows.length - 1]
        this.sweepAfter = [last[0], last[1], last[2], last[3], last[4]]
        more = true
        return
      }
      this.st.fstatPrune.run()
      // Documents orphaned while the sweep ran may have entries behind its cursor: they stay counted.
      this.orphans = Math.max(0, this.orphans - this.orphansAtSweepStart)
      this.st.infoPut.run(STATE_ORPHANS, String(this.orphans))
      this.sweepAfter = undefined
    })
    return { ...this.result(), more }
  }

  private result (): JobResult {
    return { orphans: this.orphans, docs: this.docs, span: this.st.docSpan.get() as number }
  }

  /**
   * Inside a transaction: new documents, entries and FTS rows for `rids`.
   * The store is read at the transaction's snapshot, so what the first
   * pass reads of a root (live, its group, its new document) still holds
   * when its FTS row is made, and is not read again.
   */
  private index (rids: readonly string[]): void {
    const canon = new Set<string>()
    const indexed = new Map<string, Indexed>()
    let orphans = 0
    let docs = 0
    const fill: Array<[string, number]> = []
    for (const rid of rids) {
      const old = this.st.docOf.get(rid) as number | undefined
      if (old !== undefined) {
        this.st.docDel.run(old)
        this.st.ftsDel.run(old)
        orphans++
        docs--
      }
      if (!recordRows.isLive(this.r, rid)) continue
      const group = recordRows.groupOf(this.r, rid)
      const d = Number(this.st.docIns.run(rid, group === undefined ? 0 : 1).lastInsertRowid)
      fill.push([rid, d])
      docs++
      indexed.set(rid, { group, d })
      canon.add(group ?? rid)
    }
    if (fill.length > 0) {
      const arg = { docs: JSON.stringify(fill) }
      this.st.fill.run(arg)
      this.st.fstatAdd.run(arg)
    }
    for (const c of [...canon].sort()) {
      const known = indexed.get(c)
      let d: number | undefined
      if (known !== undefined) {
        // Not canonical (another member is): that member's row, if it was staged too.
        if ((known.group ?? c) !== c) continue
        d = known.d
      } else {
        // Not canonical any more (it left the group since): its own staging brings its row.
        if (!recordRows.isLive(this.r, c) || recordRows.canonOf(this.r, c) !== c) continue
        d = this.st.docOf.get(c) as number | undefined
        if (d === undefined) continue
      }
      const alone = known !== undefined && known.group === undefined
      const [hay, ids] = ftsRowOf(this.r, c, this.excluded, alone ? [c] : undefined, alone ? this.hayOf(c) : undefined)
      // A document made by this batch has no row yet (ids are never reused); an older one may already hold this one.
      if (known === undefined) {
        const old = this.st.ftsGet.get(d) as [string, string] | undefined
        if (old !== undefined && old[0] === hay && old[1] === ids) continue
      }
      this.st.ftsPut.run(d, hay, ids)
    }
    if (orphans > 0) this.st.infoPut.run(STATE_ORPHANS, String(this.orphans + orphans))
    this.orphans += orphans
    this.docs += docs
  }

  /** The haystack fields of one root, read with one statement. */
  private hayOf (rid: string): (field: string) => string | undefined {
    if (this.hayRows === undefined) return () => undefined
    const rows = this.hayRows.all(...this.hayFields.map(f => recordKey(rid, f))) as Array<[string, string]>
    return field => {
      for (const [f, v] of rows) if (f === field) return v
      return undefined
    }
  }
}

/** Reads of the attached store's kv rows, the shape the record layer's row readers take. */
function storeReader (db: SideFile): RowReader {
  const get = db.prepare('SELECT v FROM kv WHERE k = ?').pluck()
  const range = db.prepare('SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k').raw()
  const rangeLimit = db.prepare('SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?').raw()
  const keys = db.prepare('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k').pluck()
  const keysLimit = db.prepare('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?').pluck()
  const suffixes = db.prepare('SELECT substr(k, ?), v FROM kv WHERE k >= ? AND k < ? ORDER BY k').raw()
  return {
    get: k => get.get(k) as string | undefined,
    range: (lo, hi, limit) => (limit === undefined ? range.all(lo, hi) : rangeLimit.all(lo, hi, limit)) as Array<[string, string]>,
    keys: (lo, hi, limit) => (limit === undefined ? keys.all(lo, hi) : keysLimit.all(lo, hi, limit)) as string[],
    suffixes: prefix => {
      const out: Record<string, string> = {}
      for (const [k, v] of suffixes.all(prefix.length + 1, prefix, prefixEnd(prefix)) as Array<[string, string]>) out[k] = v
      return out
    }
  }
}
