/**
 * What a record costs its receiver applied from a peer against written
 * locally, in CPU, in one run: N new records of ~40 fields
 * (bench/lib/synthetic.ts) written through the record layer on store L by
 * 16 writers (`mergeFlat`, as the HTTP ingest does), then L's range (the
 * entries with versions a peer sends) applied to an empty store R in
 * batches of BATCH records' entries (`applyBatch`, as the mesh applies a
 * gossip frame or a pull page, each entry checked), and to another empty
 * store in pages of about 175 records through the bulk path (`applyBulk`,
 * a join's, with what it derives at the end). Search is not attached (its cost follows the records either
 * way). CPU is the process's (every thread: the checkpointer's too), per
 * record; `ratio` is the remote apply's over the local write's; the
 * target is at most 1.2.
 *   npx tsx bench/apply-cost.ts [records=10000] [batch=25]
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { openNodeStore, type NodeStore, type RemoteEntry } from '../src/records/index.js'
import { syntheticRecord } from './lib/synthetic.js'

const N = Number(process.argv[2] ?? 10_000)
const BATCH = Number(process.argv[3] ?? 25)
const WRITERS = 16

const cpuMs = (from: NodeJS.CpuUsage): number => { const c = process.cpuUsage(from); return (c.user + c.system) / 1000 }

function open (dir: string, name: string): NodeStore {
  return openNodeStore({ path: path.join(dir, `${name}.db`), nodeId: name })
}

/** L's replicated range (what a peer sends: its entries with versions, a record's together) in pages of `per` records' entries. */
function logPages (s: NodeStore, per: number): RemoteEntry[][] {
  const all: RemoteEntry[] = []
  let after: string | undefined
  for (;;) {
    const page = s.records.exportRange(after, { limit: 50_000 })
    all.push(...page.entries)
    if (page.next === undefined) break
    after = page.next
  }
  const pages: RemoteEntry[][] = []
  let page: RemoteEntry[] = []
  const roots = new Set<string>()
  for (const e of all) {
    const rid = e.key.slice(5, e.key.indexOf('/', 5) < 0 ? undefined : e.key.indexOf('/', 5))
    if (!roots.has(rid) && roots.size === per) { pages.push(page); page = []; roots.clear() }
    roots.add(rid)
    page.push(e)
  }
  if (page.length > 0) pages.push(page)
  return pages
}

async function main (): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-apply-cost-'))
  try {
    const records = Array.from({ length: N }, (_, i) => syntheticRecord(i))
    const l = open(dir, 'local')
    let next = 0
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    await Promise.all(Array.from({ length: WRITERS }, async () => {
      for (let i = next++; i < N; i = next++) await l.records.mergeFlat(records[i].cid, records[i].fields)
    }))
    const local = { cpuMs: cpuMs(c0), ms: performance.now() - t0 }
    const pages = logPages(l, BATCH)
    l.close()

    const r = open(dir, 'remote')
    const c1 = process.cpuUsage()
    const t1 = performance.now()
    for (const p of pages) await r.records.applyBatch(p)
    const remote = { cpuMs: cpuMs(c1), ms: performance.now() - t1 }
    if (r.records.countRecords() !== N) throw new Error(`remote store holds ${r.records.countRecords()} records, expected ${N}`)
    r.close()

    const b = open(dir, 'bulk')
    // A join's pages hold about 175 of these records (1 MiB of entries).
    const join = Math.max(1, Math.round(175 / BATCH))
    const big: RemoteEntry[][] = []
    for (let i = 0; i < pages.length; i += join) big.push(pages.slice(i, i + join).flat())
    const c2 = process.cpuUsage()
    const t2 = performance.now()
    for (let i = 0; i < big.length; i++) await b.records.applyBulk(big[i], { done: i === big.length - 1 })
    const bulk = { cpuMs: cpuMs(c2), ms: performance.now() - t2 }
    if (b.records.countRecords() !== N) throw new Error(`bulk store holds ${b.records.countRecords()} records, expected ${N}`)
    b.close()

    const per = (x: { cpuMs: number }): number => Math.round((x.cpuMs * 1000) / N)
    console.log(JSON.stringify({
      records: N,
      batchRecords: BATCH,
      local: { usPerRecord: per(local), recordsPerSecond: Math.round(N / (local.ms / 1000)) },
      remote: { usPerRecord: per(remote), recordsPerSecond: Math.round(N / (remote.ms / 1000)) },
      bulk: { usPerRecord: per(bulk), recordsPerSecond: Math.round(N / (bulk.ms / 1000)) },
      ratio: Math.round((remote.cpuMs / local.cpuMs) * 100) / 100,
      bulkRatio: Math.round((bulk.cpuMs / local.cpuMs) * 100) / 100,
      target: { ratio: 1.2, met: remote.cpuMs / local.cpuMs <= 1.2 }
    }, null, 2))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
