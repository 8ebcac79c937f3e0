/**
 * What a deleted record costs the store for ever (docs/mesh.md, "Deletes
 * are never forgotten"). A store of N records of ~40 fields
 * (bench/lib/synthetic.ts, applied as a peer's entries) is copied twice, and
 * a tenth of its records (every tenth) deleted in each copy through the
 * record layer's merge, as a peer's deletes arrive:
 *
 * - folded (how the store deletes a record): a root tombstone; the key
 *   versions it shadows are dropped from the version map;
 * - unfolded (the baseline: what keeping a tombstone per key would cost):
 *   every key of the record tombstoned on its own, no root tombstone.
 *
 * Per deleted record it counts the rows that describe it and their bytes
 * (UTF-8 keys and values): its `file:` rows, its `ver:` row, its fingerprint
 * row (`idx:fpr/`), its `idx:roots/` row and the `cid:` rows naming it.
 * Before the delete (the record live), and after it in each copy. Rows
 * both variants share (schema counters) are left out, and so is the change
 * log the deletes append to (trimmed to its retention like any write's).
 *
 * `npm run bench:folding [-- records]` (default 169000; FOLD_RECORDS too).
 * Prints one JSON object and rewrites its section of docs/benchmarks.md
 * (BENCH_NO_DOC=1: the JSON only).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { prefixEnd } from '../src/kv/index.js'
import { rootPosition } from '../src/records/fingerprints.js'
import { formatHlc, newRecordId, openNodeStore, type NodeStore, type RemoteEntry } from '../src/records/index.js'
import { machineLine, report } from './lib/report.js'
import { syntheticRecord } from './lib/synthetic.js'

const N = Number(process.argv[2] ?? process.env.FOLD_RECORDS ?? 169_000)
const EVERY = 10
const ROOTS_PER_TX = 2_000

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-folding-'))
const t0 = performance.now()
let lastProgress = t0
function progress (what: string, done: number, of: number): void {
  if (performance.now() - lastProgress < 5_000) return
  lastProgress = performance.now()
  process.stderr.write(`folding: ${what} ${done}/${of} (${Math.round((lastProgress - t0) / 1000)} s)\n`)
}

const open = (name: string): NodeStore => openNodeStore({ path: path.join(dir, `${name}.db`), nodeId: 'bench-node', backgroundCheckpoint: false })
const baseMs = Date.now() - N - 3_600_000
const rids = Array.from({ length: N }, (_, i) => newRecordId(baseMs + i))
const deleted = Array.from({ length: Math.floor(N / EVERY) }, (_, k) => k * EVERY)

interface Footprint { rows: number, bytes: number }

/** The rows that describe record `i` in `s`, and their bytes. */
function footprint (s: NodeStore, i: number): Footprint {
  const rid = rids[i]
  const out: Footprint = { rows: 0, bytes: 0 }
  const add = (k: string, v: string | undefined): void => {
    if (v === undefined) return
    out.rows++
    out.bytes += Buffer.byteLength(k) + Buffer.byteLength(v)
  }
  for (const [k, v] of s.kv.range(`file:${rid}/`, prefixEnd(`file:${rid}/`))) add(k, v)
  for (const k of [`ver:${rid}`, `idx:fpr/${rootPosition(rid)}${rid}`, `idx:roots/${rid}`]) add(k, s.kv.get(k))
  for (const f of Object.keys(syntheticRecord(i).fields)) {
    if (!f.startsWith('cids/')) continue
    const k = `cid:${f.slice(5)}`
    if (s.kv.get(k) === rid) add(k, rid)
  }
  return out
}

function perRecord (s: NodeStore): { rows: number, bytes: number } {
  let rows = 0
  let bytes = 0
  for (const i of deleted) {
    const f = footprint(s, i)
    rows += f.rows
    bytes += f.bytes
  }
  return { rows: round(rows / deleted.length), bytes: round(bytes / deleted.length) }
}

const round = (x: number): number => Math.round(x * 100) / 100

