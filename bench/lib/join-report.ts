/**
 * bench:join's phases (which JOIN_ONLY may choose) and the markdown of its
 * docs/benchmarks.md section: each figure with its target and verdict
 * (issue 42) beside the baseline measured in the same run.
 */

export const PHASES = ['fresh', 'equal', 'diff', 'missed', 'digest', 'busy', 'sustained'] as const
export type Phase = typeof PHASES[number]

/** JOIN_ONLY's comma-separated phases (every phase when unset or empty), in the order they run. */
export function parsePhases (text: string | undefined): Phase[] {
  if (text === undefined || text.trim() === '') return [...PHASES]
  const want = text.split(',').map(s => s.trim()).filter(s => s !== '')
  const bad = want.filter(w => !(PHASES as readonly string[]).includes(w))
  if (bad.length > 0) throw new Error(`JOIN_ONLY: unknown phase(s) ${bad.join(', ')} (phases: ${PHASES.join(', ')})`)
  return PHASES.filter(p => want.includes(p))
}

const f0 = (x: number): string => Math.round(x).toLocaleString('en-US')
const kb = (x: number): string => `${(x / 1000).toFixed(1)} KB`
const verdict = (met: boolean | null | undefined): string => met === true ? '**met**' : met === false ? '**not met**' : 'not judged'
const sec = (x: number | null | undefined): string => x === null || x === undefined ? '—' : `${x} s`

