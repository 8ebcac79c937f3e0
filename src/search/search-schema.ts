/**
 * The SQL objects search keeps, and the SQL that names them, in one place.
 * Every object is derived from the kv rows and rebuildable from them; none
 * is replicated.
 *
 * In the store file, written in the writers' own transactions:
 * - `search_pending(rid)`: roots changed since they were last indexed,
 *   written in the same transaction as the change by search's record hook.
 *   Until a batch that indexed a root has committed in the index file and
 *   its row is removed, queries ignore its entries and check it on the kv
 *   rows.
 * - `search_state(k, v)`: the change-log id through which every change is
 *   indexed or pending, the index file's id and the number of the last
 *   batch whose roots were unstaged.
 *
 * In the index file (`<store>-search`, its own WAL), written only by the
 * index writer (index-writer.ts, on a worker thread) and attached to the
 * store's connection as `search` for queries:
 * - `search_info(k, v)`: the format marker, the orphan count, the index
 *   file's id and the number of the last batch it committed.
 *
 * - `search_doc(d, rid, g)`: one row per live root that has been indexed,
 *   `d` its document id (AUTOINCREMENT: never reused). Re-indexing a root
 *   gives it a new `d`, so its old field entries become orphans that no
 *   query sees (every read joins on `search_doc`) and a sweep removes later.
 *   `g` is 1 when the root was in a group when indexed.
 * - `search_field(f, b, v, d, rf, rv)`: the field index, one entry per
 *   indexed field of a root: `f` the field name and `v` the value under
 *   SQLite's ASCII `lower()`; `rf` the raw name when it differs from `f`
 *   (else ''); `rv` the raw value when it differs from `v` (else NULL), and
 *   then `v` is cut to VALUE_KEY_CHARS characters (a key only narrows; the
 *   raw value decides). `b` is the document's bucket, `d >> bucketShift`
 *   (4,096 documents by default). Entries are inserted in key order in large
 *   batches. A batch's documents are the newest, so its entries go into the
 *   newest bucket or two of each field, and its commit rewrites those pages
 *   only, not pages all over the table (without buckets a batch's values
 *   fell everywhere in each field's range: at 60,000 records a batch took
 *   twice as long as at 10,000, and the writes grew with the table). A value
 *   probe seeks each bucket, from the oldest document's to the newest's.
 * - `search_fstat(f, multi)`: per lower-cased field name, how many entries
 *   hold a comma or padding (a value a comma split or a trim changes); an
 *   exact filter scans a field's values for comma-sets only when it has any.
 *   Only ever too high (the sweep lowers it), never too low.
 * - `search_fts(hay, ids)`: FTS5 trigram table, rowid = the `d` of a
 *   canonical root, one row per record (a group: the merged haystack and
 *   every member id). The haystack is folded, and a haystack field whose
 *   folded value is part of another's is left out (a token holds no
 *   whitespace, so it is inside one field: the answer cannot change).
 */
import type { KvStore, SideFile } from '../kv/index.js'
import { WHITESPACE_CHARS } from './fold.js'

/** Bump when the entries, the FTS row format, the fold rule or the haystack change: a store with another marker is rebuilt. */
const FORMAT = 'search-4;docs;trigram-cs;fold-1;hay-dedup'
/**
 * Documents per bucket of the field index, as a power of two (4,096): a
 * document's entries are keyed under bucket `d >> shift` (see search_field).
 */
export const DEFAULT_BUCKET_SHIFT = 12
/** Characters of a lower-cased value kept in the key when the raw value is stored beside it. */
export const VALUE_KEY_CHARS = 24

/**
 * The record layout as search's SQL reads it, named here once (the record
 * layer keeps its key grammar private; test/search/layout-contract.test.ts
 * checks these against it): record rows `file:<rid>/<field>` (a root id is
 * 26 characters, so the field starts at character FIELD_AT), the live-root
 * index `idx:roots/<rid>`, the group entries `idx:grp/<rid>` = canonical rid.
 */
export const FILE_PREFIX = 'file:'
export const FIELD_AT = 33
export const ROOTS_LO = 'idx:roots/'
export const ROOTS_HI = 'idx:roots0'
export const GRP_PREFIX = 'idx:grp/'

/** The kv key of field `field` of root `rid`. */
export const recordKey = (rid: string, field: string): string => `${FILE_PREFIX}${rid}/${field}`

/** Splits a record row's key `file:<rid>/<field>` into its root and field. */
export function splitRecordKey (k: string): [rid: string, field: string] {
  const slash = k.indexOf('/', FILE_PREFIX.length)
  return [k.slice(FILE_PREFIX.length, slash), k.slice(slash + 1)]
}

/** The field of the record row `kv`. */
const FIELD_OF_K = `substr(kv.k, ${FIELD_AT})`
/** A raw value a comma split or a trim changes. */
export const multiCond = (v: string): string => `(instr(${v},',')>0 OR trim(${v},'${WHITESPACE_CHARS}')<>${v})`