async function deleteAll (s: NodeStore, folded: boolean): Promise<void> {
  const hlc = formatHlc({ ms: Date.now(), counter: 0 })
  for (let k = 0; k < deleted.length; k += ROOTS_PER_TX) {
    const entries: RemoteEntry[] = []
    for (const i of deleted.slice(k, k + ROOTS_PER_TX)) {
      const rid = rids[i]
      if (folded) entries.push({ key: `file:${rid}`, value: null, hlc, origin: 'bench-peer' })
      else for (const f of Object.keys(syntheticRecord(i).fields)) entries.push({ key: `file:${rid}/${f}`, value: null, hlc, origin: 'bench-peer' })
    }
    await s.records.applyBatch(entries, { rootsPerTransaction: ROOTS_PER_TX, entriesPerTransaction: Infinity })
    progress(folded ? 'root tombstones' : 'key tombstones', Math.min(k + ROOTS_PER_TX, deleted.length), deleted.length)
  }
}

interface Cost { rows: number, bytes: number }
interface FoldingResult { machine: string, records: number, deleted: number, fieldsPerRecord: number, live: Cost, deletedFolded: Cost, deletedUnfolded: Cost }

const n = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 2 })

function markdown (r: FoldingResult): string {
  const share = (a: number, b: number): string => `${(100 * a / b).toPrecision(2)} %`
  return `## Folding: what a deleted record costs (\`npm run bench:folding\`)

${r.machine}. A store of ${n(r.records)} synthetic records (${n(r.fieldsPerRecord)} fields each on average),
applied as a peer's entries; a tenth of them (${n(r.deleted)}) deleted as a peer's deletes arrive. Rows and bytes (UTF-8 keys
and values) that describe one record: its \`file:\` rows, \`ver:\` row, fingerprint row, \`idx:roots/\` row and \`cid:\` rows.
The change log is left out (it is trimmed to its retention like any write's). Row and byte counts do not depend on the
machine's speed.

| one record | rows | bytes |
|---|---|---|
| live | ${n(r.live.rows)} | ${n(r.live.bytes)} |
| deleted, folded (a root tombstone; the key versions it shadows dropped) | ${n(r.deletedFolded.rows)} | ${n(r.deletedFolded.bytes)} |
| deleted with a tombstone kept per key (what folding saves) | ${n(r.deletedUnfolded.rows)} | ${n(r.deletedUnfolded.bytes)} |

A deleted record costs ${share(r.deletedFolded.bytes, r.live.bytes)} of the bytes it held live, and ${share(r.deletedFolded.bytes,
  r.deletedUnfolded.bytes)} of what a tombstone per key
would: ${n(r.deleted)} deleted records are ${n(r.deleted * r.deletedFolded.bytes / 1e6)} MB where they were ${n(r.deleted * r.live.bytes / 1e6)} MB live.`
}

try {
  const built = open('built')
  for (let from = 0; from < N; from += ROOTS_PER_TX) {
    const entries: RemoteEntry[] = []
    for (let i = from; i < Math.min(N, from + ROOTS_PER_TX); i++) {
      const hlc = formatHlc({ ms: baseMs + i, counter: 0 })
      const r = syntheticRecord(i)
      for (const f in r.fields) entries.push({ key: `file:${rids[i]}/${f}`, value: r.fields[f], hlc, origin: 'bench-origin' })
    }
    await built.records.applyBatch(entries, { rootsPerTransaction: ROOTS_PER_TX, entriesPerTransaction: Infinity })
    progress('records written', Math.min(N, from + ROOTS_PER_TX), N)
  }
  const live = perRecord(built)
  const fields = round(deleted.reduce((n, i) => n + Object.keys(syntheticRecord(i).fields).length, 0) / deleted.length)
  built.close()
  for (const name of ['folded', 'unfolded']) fs.copyFileSync(path.join(dir, 'built.db'), path.join(dir, `${name}.db`))

  const result: Record<string, unknown> = { machine: machineLine(), records: N, deleted: deleted.length, fieldsPerRecord: fields, live }
  for (const folded of [true, false]) {
    const s = open(folded ? 'folded' : 'unfolded')
    await deleteAll(s, folded)
    result[folded ? 'deletedFolded' : 'deletedUnfolded'] = perRecord(s)
    s.close()
  }
  result.seconds = round((performance.now() - t0) / 1000)
  report('folding', result, markdown(result as unknown as FoldingResult))
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
