/**
 * The ingest benchmark's yardsticks (bench/ingest.ts): the bare-kv ceiling
 * (the same `file:` and `cid:` rows into a plain SQLite table, 32 rows per
 * INSERT, 10k rows per transaction, nothing else) and a store's bytes by
 * structure (dbstat).
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { newRecordId } from '../../src/records/index.js'
import { removeUnlessKept } from './report.js'
import type { SyntheticRecord } from './synthetic.js'

/** Rows per INSERT statement in the ceiling: the store's own multi-row size. */
export const ROWS_PER_STATEMENT = 32
const MiB = 2 ** 20
const round2 = (x: number): number => Math.round(x * 100) / 100

// ------------------------------------------------------------------ store size by structure

export interface Sizes { fileMiB: number, structures: Record<string, number> }

/**
 * The store's bytes by B-tree (dbstat), the kv table split by key class in
 * proportion to its rows' bytes; search's index file beside it (if any) by
 * B-tree too, counted in the total.
 */
export function sizes (file: string): Sizes {
  const structures: Record<string, number> = {}
  const db = new Database(file, { readonly: true })
  try {
    const byName = new Map((db.prepare('SELECT name, sum(pgsize) AS b FROM dbstat GROUP BY name').all() as Array<{ name: string, b: number }>).map(r => [r.name, r.b]))
    const parts = db.prepare(`SELECT CASE
        WHEN k >= 'file:' AND k < 'file;' THEN 'kv: file: rows' WHEN k >= 'cid:' AND k < 'cid;' THEN 'kv: cid: rows'
        WHEN k >= 'ver:' AND k < 'ver;' THEN 'kv: ver: rows' WHEN k >= 'ev:' AND k < 'ev;' THEN 'kv: ev: rows'
        ELSE 'kv: other rows (idx:, counters, state)' END AS part, sum(length(CAST(k AS BLOB)) + length(CAST(v AS BLOB))) AS b
      FROM kv GROUP BY part`).all() as Array<{ part: string, b: number }>
    const payload = parts.reduce((n, p) => n + p.b, 0)
    const kvBytes = byName.get('kv') ?? 0
    byName.delete('kv')
    for (const p of parts) structures[p.part] = round2(kvBytes * p.b / payload / MiB)
    for (const [name, b] of byName) if (b > 0) structures[name] = round2(b / MiB)
  } finally {
    db.close()
  }
  let fileBytes = fs.statSync(file).size
  const indexFile = `${file}-search`
  if (fs.existsSync(indexFile)) {
    fileBytes += fs.statSync(indexFile).size
    const idx = new Database(indexFile, { readonly: true })
    try {
      for (const r of idx.prepare('SELECT name, sum(pgsize) AS b FROM dbstat GROUP BY name').all() as Array<{ name: string, b: number }>) {
        if (r.b > 0) structures[`index file: ${r.name}`] = round2(r.b / MiB)
      }
    } finally {
      idx.close()
    }
  }
  return { fileMiB: round2(fileBytes / MiB), structures }
}

// ------------------------------------------------------------------ the ceiling

export interface Ceiling { recordsPerSecond: number, seconds: number, fileMiB: number, kvMiB: number }

/**
 * The first `n` of `records` as the same `file:` and `cid:` rows into a bare
 * kv table in the fresh folder `d` (removed after unless BENCH_KEEP): no
 * events, versions, counters, records layer or search.
 */
export function ceiling (records: readonly SyntheticRecord[], n: number, d: string): Ceiling {
  const file = path.join(d, 'bare.db')
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('cache_size = -32768')
  db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID')
  const multi = db.prepare(`INSERT INTO kv (k, v) VALUES ${Array.from({ length: ROWS_PER_STATEMENT }, () => '(?, ?)').join(', ')}`)
  const one = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)')
  const flush = db.transaction((flat: string[]) => {
    let i = 0
    for (; i + 2 * ROWS_PER_STATEMENT <= flat.length; i += 2 * ROWS_PER_STATEMENT) multi.run(flat.slice(i, i + 2 * ROWS_PER_STATEMENT))
    for (; i < flat.length; i += 2) one.run(flat[i], flat[i + 1])
  })
  let flat: string[] = []
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    const r = records[i]
    // A UUIDv7 root, as the store mints (the bare table gets the store's key order).
    const rid = newRecordId()
    for (const f in r.fields) {
      flat.push(`file:${rid}/${f}`, r.fields[f])
      if (f.startsWith('cids/')) flat.push(`cid:${f.slice(5)}`, rid)
    }
    if (flat.length >= 20_000) {
      flush(flat)
      flat = []
    }
  }
  flush(flat)
  const seconds = (performance.now() - t0) / 1000
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
  const s = sizes(file)
  removeUnlessKept(d)
  return { recordsPerSecond: n / seconds, seconds, fileMiB: s.fileMiB, kvMiB: s.structures['kv: file: rows'] + s.structures['kv: cid: rows'] }
}