/** The raw field name and value of a `search_field` row `s`. */
export const RAW_FIELD = "CASE WHEN s.rf = '' THEN s.f ELSE s.rf END"
export const RAW_VALUE = 'coalesce(s.rv, s.v)'

/** Keys of `search_state` (store file) and `search_info` (index file). */
export const STATE_FORMAT = 'format'
export const STATE_LOG_MARK = 'log-mark'
export const STATE_ORPHANS = 'orphan-docs'
export const STATE_ID = 'index-id'
export const STATE_GEN = 'batch'
/** Store file: records arrived in bulk (their roots not staged) and the index has not been rebuilt since. */
export const STATE_BULK = 'bulk-unindexed'

/** The index file's schema name on the store's connection. */
export const INDEX_SCHEMA = 'search'
/** The index file beside a store file (SQLite's own files beside it are `-wal` and `-shm`). */
export const indexFileOf = (storePath: string): string => `${storePath}-search`

interface SqlObject { name: string, type: 'index' | 'table', sql: string }

/** In the store file. */
const STORE_OBJECTS: SqlObject[] = [
  { name: 'search_state', type: 'table', sql: 'CREATE TABLE IF NOT EXISTS search_state (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID' },
  { name: 'search_pending', type: 'table', sql: 'CREATE TABLE IF NOT EXISTS search_pending (rid TEXT PRIMARY KEY) WITHOUT ROWID' }
]

/** In the index file. */
const OBJECTS: SqlObject[] = [
  { name: 'search_info', type: 'table', sql: 'CREATE TABLE IF NOT EXISTS search_info (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID' },
  {
    name: 'search_doc',
    type: 'table',
    sql: 'CREATE TABLE IF NOT EXISTS search_doc (d INTEGER PRIMARY KEY AUTOINCREMENT, rid TEXT NOT NULL UNIQUE, g INTEGER NOT NULL)'
  },
  {
    name: 'search_field',
    type: 'table',
    sql: 'CREATE TABLE IF NOT EXISTS search_field (f TEXT NOT NULL, b INTEGER NOT NULL, v TEXT NOT NULL, d INTEGER NOT NULL, rf TEXT NOT NULL, rv TEXT, PRIMARY KEY (f, b, v, d, rf)) WITHOUT ROWID'
  },
  { name: 'search_fstat', type: 'table', sql: 'CREATE TABLE IF NOT EXISTS search_fstat (f TEXT PRIMARY KEY, multi INTEGER NOT NULL) WITHOUT ROWID' },
  { name: 'search_fts', type: 'table', sql: "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(hay, ids, tokenize='trigram case_sensitive 1')" }
]
const FTS_DDL = OBJECTS[OBJECTS.length - 1].sql

/** An SQL string literal. */
const literal = (x: string): string => `'${x.replaceAll("'", "''")}'`

/**
 * The roots of a batch, `@docs` (a JSON array of [rid, d]), as the table
 * `x (rid, d)`: materialised once, so a row's document id is a column read,
 * not a JSON parse per field entry.
 */
const BATCH_DOCS = 'WITH x (rid, d) AS MATERIALIZED (SELECT value ->> 0, value ->> 1 FROM json_each(@docs))'

/**
 * The kv rows of the batch's roots (BATCH_DOCS) as `kv` beside `x`, leaving
 * out fields under the excluded prefixes (a case-sensitive prefix test on
 * the field, written into the statement).
 */
function batchRowsSql (excludePrefixes: readonly string[], also?: string): string {
  const conds = excludePrefixes.map(p => `substr(kv.k, ${FIELD_AT}, ${[...p].length}) <> ${literal(p)}`)
  if (also !== undefined) conds.push(also)
  return `FROM x JOIN kv ON kv.k >= '${FILE_PREFIX}' || x.rid || '/' AND kv.k < '${FILE_PREFIX}' || x.rid || '0'
${conds.length === 0 ? '' : `WHERE ${conds.join(' AND ')}`}`
}

/**
 * Inserts the field entries of the roots in `@docs` into `search_field` in
 * key order (one sorted insert: consecutive entries land on the same
 * pages, so a page is written once per batch instead of once per entry).
 */
export function fillFieldsSql (excludePrefixes: readonly string[], bucketShift: number): string {
  return `${BATCH_DOCS}
INSERT INTO search_field (f, b, v, d, rf, rv)
SELECT lower(${FIELD_OF_K}),
  x.d >> ${bucketShift},
  CASE WHEN lower(kv.v) = kv.v THEN kv.v ELSE substr(lower(kv.v), 1, ${VALUE_KEY_CHARS}) END,
  x.d,
  CASE WHEN lower(${FIELD_OF_K}) = ${FIELD_OF_K} THEN '' ELSE ${FIELD_OF_K} END,
  CASE WHEN lower(kv.v) = kv.v THEN NULL ELSE kv.v END
${batchRowsSql(excludePrefixes)}
ORDER BY 1, 2, 3, 4, 5`
}

