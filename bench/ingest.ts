/**
 * Ingest benchmark (issue: storage core): 16 concurrent writers of realistic
 * ~40-field records through the record layer (the same path PATCH /meta/{cid}
 * takes), into a fresh store, to 10k and to 169k records.
 *
 * The records are generated before the clock starts, so every figure counts
 * only the store. In the same run it measures ceilings: the same `file:` and
 * `cid:` rows inserted into a bare kv table with the statements the store
 * uses (32 rows per INSERT), in large transactions (10k rows) as the issue
 * defines the ceiling; the same with the storage layout's `kv_field_v` field
 * index, which search keeps in the write transaction; and that indexed table
 * in transactions of 16 records, the most a group commit can hold when 16
 * writers each wait for their write. Those bound what any store with this
 * layout can do here.
 *
 * Env: BENCH_INGEST_SMALL (default 10000), BENCH_INGEST_LARGE (default 169000),
 * BENCH_INGEST_WRITERS (16), BENCH_INGEST_SEARCH=0 to leave the search indexer
 * out, BENCH_NO_DOC=1 to leave docs/benchmarks.md alone.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openNodeStore } from '../src/records/index.js'
import { FIELD_EXPR, FILE_RANGE } from '../src/search/search-schema.js'
import { machineLine, report } from './lib/report.js'
import { syntheticRecord, type SyntheticRecord } from './lib/synthetic.js'

const SMALL = Number(process.env.BENCH_INGEST_SMALL ?? 10_000)
const LARGE = Number(process.env.BENCH_INGEST_LARGE ?? 169_000)
const WRITERS = Number(process.env.BENCH_INGEST_WRITERS ?? 16)
const WITH_SEARCH = process.env.BENCH_INGEST_SEARCH !== '0'
const TMP = path.resolve('.bench-tmp/ingest')
/** Rows per INSERT statement in the ceilings: the store's own multi-row size. */
const ROWS_PER_STATEMENT = 32

interface Run { records: number, seconds: number, recordsPerSecond: number, lastSegmentPerSecond: number, fieldsPerRecord: number, dbBytes: number }

const tGen = performance.now()
const RECORDS: SyntheticRecord[] = Array.from({ length: Math.max(SMALL, LARGE) }, (_, i) => syntheticRecord(i))
process.stderr.write(`ingest: ${RECORDS.length} records generated in ${((performance.now() - tGen) / 1000).toFixed(1)} s (not timed)\n`)

function freshDir (): void {
  fs.rmSync(TMP, { recursive: true, force: true })
  fs.mkdirSync(TMP, { recursive: true })
}

async function ingest (n: number, withSearch = WITH_SEARCH): Promise<Run> {
  freshDir()
  const file = path.join(TMP, 'store.db')
  const s = openNodeStore({ path: file, nodeId: 'bench' })
  if (withSearch) {
    const { createSearch } = await import('../src/search/index.js')
    await createSearch({ kv: s.kv, records: s.records }).start()
  }
  let next = 0
  let fields = 0
  const segment = Math.min(10_000, n)
  let segStart = 0
  const t0 = performance.now()
  let lastLog = t0
  const writer = async (): Promise<void> => {
    for (;;) {
      const i = next++
      if (i >= n) return
      const r = RECORDS[i]
      fields += Object.keys(r.fields).length
      if (i === n - segment) segStart = performance.now()
      await s.records.mergeFlat(r.cid, r.fields)
      const now = performance.now()
      if (now - lastLog > 5000) {
        lastLog = now
        process.stderr.write(`ingest${withSearch ? '' : ' (no search)'}: ${i + 1}/${n} records, ${((i + 1) / ((now - t0) / 1000)).toFixed(0)} records/s\n`)
      }
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, writer))
  const t1 = performance.now()
  const lastSegment = segment / ((t1 - segStart) / 1000)
  if (s.records.countRecords() !== n) throw new Error(`expected ${n} records, store has ${s.records.countRecords()}`)
  s.close()
  const dbBytes = fs.statSync(file).size
  return { records: n, seconds: (t1 - t0) / 1000, recordsPerSecond: n / ((t1 - t0) / 1000), lastSegmentPerSecond: lastSegment, fieldsPerRecord: fields / n, dbBytes }
}

