/**
 * bench:join's join against a busy peer: P (a copy of A's store, in its own
 * process, the log retention it is given: the node's default unless
 * JOIN_BUSY_RETENTION) takes new 40-field records at a steady rate from
 * before a fresh node J starts (J in this process, as figure 1's B) until
 * J has caught up and kept up for a while. The clock runs from J's start
 * until J's first moment with no resync under way and its pull at the head
 * P reported (`caughtUp`); P's writes then go on for `afterSeconds`, J's
 * lag sampled every half second; then they stop and the clock runs until
 * J's digest equals P's. The budget: the idle join's time (figure 1, the
 * digest) scaled to the records J holds when it caught up (the idle join's
 * time plus the writes', at the idle join's rate).
 */
import path from 'node:path'
import { createLogger, waitFor } from '../../src/common/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { startMeshNode } from '../../test/helpers/mesh-nodes.js'
import type { NodeProc } from './join-proc.js'
import { syntheticRecord } from './synthetic.js'

export interface BusyOptions {
  dir: string
  swarmKey: string
  writeRate: number
  firstRecord: number
  afterSeconds: number
  timeoutS: number
  /** Indexes of records P holds from before the writes (a sample is searched for on J at the end). */
  existing: number[]
  /** Figure 1's join of A's N records (digest equal), in seconds, and N: the budget's yardstick (null: not run). */
  idle: { seconds: number, records: number } | null
  log: (msg: string) => void
}

const r2 = (x: number): number => Math.round(x * 100) / 100

interface Sample { s: number, records: number, peerRecords: number, lagMs: number, resyncing: boolean, behind: boolean }

export async function busyJoin (p: NodeProc, o: BusyOptions): Promise<Record<string, unknown>> {
  const peerBefore = await p.status()
  await p.call('writer', { rate: o.writeRate, first: o.firstRecord })
  const logger = createLogger({ level: 'info', write: l => { process.stderr.write(`J: ${l}\n`) } })
  const t0 = performance.now()
  const j: RunningNode = await startMeshNode({ dir: path.join(o.dir, 'j'), swarmKey: o.swarmKey, bootstrap: [p.ready.addr], antiEntropyMs: 600_000, logger })
  const elapsed = (): number => (performance.now() - t0) / 1000
  const samples: Sample[] = []
  let caughtUp: number | null = null
  let caughtUpRecords = 0
  const sample = async (): Promise<Sample> => {
    const v = j.mesh.status().peers.find(x => x.peerId === p.peerId)
    const s = { s: r2(elapsed()), records: j.store.records.countRecords(), peerRecords: (await p.status()).records, lagMs: v?.lagMs ?? -1,
      resyncing: v?.resyncing ?? true, behind: v?.behind ?? true }
    samples.push(s)
    return s
  }
  const stopAt = { s: o.timeoutS }
  try {
    await waitFor(async () => {
      const v = j.mesh.status().peers.find(x => x.peerId === p.peerId)
      if (caughtUp === null && v !== undefined && v.cursor !== null && !v.resyncing && !v.behind) {
        caughtUp = elapsed()
        caughtUpRecords = j.store.records.countRecords()
        stopAt.s = caughtUp + o.afterSeconds
        o.log(`busy: J caught up after ${caughtUp.toFixed(1)} s (${caughtUpRecords} records)`)
      }
      if (samples.length === 0 || elapsed() - samples[samples.length - 1].s >= 0.5) await sample()
      return elapsed() >= stopAt.s
    }, { timeoutMs: (o.timeoutS + o.afterSeconds) * 1000, what: 'J to catch up with the busy peer', intervalMs: 50 })
  } catch (err) {
    o.log(`busy: ${String(err)}`)
  }
  const writes = await p.call<Record<string, unknown>>('writerStop')
  delete writes.issuedAt
  const stoppedAt = elapsed()
  let settled: number | null = null
  await waitFor(async () => j.mesh.digest().digest === (await p.call<{ digest: string }>('digest')).digest, { timeoutMs: 60_000, what: 'J\'s digest to equal P\'s once P stopped writing', intervalMs: 50 })
    .then(() => { settled = elapsed() - stoppedAt }, (err: unknown) => { o.log(`busy: ${String(err)}`) })
  const v = j.mesh.status().peers.find(x => x.peerId === p.peerId)
  const peerAfter = await p.status()
  await j.search.whenIdle()
  const search = searchCheck(j, o.firstRecord, Number(writes.issued), o.existing)
  if (search.missing + search.notHeld > 0) o.log(`busy: of ${search.asked} records asked for on J, ${search.notHeld} not held, ${search.missing} held and not found by search`)
  await j.stop()
  const after = caughtUp === null ? [] : samples.filter(s => s.s >= caughtUp!)
  const behindAfter = after.map(s => s.peerRecords - s.records)
  const budget = o.idle === null || caughtUp === null ? null : r2(o.idle.seconds * caughtUpRecords / o.idle.records)
  const bound = o.writeRate * 5
  const maxBehind = behindAfter.length === 0 ? null : Math.max(...behindAfter)
  return {
    peerRecordsAtStart: peerBefore.records,
    peerRecordsAtEnd: peerAfter.records,
    writeRate: o.writeRate,
    writes,
    caughtUpSeconds: caughtUp === null ? null : r2(caughtUp),
    caughtUpRecords,
    budgetSeconds: budget,
    settleSecondsAfterWritesStopped: settled === null ? null : r2(settled),
    afterCatchUp: { seconds: o.afterSeconds, maxRecordsBehind: maxBehind, maxLagMs: after.length === 0 ? null : Math.max(...after.map(s => s.lagMs)),
      boundRecords: bound },
    resyncs: v?.resyncs ?? null,
    reconciles: v?.reconciles ?? null,
    reconcilesEqual: v?.reconcilesEqual ?? null,
    search,
    pages: v?.pagesIn ?? null,
    bytes: v?.bytesIn ?? null,
    samples,
    target: {
      noRestartLoop: (v?.resyncs ?? 0) <= 1,
      withinBudget: budget === null || caughtUp === null ? null : caughtUp <= budget,
      lagBounded: maxBehind === null ? false : maxBehind <= bound,
      searchComplete: search.missing === 0 && search.notHeld === 0
    }
  }
}

/**
 * Search on J once its index says it is complete: an exact query by imdbid for
 * up to 100 of the records P held before and 100 of those it wrote during
 * the join (`notHeld`: J does not hold the record at all; `missing`: J
 * holds it and the query does not find it), and the total of a query for
 * every record beside J's count of records.
 */
function searchCheck (j: RunningNode, first: number, written: number, existing: number[]): { asked: number, notHeld: number, missing: number,
  missingSample: number[], total: number, records: number } {
  const pick = (xs: number[], k: number): number[] => xs.length <= k ? xs : Array.from({ length: k }, (_, i) => xs[Math.floor(i * xs.length / k)])
  const ask = [...pick(existing, 100), ...pick(Array.from({ length: written }, (_, i) => first + i), 100)]
  const held = ask.filter(i => j.store.records.resolveRoot(syntheticRecord(i).cid) !== undefined)
  const missing = held.filter(i => j.search.search({ filters: [{ property: 'imdbid', values: [syntheticRecord(i).fields.imdbid], exact: true }] }).total !== 1)
  return { asked: ask.length, notHeld: ask.length - held.length, missing: missing.length, missingSample: missing.slice(0, 10),
    total: j.search.search({ limit: 1 }).total, records: j.store.records.countRecords() }
}