/** The sections of figures 2 to 5 and the digest and busy-join figures that ran (`out` is the benchmark's JSON). */
export function phaseMarkdown (out: any): string[] {
  const md: string[] = []
  const f1 = out.join
  if (out.missed !== undefined) {
    const row = (name: string, m: any): string => `| ${name} | ${m.path} | **${sec(m.seconds)}** (${sec(m.fromConnectionSeconds)} from the connection; the node's start ${sec(m.startSeconds)}) | ${f0(m.traffic.wire.total)} | ${f0(m.traffic.repliesTakenByQ)} | ${m.ratioToRaw}× |`
    const m = out.missed.trimmed
    md.push(
      `**2. A node that missed ${f0(m.writes)} writes** (each of the title and the bitrate of an existing record: ${f0(m.changedKeys)} keys, ${f0(m.rawBytes)} bytes of raw keys and values) while it was stopped, then restarted: Q, level with P before (a cursor on it), P alone taking the writes. The clock runs from Q's start (startNode called) until its digest equals P's; bytes through the relay both ways.`,
      '',
      '| P\'s change log | Q caught up by | equal digest | bytes on the wire | pull replies to Q | of the raw writes |',
      '|---|---|---|---:|---:|---:|',
      ...(m === undefined ? [] : [row(`trimmed past Q's cursor (retention ${m.retention.streamRetention} entries)`, m)]),
      ...(out.missed.cursorPull === undefined ? [] : [row('kept (the default retention): the baseline', out.missed.cursorPull)]),
      '',
      m === undefined ? '' : `Target (trimmed log) ≤ 2 s and ≤ 20× the writes' raw size: ${verdict(m.target.met)}.`,
      ''
    )
  }
  if (out.diff !== undefined) {
    const d = out.diff
    const t = d.traffic
    md.push(
      `**3. Two peers differing in 1 % meet** (P ${f0(d.records.p)} and Q ${f0(d.records.q)} records; ${f0(d.changedRecords)} records changed with both stopped, through the record layer: per side ${Object.entries(d.plan).map(([side, k]: [string, any]) => `${side} ${k.edits} edited, ${k.concurrent} with its own version of a title both changed, ${k.deletes} deleted, ${k.fieldDeletes} with a field deleted, ${k.creates} new`).join('; ')}; new identities, so strangers): digests equal after **${sec(d.seconds)}** from the connection, ${t === undefined ? '—' : `${kb(t.wire.total)} on the wire by then (Q→P ${kb(t.wire.qToP)}, P→Q ${kb(t.wire.pToQ)}; ${kb(d.trafficAtRoundEnd.wire.total)} once the rounds ended), ${f0(d.trafficAtRoundEnd.keysToQ)} keys to Q and ${f0(d.trafficAtRoundEnd.keysToP)} to P`}; reconciliations ${d.reconciles.q + d.reconciles.p}, resyncs ${d.resyncs.q + d.resyncs.p}. Target ≤ 5 s: ${verdict(d.target.met)}. Baselines: figure 4 (equal: ${sec(out.equal?.seconds)}${out.equal?.traffic === undefined ? '' : `, ${kb(out.equal.traffic.wire.total)}`}) and figure 1 (the whole range: ${f1 === undefined ? 'not run' : `${f0(f1.bytes)} bytes, ${sec(f1.digestSeconds)}`}).`,
      ''
    )
  }
  if (out.equal !== undefined) {
    const e = out.equal
    const t = e.traffic
    md.push(
      `**4. Two equal peers meet for the first time** (${f0(e.records)} records each; P and Q, copies of A's stopped store with identities of their own, each in its own process, meeting through a byte-counting TCP relay on 127.0.0.1; the clock runs from the relay's connection to P until both have ended a round that confirmed the ranges equal): **${sec(e.seconds)}** (the first side: ${sec(e.firstSideSeconds)}), ${t === undefined ? '—' : `**${kb(t.wire.total)}** on the wire both ways (Q→P ${kb(t.wire.qToP)}, P→Q ${kb(t.wire.pToQ)}: the private network, noise, yamux, identify and gossipsub included; the pull protocol's replies ${f0(t.repliesTakenByQ + t.repliesTakenByP)} bytes)`}; resyncs ${e.resyncs.q + e.resyncs.p}. Target ≤ 1 s and ≤ 64 KB: ${verdict(e.target.met)}. Baseline: figure 1, the whole range copied${f1 === undefined ? ' (not run)' : ` (${f0(f1.bytes)} bytes, ${sec(f1.digestSeconds)})`}.`,
      ''
    )
  }
  if (out.sustained !== undefined) {
    const s = out.sustained
    md.push(
      `**5. Sustained writes**: ${s.nodes} nodes, ${s.processes} (each its own event loop, as on separate machines; all on the machine's cores), writers on each (a third of the offered rate on each node: new 40-field records through the record layer), ${s.stepSeconds} s per step then up to ${s.drainSeconds} s to drain. Lag: from a write's call until the last node committed it. A step keeps up when at least 95 % of the offered writes were issued, none failed, every write reached every node by the end of the drain, the lag's p99 is at most 2 s and the backlog (writes not yet on every node) grows by no more than 5 % of the offered rate per second (least squares over the step, its first fifth left out).`,
      '',
      '| offered records/s | issued/s | lag p50 | p99 | max | backlog growth/s | CPU per node (share of a core) | kept up |',
      '|---:|---:|---:|---:|---:|---:|---|---|',
      ...s.steps.map((x: any) => `| ${f0(x.offeredRate)} | ${f0(x.issuedRate)} | ${x.lagMs.p50} ms | ${x.lagMs.p99} ms | ${x.lagMs.max} ms | ${x.backlogGrowthPerSecond} | ${x.cpuShare.join(', ')} | ${x.keptUp ? 'yes' : `no: ${x.why.join('; ')}`} |`),
      '',
      `Highest rate kept up: **${s.highestKeptUp === null ? 'none' : `${f0(s.highestKeptUp)} records/s`}** mesh-wide; one node alone writes ${f0(s.bareWriteRate.recordsPerSecond)} records/s on this machine in this run (${f0(s.bareWriteRate.before)} before the steps, ${f0(s.bareWriteRate.after)} after). Target ≥ 2,000 records/s: ${verdict(s.target.met)}.`,
      ''
    )
  }
  if (out.digest !== undefined) {
    const d = out.digest
    const l = d.underWrites
    md.push(
      `**\`GET /api/mesh/digest\`** on a node of ${f0(d.records)} records (a copy of A's store, alone, in its own process; requests one at a time from the benchmark's process over HTTP): p50 **${d.idle.digest.p50Ms} ms**, p99 **${d.idle.digest.p99Ms} ms**, max ${d.idle.digest.maxMs} ms over ${f0(d.idle.digest.requests)} requests; \`GET /health\` on the same node, alternated with them (the baseline): p50 ${d.idle.health.p50Ms} ms, p99 ${d.idle.health.p99Ms} ms. Target p99 ≤ 20 ms: ${verdict(d.target.p99Met)}.`,
      '',
      `While the node takes ${l.writeRate} new 40-field records/s for ${l.seconds} s, asked every 10 ms: the digest, p99 ${l.digest.latency.p99Ms} ms, the node's largest event-loop stall **${l.digest.loop.maxMs} ms** (p99 of the loop's delay ${l.digest.loop.p99Ms} ms); the baseline, \`/health\` under the same writes: largest stall ${l.healthBaseline.loop.maxMs} ms (p99 ${l.healthBaseline.loop.p99Ms} ms). Target no stall over 50 ms: ${verdict(d.target.stallMet)}.`,
      ''
    )
  }
  if (out.busy !== undefined) {
    const b = out.busy
    md.push(
      `**A join against a busy peer**: a fresh node J (in the benchmark's process) joins P (${f0(b.peerRecordsAtStart)} records at the start, its log retention ${b.retention}) while P takes ${b.writeRate} new 40-field records/s: J caught up (no resync under way, its pull at P's head) after **${sec(b.caughtUpSeconds)}** holding ${f0(b.caughtUpRecords)} records, against a budget of ${sec(b.budgetSeconds)} (the idle join of figure 1 scaled to those records: its time plus the writes'), resyncs ${b.resyncs}, reconciliations ${b.reconciles} (no restart loop: ${verdict(b.target.noRestartLoop)}). In the ${b.afterCatchUp.seconds} s after, J was at most ${b.afterCatchUp.maxRecordsBehind ?? '—'} records behind P (bound: ${b.afterCatchUp.boundRecords}, 5 s of writes: ${verdict(b.target.lagBounded)}); once P stopped writing, digests equal after ${sec(b.settleSecondsAfterWritesStopped)}. Within the budget: ${verdict(b.target.withinBudget)}. Search on J once its index was complete: of ${b.search.asked} records asked for by an exact imdbid (half held by P before the join, half written during it; ${b.search.notHeld} of them not on J), ${b.search.missing} that J holds were not found (search finds every record: ${verdict(b.target.searchComplete)}).`,
      ''
    )
  }
  return md
}