interface Ceiling { records: number, seconds: number, recordsPerSecond: number, rowsPerSecond: number }

/**
 * The same `file:` rows (plus the `cid:` rows) into a bare kv table: no
 * events, versions, counters or records layer. `fieldIndex` adds the storage
 * layout's `kv_field_v`; `txRecords` commits every that many records instead
 * of every 10k rows.
 */
function ceiling (n: number, opts: { fieldIndex?: boolean, txRecords?: number } = {}): Ceiling {
  freshDir()
  const db = new Database(path.join(TMP, 'bare.db'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('cache_size = -32768')
  db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID')
  if (opts.fieldIndex === true) db.exec(`CREATE INDEX kv_field_v ON kv(${FIELD_EXPR}, lower(v), v) WHERE ${FILE_RANGE}`)
  const multi = db.prepare(`INSERT INTO kv (k, v) VALUES ${Array.from({ length: ROWS_PER_STATEMENT }, () => '(?, ?)').join(', ')}`)
  const one = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)')
  const flush = db.transaction((flat: string[]) => {
    let i = 0
    for (; i + 2 * ROWS_PER_STATEMENT <= flat.length; i += 2 * ROWS_PER_STATEMENT) multi.run(flat.slice(i, i + 2 * ROWS_PER_STATEMENT))
    for (; i < flat.length; i += 2) one.run(flat[i], flat[i + 1])
  })
  let flat: string[] = []
  let total = 0
  let inTx = 0
  let ts = BigInt(Date.now()) * 1000n
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    const r = RECORDS[i]
    // A time-ordered 26-character root, like a UUIDv7 (the bare table gets the store's key order).
    const rid = (ts++).toString(32).toUpperCase().padStart(26, '0')
    for (const f in r.fields) {
      flat.push(`file:${rid}/${f}`, r.fields[f])
      if (f.startsWith('cids/')) flat.push(`cid:${f.slice(5)}`, rid)
    }
    inTx++
    if (opts.txRecords !== undefined ? inTx >= opts.txRecords : flat.length >= 20_000) {
      total += flat.length / 2
      flush(flat)
      flat = []
      inTx = 0
    }
  }
  total += flat.length / 2
  flush(flat)
  const seconds = (performance.now() - t0) / 1000
  db.close()
  return { records: n, seconds, recordsPerSecond: n / seconds, rowsPerSecond: total / seconds }
}

const small = await ingest(SMALL)
const smallNoSearch = WITH_SEARCH ? await ingest(SMALL, false) : small
const smallCeiling = ceiling(SMALL)
const smallIndexCeiling = ceiling(SMALL, { fieldIndex: true })
const smallIndexSmallTx = ceiling(SMALL, { fieldIndex: true, txRecords: WRITERS })
const large = await ingest(LARGE)
const largeCeiling = ceiling(LARGE)
const largeIndexCeiling = ceiling(LARGE, { fieldIndex: true })
fs.rmSync(TMP, { recursive: true, force: true })

