/**
 * What the range fingerprints cost and give: a store of N records of 40
 * fields applied as a peer's entries in 1 MiB-page batches, with the
 * fingerprints kept and with their upkeep switched off (A/B in one run);
 * the digest's latency on the filled store; and a rebuild of the rows from
 * scratch (a store that predates them).
 *   npx tsx bench/fingerprint-cost.ts [records=20000]
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { newRecordId, openNodeStore, formatHlc, type RemoteEntry } from '../src/records/index.js'
import { Fingerprints, FP_READY } from '../src/records/fingerprints.js'

const N = Number(process.argv[2] ?? 20_000)
const FIELDS = 40

function entries (hlc: string): RemoteEntry[][] {
  const pages: RemoteEntry[][] = []
  let page: RemoteEntry[] = []
  for (let i = 0; i < N; i++) {
    const rid = newRecordId()
    for (let f = 0; f < FIELDS; f++) page.push({ key: `file:${rid}/field${String(f).padStart(2, '0')}`, value: `value ${i} ${f} ${'x'.repeat(20)}`, hlc, origin: 'peerZ' })
    if (page.length >= 140 * FIELDS) { pages.push(page); page = [] }
  }
  if (page.length > 0) pages.push(page)
  return pages
}

async function fill (keep: boolean): Promise<{ ms: number, dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-fp-'))
  const s = openNodeStore({ path: path.join(dir, 's.db'), nodeId: 'bench', backgroundCheckpoint: false })
  // Taken off the prototype to be put back as it was, never called unbound.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const update = Fingerprints.prototype.changed
  if (!keep) Fingerprints.prototype.changed = function () {}
  const pages = entries(formatHlc({ ms: Date.now(), counter: 0 }))
  const t0 = performance.now()
  for (const p of pages) await s.records.applyBatch(p, { rootsPerTransaction: Infinity, entriesPerTransaction: Infinity })
  const ms = performance.now() - t0
  Fingerprints.prototype.changed = update
  s.close()
  return { ms, dir }
}

const off = await fill(false)
const on = await fill(true)
const off2 = await fill(false)
const on2 = await fill(true)
const s = openNodeStore({ path: path.join(on.dir, 's.db'), nodeId: 'bench', backgroundCheckpoint: false })
const lat: number[] = []
for (let i = 0; i < 1000; i++) {
  const t = performance.now()
  s.records.digest()
  lat.push(performance.now() - t)
}
lat.sort((a, b) => a - b)
const keys = s.records.digest().keys
s.kv.writeSync(tx => { tx.delete(FP_READY) })
s.close()
const t1 = performance.now()
const r = openNodeStore({ path: path.join(on.dir, 's.db'), nodeId: 'bench', backgroundCheckpoint: false })
const rebuildMs = performance.now() - t1
r.close()
const t2 = performance.now()
const o = openNodeStore({ path: path.join(on.dir, 's.db'), nodeId: 'bench', backgroundCheckpoint: false })
const openMs = performance.now() - t2
o.close()
for (const d of [off, on, off2, on2]) fs.rmSync(d.dir, { recursive: true, force: true })
console.log(JSON.stringify({
  records: N, fields: FIELDS, keys,
  applyMs: { withFingerprints: [on.ms, on2.ms].map(Math.round), without: [off.ms, off2.ms].map(Math.round) },
  recordsPerSecond: { withFingerprints: Math.round(N / (Math.min(on.ms, on2.ms) / 1000)), without: Math.round(N / (Math.min(off.ms, off2.ms) / 1000)) },
  digestMs: { p50: lat[500], p99: lat[990], max: lat[999] },
  rebuildAtOpenMs: Math.round(rebuildMs),
  openWithRowsMs: Math.round(openMs)
}, null, 1))
