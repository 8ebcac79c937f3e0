import type Database from 'better-sqlite3'

/** The statements every part of the store shares, prepared once on the one connection. */
export interface Statements {
  get: Database.Statement
  put: Database.Statement
  del: Database.Statement
  range: Database.Statement
  rangeLimit: Database.Statement
  keys: Database.Statement
  suffixRange: Database.Statement
  jsonRange: Database.Statement
  keysLimit: Database.Statement
  firstKey: Database.Statement
  rowAtOrBefore: Database.Statement
  entryCounts: Database.Statement
  entryTotal: Database.Statement
  delRange: Database.Statement
  count: Database.Statement
  begin: Database.Statement
  lockStore: Database.Statement
  beginRead: Database.Statement
  commit: Database.Statement
  rollback: Database.Statement
  sp: Database.Statement
  spRelease: Database.Statement
  spRollback: Database.Statement
}

/** The entries a stream row holds, in SQL: the count leading a compact row, the length of a JSON array, else 1. */
const ENTRY_COUNT = "CASE substr(v, 1, 1) WHEN '~' THEN CAST(substr(v, 2) AS INTEGER) WHEN '[' THEN json_array_length(v) ELSE 1 END"

export function prepareStatements (db: Database.Database): Statements {
  const p = (sql: string): Database.Statement => db.prepare(sql)
  return {
    get: p('SELECT v FROM kv WHERE k = ?').pluck(),
    put: p('INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v'),
    del: p('DELETE FROM kv WHERE k = ?'),
    range: p('SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k').raw(),
    rangeLimit: p('SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?').raw(),
    keys: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k').pluck(),
    suffixRange: p('SELECT substr(k, ?), v FROM kv WHERE k >= ? AND k < ? ORDER BY k').raw(),
    jsonRange: p('SELECT json_group_object(substr(k, ?), v) FROM (SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k)').pluck(),
    keysLimit: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?').pluck(),
    firstKey: p('SELECT k FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT 1').pluck(),
    rowAtOrBefore: p('SELECT k, v FROM kv WHERE k >= ? AND k <= ? ORDER BY k DESC LIMIT 1').raw(),
    // Stream rows and their entry counts (ENTRY_COUNT).
    entryCounts: p(`SELECT k, ${ENTRY_COUNT} FROM kv WHERE k >= ? AND k < ? ORDER BY k`).raw(),
    entryTotal: p(`SELECT coalesce(sum(${ENTRY_COUNT}), 0) FROM kv WHERE k >= ? AND k < ?`).pluck(),
    delRange: p('DELETE FROM kv WHERE k >= ? AND k < ?'),
    count: p('SELECT count(*) FROM kv WHERE k >= ? AND k < ?').pluck(),
    // Deferred: the write lock is taken by the first write, on the files written only. BEGIN IMMEDIATE would also
    // lock every attached file (search's index file, attached for queries, which its own writer fills meanwhile).
    begin: p('BEGIN DEFERRED'),
    // Right after BEGIN, a write that changes nothing takes the store file's write lock (no other file's): the
    // checkpointer holds that lock while it starts the WAL over (checkpointer.ts), and a transaction that read
    // first and then wrote would fail at once with SQLITE_BUSY there instead of waiting (busy_timeout).
    lockStore: p('UPDATE main.kv SET v = v WHERE 0'),
    beginRead: p('BEGIN DEFERRED'),
    commit: p('COMMIT'),
    rollback: p('ROLLBACK'),
    sp: p('SAVEPOINT w'),
    spRelease: p('RELEASE w'),
    spRollback: p('ROLLBACK TO w')
  }
}

/** Rows per multi-row statement: amortises the per-statement cost while staying far under SQLite's 32766 bound parameters. */
const MULTI_ROWS = 32

/**
 * Upserts many rows with statements of up to MULTI_ROWS rows each (far fewer
 * calls into SQLite than one per row): n rows take ceil(n / MULTI_ROWS)
 * statements, one prepared per row count on first use.
 */
export class RowWriter {
  /** Multi-row upserts by row count (index n - 1). */
  private readonly putN: Array<Database.Statement | undefined> = new Array(MULTI_ROWS)

  constructor (private readonly db: Database.Database) {}

  /** Each row is `[key, value]`; anything after the value is ignored. */
  write (rows: ReadonlyArray<readonly [string, string, ...unknown[]]>): void {
    let i = 0
    while (i < rows.length) {
      const n = Math.min(MULTI_ROWS, rows.length - i)
      const args = new Array<string>(2 * n)
      for (let j = 0; j < n; j++) {
        const r = rows[i + j]
        args[2 * j] = r[0]
        args[2 * j + 1] = r[1]
      }
      this.multiPut(n).run(args)
      i += n
    }
  }

  private multiPut (n: number): Database.Statement {
    let st = this.putN[n - 1]
    if (st === undefined) {
      st = this.db.prepare(`INSERT INTO kv (k, v) VALUES ${Array.from({ length: n }, () => '(?, ?)').join(', ')} ON CONFLICT (k) DO UPDATE SET v = excluded.v`)
      this.putN[n - 1] = st
    }
    return st
  }
}

/** The rows under `prefix` as an object keyed by the rest of each key: SQLite cuts the prefix off, so only the short suffix becomes a JS string. */
export function readSuffixes (st: Statements, prefix: string, end: string): Record<string, string> {
  const rows = st.suffixRange.all(prefix.length + 1, prefix, end) as Array<[string, string]>
  const out: Record<string, string> = {}
  for (const [k, v] of rows) out[k] = v
  return out
}