const result = {
  benchmark: 'ingest',
  machine: machineLine(),
  writers: WRITERS,
  search: WITH_SEARCH,
  small: {
    ...small,
    ceiling: smallCeiling,
    fractionOfCeiling: small.recordsPerSecond / smallCeiling.recordsPerSecond,
    withoutSearch: smallNoSearch,
    ceilingWithFieldIndex: smallIndexCeiling,
    ceilingWithFieldIndexWriterSizedTransactions: smallIndexSmallTx,
    fractionOfFieldIndexCeiling: small.recordsPerSecond / smallIndexCeiling.recordsPerSecond
  },
  large: {
    ...large,
    ceiling: largeCeiling,
    fractionOfCeiling: large.recordsPerSecond / largeCeiling.recordsPerSecond,
    ceilingWithFieldIndex: largeIndexCeiling,
    fractionOfFieldIndexCeiling: large.recordsPerSecond / largeIndexCeiling.recordsPerSecond
  },
  original: { recordsPerSecond: 835 },
  target: { recordsPerSecond: 8000, met: small.recordsPerSecond >= 8000 && large.recordsPerSecond >= 8000 }
}
const f = (x: number): string => x.toFixed(0)
const pct = (a: number, b: number): string => `${(a / b * 100).toFixed(0)} %`
report('ingest', result, `
## Ingest (\`npm run bench:ingest\`)

${machineLine()}. ${WRITERS} concurrent writers of realistic records (${small.fieldsPerRecord.toFixed(1)} fields on average: title, paths, sizes, 2–3 CIDs, ids, file info, streams) through \`records.mergeFlat\` (the PATCH /meta/{cid} path: fields, \`cid:\` aliases, versions, events, counters${WITH_SEARCH ? ', search index and FTS row' : ''}, one transaction per group commit). Records are generated before the clock starts. Ceiling: the same \`file:\` and \`cid:\` rows into a bare kv table, ${ROWS_PER_STATEMENT} rows per INSERT, 10k rows per transaction, nothing else.

| store | records/s | last 10k records/s | ceiling records/s | fraction of ceiling | ceiling with \`kv_field_v\` records/s | fraction of it | vs original (835/s) | db size |
|---|---|---|---|---|---|---|---|---|
| empty → ${SMALL} | ${f(small.recordsPerSecond)} | ${f(small.lastSegmentPerSecond)} | ${f(smallCeiling.recordsPerSecond)} | ${pct(small.recordsPerSecond, smallCeiling.recordsPerSecond)} | ${f(smallIndexCeiling.recordsPerSecond)} | ${pct(small.recordsPerSecond, smallIndexCeiling.recordsPerSecond)} | ${(small.recordsPerSecond / 835).toFixed(1)}× | ${(small.dbBytes / 2 ** 20).toFixed(0)} MiB |
| empty → ${LARGE} | ${f(large.recordsPerSecond)} | ${f(large.lastSegmentPerSecond)} | ${f(largeCeiling.recordsPerSecond)} | ${pct(large.recordsPerSecond, largeCeiling.recordsPerSecond)} | ${f(largeIndexCeiling.recordsPerSecond)} | ${pct(large.recordsPerSecond, largeIndexCeiling.recordsPerSecond)} | ${(large.recordsPerSecond / 835).toFixed(1)}× | ${(large.dbBytes / 2 ** 20).toFixed(0)} MiB |

Target: at least 8,000 records/s: ${result.target.met ? 'met' : 'not met'}.${smallCeiling.recordsPerSecond < 8000 || largeCeiling.recordsPerSecond < 8000 ? ` In this run the ceiling itself, the bare table with nothing else, stayed below the target: ${f(smallCeiling.recordsPerSecond)} records/s at ${SMALL} records and ${f(largeCeiling.recordsPerSecond)} at ${LARGE}.` : ''}

Where the time goes, measured in the same run at ${SMALL} records:

| variant | records/s |
|---|---|
| the full write path (above) | ${f(small.recordsPerSecond)} |
| the same without search (no field index, no FTS row) | ${f(smallNoSearch.recordsPerSecond)} |
| bare kv table, same rows, nothing else (the ceiling) | ${f(smallCeiling.recordsPerSecond)} |
| bare kv table with the \`kv_field_v\` expression index, same rows, nothing else | ${f(smallIndexCeiling.recordsPerSecond)} |
| the same, committed every ${WRITERS} records (what a group commit of ${WRITERS} waiting writers can hold) | ${f(smallIndexSmallTx.recordsPerSecond)} |

The field index that the storage layout defines and search keeps in the write transaction ("Search structures") costs one random B-tree insert per field. A bare table carrying only that index runs at ${pct(smallIndexCeiling.recordsPerSecond, smallCeiling.recordsPerSecond)} of the bare table at ${SMALL} records and ${pct(largeIndexCeiling.recordsPerSecond, largeCeiling.recordsPerSecond)} at ${LARGE}; that is the most any store with this layout can ingest here, before events, versions, aliases, counters or the FTS row.
`)
