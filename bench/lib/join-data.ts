/**
 * The data of bench:join (bench/join.ts): peer A's N records as a peer's
 * entries (root ids and versions minted from the index, so the ceiling
 * writes the same rows), the bare-kv ceiling, copies of a stopped store for
 * a second node, and the 1 % by which two copies are made to differ.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { formatHlc, newRecordId, type RemoteEntry } from '../../src/records/index.js'
import { syntheticRecord } from './synthetic.js'

/** Bump when the generated records change, so a kept peer store of the old shape is not reused. */
export const DATA_VERSION = 1
const ROWS_PER_STATEMENT = 32
const ROWS_PER_TX = 10_000

/** Root ids and versions of the records, the same in the peer and in the ceiling (versions in the past, one ms apart). */
export function rootOf (i: number, baseMs: number): { rid: string, hlc: string } {
  return { rid: newRecordId(baseMs + i), hlc: formatHlc({ ms: baseMs + i, counter: 0 }) }
}

export function entriesOf (from: number, to: number, baseMs: number): RemoteEntry[] {
  const out: RemoteEntry[] = []
  for (let i = from; i < to; i++) {
    const { rid, hlc } = rootOf(i, baseMs)
    const r = syntheticRecord(i)
    for (const f in r.fields) out.push({ key: `file:${rid}/${f}`, value: r.fields[f], hlc, origin: 'bench-origin' })
  }
  return out
}

/** The same rows as A's `file:` rows (root ids minted the same way, the same fields and values), generated a transaction's worth at a time off the clock. */
function ceilingRows (from: number, to: number, baseMs: number): Array<[string, string]> {
  const rows: Array<[string, string]> = []
  for (let i = from; i < to; i++) {
    const { rid } = rootOf(i, baseMs)
    const r = syntheticRecord(i)
    const fields = Object.keys(r.fields).sort()
    for (const f of fields) rows.push([`file:${rid}/${f}`, r.fields[f]])
  }
  return rows
}

/** N records' `file:` rows into a bare table (32 rows per INSERT, 10,000 rows per transaction), only the inserts on the clock. */
export function joinCeiling (dir: string, n: number): { seconds: number, recordsPerSecond: number } {
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const db = new Database(path.join(dir, 'bare.db'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID')
  const many = db.prepare(`INSERT INTO kv (k, v) VALUES ${Array.from({ length: ROWS_PER_STATEMENT }, () => '(?, ?)').join(', ')}`)
  const one = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)')
  const baseMs = Date.now() - n - 120_000
  let ms = 0
  const perTx = Math.max(1, Math.round(ROWS_PER_TX / 40))
  for (let from = 0; from < n; from += perTx) {
    const rows = ceilingRows(from, Math.min(n, from + perTx), baseMs)
    const t0 = performance.now()
    const end = rows.length
    db.transaction(() => {
      let j = 0
      for (; j + ROWS_PER_STATEMENT <= end; j += ROWS_PER_STATEMENT) {
        const args: string[] = []
        for (let x = j; x < j + ROWS_PER_STATEMENT; x++) args.push(rows[x][0], rows[x][1])
        many.run(...args)
      }
      for (; j < end; j++) one.run(rows[j][0], rows[j][1])
    })()
    ms += performance.now() - t0
  }
  const seconds = ms / 1000
  db.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return { seconds, recordsPerSecond: n / seconds }
}

/** The store file of a node folder as startMeshNode lays it out. */
export const storeFileOf = (nodeDir: string): string => path.join(nodeDir, 'db', 'meta-core.db')
/** Its identity key (beside the store, named after it). */
export const keyFileOf = (nodeDir: string): string => path.join(nodeDir, 'db', 'meta-core.key')

/**
 * A second node's folder seeded from a stopped node's store, as
 * docs/operations.md says: the store file (and its write-ahead log, if the
 * node left one) and search's index file beside it, never the identity key,
 * so the copy starts as another node. Whatever `to` held is removed first.
 */
export function copyStore (from: string, to: string): void {
  fs.rmSync(to, { recursive: true, force: true })
  fs.mkdirSync(path.dirname(storeFileOf(to)), { recursive: true })
  for (const suffix of ['', '-wal', '-search', '-search-wal']) {
    const src = storeFileOf(from) + suffix
    if (fs.existsSync(src)) fs.copyFileSync(src, storeFileOf(to) + suffix)
  }
}

/** What one side of figure 3 writes to its copy before the two meet (indexes of synthetic records). */
export interface SideChanges {
  /** Existing records whose title and bitrate this side changes. */
  edits: number[]
  /** Existing records this side deletes (a root tombstone each). */
  deletes: number[]
  /** Existing records of which this side deletes one field (a field tombstone each). */
  fieldDeletes: number[]
  /** Records only this side creates (indexes from N up). */
  creates: number[]
  /** Existing records whose title both sides change, each its own way (two concurrent versions of one key). */
  concurrent: number[]
}

/**
 * How two copies of N records come to differ in 1 % of them (at least 10):
 * of those records, 30 % edited on A's side and 30 % on B's, 10 % written
 * on both (concurrent versions of the title), 10 % deleted on A's side, 10 %
 * with a field deleted on B's side, 5 % new on each side. The records are
 * spread over the whole key range (a stride prime to N) and no record is
 * touched by two kinds of change.
 */
export function divergence (n: number): { a: SideChanges, b: SideChanges, records: number } {
  const total = Math.max(10, Math.round(n / 100))
  const count = (share: number): number => Math.max(1, Math.round(total * share))
  const kinds = { editA: count(0.3), editB: count(0.3), concurrent: count(0.1), deleteA: count(0.1), fieldDeleteB: count(0.1) }
  const existing = kinds.editA + kinds.editB + kinds.concurrent + kinds.deleteA + kinds.fieldDeleteB
  if (existing > n) throw new Error(`${n} records are too few to change ${existing} of them`)
  const newEach = Math.max(1, Math.floor((total - existing) / 2))
  const stride = strideFor(n)
  let next = 0
  const take = (k: number): number[] => Array.from({ length: k }, () => (next++ * stride) % n)
  const editA = take(kinds.editA)
  const editB = take(kinds.editB)
  const concurrent = take(kinds.concurrent)
  const deleteA = take(kinds.deleteA)
  const fieldDeleteB = take(kinds.fieldDeleteB)
  const creates = (side: number): number[] => Array.from({ length: newEach }, (_, i) => n + side * newEach + i)
  return {
    a: { edits: editA, deletes: deleteA, fieldDeletes: [], creates: creates(0), concurrent },
    b: { edits: editB, deletes: [], fieldDeletes: fieldDeleteB, creates: creates(1), concurrent },
    records: existing + 2 * newEach
  }
}

/** A stride prime to n near n / φ, so consecutive picks land far apart and never repeat within n picks. */
function strideFor (n: number): number {
  const gcd = (a: number, b: number): number => b === 0 ? a : gcd(b, a % b)
  let s = Math.max(1, Math.round(n * 0.618))
  while (gcd(s, n) !== 1) s++
  return s
}
