/**
 * The SQL objects search keeps beside the kv table, all derived from the kv
 * rows and rebuildable from them:
 *
 * - `kv_field_v`: the field index of metadata-storage-structure.md, verbatim.
 *   Queries repeat its expressions exactly (FIELD_EXPR, `lower(v)`,
 *   FILE_RANGE) so SQLite answers them from the index alone (covering).
 * - `kv_field_multi`: the same columns, partial to values a comma split or a
 *   trim can change (a comma, or whitespace at either end). An exact filter
 *   seeks the value in `kv_field_v` and scans only this small index for
 *   comma-sets, instead of scanning every value of the field.
 * - `fts`: FTS5 trigram table, one row per record (a group has one row, under
 *   its canonical root, holding the merged haystack); `idx:fts/<rid>` in kv
 *   holds the row's rowid. The haystack is stored already folded and the
 *   tokenizer is case-sensitive, so a folded token of 3+ code points that is
 *   a substring of the haystack always matches its row. Beside the spec's
 *   `fts(rid UNINDEXED, hay)` it has an `ids` column (the group's root ids,
 *   lower-cased), so the "query is part of the root id" rule is an index
 *   lookup too rather than a scan of every root.
 * - `search_dirty` and three triggers: every change to a haystack field or to
 *   group membership (`idx:grp/`) records the root here, in the same
 *   statement, whoever writes it. Search's record hook clears the entry when
 *   it refreshes the row, so the table stays empty while writes go through a
 *   process running search; a process that writes without it (a tool, a
 *   test, an older build) leaves entries behind, and search treats those
 *   roots' rows as stale until it has refreshed them.
 */
import type { KvStore } from '../kv/index.js'
import { WHITESPACE_CHARS } from './fold.js'
import { HAY_FIELDS } from './matchers.js'

/**
 * The record layout as search's SQL reads it, named here once (the record
 * layer keeps its key grammar private; test/search/layout-contract.test.ts
 * checks these against it): record rows `file:<rid>/<field>`, the live-root
 * index `idx:roots/<rid>`, the group entries `idx:grp/<rid>` = canonical rid.
 */
export const ROOTS_LO = 'idx:roots/'
export const ROOTS_HI = 'idx:roots0'
export const GRP_PREFIX = 'idx:grp/'

/** The field-name column of both field indexes. */
export const FIELD_EXPR = "lower(substr(k,instr(k,'/')+1))"
export const FILE_RANGE = "k>='file:' AND k<'file;' AND instr(k,'/')>0"
/** A value whose comma-split pieces are not just the value itself. */
export const MULTI_COND = `(instr(v,',')>0 OR trim(v,'${WHITESPACE_CHARS}')<>v)`

export const FTS_MAP = 'idx:fts/'
export const VERSION_KEY = 'idx:search/version'
/** Bump when the FTS row format, the fold rule or the haystack fields change: a store with another marker is rebuilt. */
export const FORMAT = 'search-2;trigram-cs;fold-1'

const HAY_LIST = HAY_FIELDS.map(f => `'${f}'`).join(',')
const dirtyWhen = (r: string): string =>
  `((${r}.k>='file:' AND ${r}.k<'file;' AND substr(${r}.k,instr(${r}.k,'/')+1) IN (${HAY_LIST})) OR (${r}.k>='idx:grp/' AND ${r}.k<'idx:grp0'))`
const ridOf = (r: string): string =>
  `CASE WHEN ${r}.k>='idx:grp/' THEN substr(${r}.k,9) ELSE substr(${r}.k,6,instr(${r}.k,'/')-6) END`

const OBJECTS: Array<{ name: string, type: 'index' | 'table' | 'trigger', sql: string }> = [
  {
    name: 'kv_field_v',
    type: 'index',
    sql: `CREATE INDEX IF NOT EXISTS kv_field_v ON kv(${FIELD_EXPR}, lower(v), v) WHERE ${FILE_RANGE}`
  },
  {
    name: 'kv_field_multi',
    type: 'index',
    sql: `CREATE INDEX IF NOT EXISTS kv_field_multi ON kv(${FIELD_EXPR}, lower(v), v) WHERE ${FILE_RANGE} AND ${MULTI_COND}`
  },
  {
    name: 'fts',
    type: 'table',
    sql: "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(rid UNINDEXED, hay, ids, tokenize='trigram case_sensitive 1')"
  },
  { name: 'search_dirty', type: 'table', sql: 'CREATE TABLE IF NOT EXISTS search_dirty (rid TEXT PRIMARY KEY) WITHOUT ROWID' },
  {
    name: 'search_dirty_ins',
    type: 'trigger',
    sql: `CREATE TRIGGER IF NOT EXISTS search_dirty_ins AFTER INSERT ON kv WHEN ${dirtyWhen('new')} BEGIN INSERT OR IGNORE INTO search_dirty(rid) VALUES (${ridOf('new')}); END`
  },
  {
    name: 'search_dirty_upd',
    type: 'trigger',
    sql: `CREATE TRIGGER IF NOT EXISTS search_dirty_upd AFTER UPDATE ON kv WHEN ${dirtyWhen('new')} BEGIN INSERT OR IGNORE INTO search_dirty(rid) VALUES (${ridOf('new')}); END`
  },
  {
    name: 'search_dirty_del',
    type: 'trigger',
    sql: `CREATE TRIGGER IF NOT EXISTS search_dirty_del AFTER DELETE ON kv WHEN ${dirtyWhen('old')} BEGIN INSERT OR IGNORE INTO search_dirty(rid) VALUES (${ridOf('old')}); END`
  }
]

/**
 * Creates whatever is missing, and replaces whatever another version defined
 * differently. Returns the names it (re)created: if the FTS table or a trigger
 * is among them, writes may have happened that nothing recorded, so the caller
 * rebuilds. Creating `kv_field_v` on a large existing store takes a while
 * (SQLite builds it in one statement).
 */
export function ensureSchema (kv: KvStore): string[] {
  const stored = kv.prepare('SELECT sql FROM sqlite_master WHERE type = ? AND name = ?').pluck()
  const created: string[] = []
  for (const o of OBJECTS) {
    const sql = stored.get(o.type, o.name) as string | undefined
    // sqlite_master keeps the statement without its IF NOT EXISTS.
    if (sql === o.sql.replace(' IF NOT EXISTS', '')) continue
    if (sql !== undefined) kv.exec(`DROP ${o.type === 'table' ? 'TABLE' : o.type === 'index' ? 'INDEX' : 'TRIGGER'} ${o.name}`)
    kv.exec(o.sql)
    created.push(o.name)
  }
  return created
}

/** The marker value for a store whose FTS rows were built with this format and these excluded haystack fields. */
export function versionMarker (excludedHayFields: readonly string[]): string {
  return excludedHayFields.length === 0 ? FORMAT : `${FORMAT};excluded=${excludedHayFields.join(',')}`
}