/** Adds the multi-valued entries of the roots in `@docs` to `search_fstat`, per lower-cased field name. */
export function fillFstatSql (excludePrefixes: readonly string[]): string {
  return `${BATCH_DOCS}
INSERT INTO search_fstat (f, multi)
SELECT lower(${FIELD_OF_K}), count(*)
${batchRowsSql(excludePrefixes, multiCond('kv.v'))}
GROUP BY 1
ON CONFLICT (f) DO UPDATE SET multi = multi + excluded.multi`
}

/**
 * The store file's part, on the store's connection before the index file is
 * attached: creates what is missing, and recreates what is defined
 * otherwise.
 */
export function ensureStoreSchema (kv: KvStore): void {
  for (const name of schemaDiff(kv, 'main', STORE_OBJECTS)) {
    kv.exec(`DROP TABLE IF EXISTS main.${name}`)
    kv.exec(STORE_OBJECTS.find(o => o.name === name)!.sql)
  }
}

/** The names of `objects` missing from schema `schema` or defined otherwise there. */
function schemaDiff (db: Pick<SideFile, 'prepare'>, schema: string, objects: readonly SqlObject[]): string[] {
  const stored = db.prepare(`SELECT sql FROM ${schema}.sqlite_master WHERE type = ? AND name = ?`).pluck()
  // sqlite_master keeps the statement without its IF NOT EXISTS.
  return objects.filter(o => stored.get(o.type, o.name) !== o.sql.replace(' IF NOT EXISTS', '')).map(o => o.name)
}

/** What the index file holds as the format needs it: the names of the objects missing or defined otherwise (under schema `schema`). */
export function indexSchemaDiff (db: Pick<SideFile, 'prepare'>, schema: string): string[] {
  return schemaDiff(db, schema, OBJECTS)
}

/**
 * The index file's part, on the index writer's connection (where the index
 * file is `main`): creates what is missing, recreates what differs. Returns
 * the names it (re)created: anything but `search_info` created means the
 * structures are incomplete (or new), so the caller rebuilds.
 */
export function ensureIndexSchema (db: Pick<SideFile, 'prepare' | 'exec'>): string[] {
  const created = indexSchemaDiff(db, 'main')
  for (const o of OBJECTS.filter(o => created.includes(o.name))) {
    db.exec(`DROP TABLE IF EXISTS main.${o.name}`)
    db.exec(o.sql)
  }
  return created
}

/** What the index file holds, read under schema `schema` (its tables exist). */
export interface IndexInfo {
  /** Names (re)created at open: anything but `search_info` means the structures are new or incomplete. */
  created: string[]
  format?: string
  id?: string
  gen: number
  orphans: number
  docs: number
  /** Document ids from the oldest live document's to the newest's (0 with none). */
  span: number
}

/** The document ids a value probe's buckets cover (from the oldest live document's to the newest's, 0 with none), in `schema`'s index. */
export const spanSql = (schema: string): string => `SELECT coalesce(max(d) - min(d) + 1, 0) FROM ${schema}.search_doc`

export function readIndexInfo (db: Pick<SideFile, 'prepare'>, schema: string, created: string[] = []): IndexInfo {
  const get = db.prepare(`SELECT v FROM ${schema}.search_info WHERE k = ?`).pluck()
  const format = get.get(STATE_FORMAT) as string | undefined
  const id = get.get(STATE_ID) as string | undefined
  return {
    created,
    ...(format === undefined ? {} : { format }),
    ...(id === undefined ? {} : { id }),
    gen: Number(get.get(STATE_GEN) ?? '0'),
    orphans: Number(get.get(STATE_ORPHANS) ?? '0'),
    docs: db.prepare(`SELECT count(*) FROM ${schema}.search_doc`).pluck().get() as number,
    span: db.prepare(spanSql(schema)).pluck().get() as number
  }
}

/** Empties every structure the merger fills (a full rebuild starts here); pending roots stay pending. */
export function clearStructures (db: Pick<SideFile, 'exec'>): void {
  // An FTS5 table with content has no cheap 'delete-all': dropping it is the fast way to empty it.
  db.exec(`DELETE FROM search_field; DELETE FROM search_doc; DELETE FROM search_fstat; DROP TABLE search_fts; ${FTS_DDL}`)
}

/** The marker value for structures built with this format, these excluded prefixes and this bucket size. */
export function versionMarker (excludePrefixes: readonly string[], bucketShift = DEFAULT_BUCKET_SHIFT): string {
  const ps = excludePrefixes.filter(p => p.length > 0)
  return `${FORMAT}${bucketShift === DEFAULT_BUCKET_SHIFT ? '' : `;bucket-shift=${bucketShift}`}${ps.length === 0 ? '' : `;excluded=${JSON.stringify(ps)}`}`
}
