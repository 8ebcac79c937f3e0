/**
 * Churn benchmark: what rewriting records does to search's value probes.
 *
 * A value probe (an exact filter, a prefix range) seeks every field-index
 * bucket between the oldest live document id and the newest. A record
 * written again is indexed again under a new id; one never written again
 * keeps its old id. So churn spreads the live ids, and without renumbering
 * (merger.ts) every probe would seek ever more empty buckets.
 *
 * Two stores side by side in one process, renumbering off
 * (`renumberAt: Infinity`) and on (the default), their rounds alternated
 * (off first, then on) so both see the same machine. Each takes N synthetic
 * records as one peer's pages (`records.applyBatch`), then R rounds that
 * write a new title into nine in ten of them (one in ten is never written
 * again), each round merged before it is measured: the span of live
 * document ids, the buckets a probe seeks, and the p50 of 300 exact
 * `tmdbid` filters (warmed). With BENCH_CHURN_BUCKET_SHIFT=6 (the default:
 * 64 documents per bucket) a 20,000-record store seeks as many buckets as
 * a 1.3-million-record one with the node's default 4,096.
 *
 * Env: BENCH_CHURN_RECORDS (20000), BENCH_CHURN_ROUNDS (16),
 * BENCH_CHURN_BUCKET_SHIFT (6), BENCH_NO_DOC=1 (leave docs/benchmarks.md
 * alone), BENCH_KEEP=1 (keep the stores in .bench-tmp/churn/).
 */
import fs from 'node:fs'
import path from 'node:path'
import { formatHlc, newRecordId, openNodeStore, type RemoteEntry } from '../src/records/index.js'
import { createSearch, type SearchRequest } from '../src/search/index.js'
import { machineLine, percentile, removeUnlessKept, report } from './lib/report.js'
import { syntheticRecord } from './lib/synthetic.js'

const N = Number(process.env.BENCH_CHURN_RECORDS ?? 20_000)
const ROUNDS = Number(process.env.BENCH_CHURN_ROUNDS ?? 16)
const SHIFT = Number(process.env.BENCH_CHURN_BUCKET_SHIFT ?? 6)
const TMP = path.resolve('.bench-tmp/churn')
const PAGE_ROOTS = 2000
const QUERIES = 300

interface Round { round: number, span: number, docs: number, buckets: number, p50Ms: number, seconds: number }
interface Variant { name: string, rounds: Round[] }

const RECORDS = Array.from({ length: N }, (_, i) => syntheticRecord(i))
const QUERY_SET: SearchRequest[] = RECORDS.filter(r => r.fields.tmdbid !== undefined).slice(0, QUERIES)
  .map(r => ({ filters: [{ property: 'tmdbid', values: [r.fields.tmdbid], exact: true }] }))

interface Churned { variant: Variant, round: (round: number) => Promise<void>, close: () => Promise<void> }

async function open (name: string, renumberAt: number): Promise<Churned> {
  const d = path.join(TMP, name)
  fs.rmSync(d, { recursive: true, force: true })
  fs.mkdirSync(d, { recursive: true })
  const s = openNodeStore({ path: path.join(d, 'store.db'), nodeId: 'bench' })
  const search = createSearch({ kv: s.kv, records: s.records }, { internal: { bucketShift: SHIFT, merger: { renumberAt } } })
  await search.start()
  // Versions in the past (a peer's), one ms apart per record and round, all within the drift bound.
  const baseMs = Date.now() - N * (ROUNDS + 2) - 60_000
  const rids = RECORDS.map((_, i) => newRecordId(baseMs + i))
  const write = async (round: number, chosen: (i: number) => boolean): Promise<void> => {
    for (let from = 0; from < N; from += PAGE_ROOTS) {
      const page: RemoteEntry[] = []
      for (let i = from; i < Math.min(N, from + PAGE_ROOTS); i++) {
        if (!chosen(i)) continue
        const hlc = formatHlc({ ms: baseMs + (round + 1) * N + i, counter: 0 })
        const fields = round === 0 ? RECORDS[i].fields : { title: `${RECORDS[i].fields.title ?? ''} r${round}` }
        for (const f in fields) page.push({ key: `file:${rids[i]}/${f}`, value: fields[f], hlc, origin: 'bench-peer' })
      }
      await s.records.applyBatch(page)
    }
    await search.whenIdle()
  }
  const measure = (round: number, seconds: number): Round => {
    const { span, docs } = s.kv.prepare('SELECT coalesce(max(d) - min(d) + 1, 0) AS span, count(*) AS docs FROM search_doc').get() as { span: number, docs: number }
    for (const q of QUERY_SET.slice(0, 20)) search.search(q)
    const ms = QUERY_SET.map(q => {
      const t = performance.now()
      if (search.search(q).results.length === 0) throw new Error('a filter found nothing')
      return performance.now() - t
    })
    return { round, span, docs, buckets: (span + (1 << SHIFT) - 1) >> SHIFT, p50Ms: Math.round(percentile(ms, 50) * 1000) / 1000,
      seconds: Math.round(seconds * 100) / 100 }
  }
  const variant: Variant = { name, rounds: [] }
  return {
    variant,
    async round (round: number) {
      const t = performance.now()
      // Round 0 writes every record; later rounds nine in ten (one in ten is never written again).
      await write(round, round === 0 ? () => true : i => i % 10 !== 0)
      const r = measure(round, (performance.now() - t) / 1000)
      variant.rounds.push(r)
      process.stderr.write(`churn (${name}): round ${round}/${ROUNDS}, span ${r.span} ids for ${r.docs} documents, p50 ${r.p50Ms} ms, ${r.seconds} s\n`)
    },
    async close () {
      await search.stop()
      s.close()
      removeUnlessKept(d)
    }
  }
}

const stores = [await open('renumbering-off', Infinity), await open('renumbering-on', 4)]
for (let round = 0; round <= ROUNDS; round++) for (const st of stores) await st.round(round)
for (const st of stores) await st.close()
removeUnlessKept(TMP)
const [off, on] = stores.map(st => st.variant)

const row = (r: Round, o: Round): string =>
  `| ${r.round} | ${r.span.toLocaleString('en-US')} (${r.buckets}) | ${r.p50Ms} | ${r.seconds} | ${o.span.toLocaleString('en-US')} (${o.buckets}) | ${o.p50Ms} | ${o.seconds} |`
const shown = off.rounds.filter(r => r.round % 4 === 0 || r.round === 1)
const last = (v: Variant): Round => v.rounds[v.rounds.length - 1]
const sum = (v: Variant): number => v.rounds.slice(1).reduce((a, r) => a + r.seconds, 0)

/* eslint-disable max-len -- docs/benchmarks.md as it reads: a paragraph or table row is one line */
report('churn', { benchmark: 'churn', machine: machineLine(), records: N, rounds: ROUNDS, bucketShift: SHIFT, variants: [off, on] }, `
## Churn: value probes while records are rewritten (\`npm run bench:churn\`)

${machineLine()}. ${N.toLocaleString('en-US')} synthetic records applied as a peer's pages, then ${ROUNDS} rounds each writing a new title into nine in ten of them (one in ten is never written again), merged before each measurement. ${1 << SHIFT} documents per field-index bucket (\`bucketShift\` ${SHIFT}), so this store seeks as many buckets as one ${(4096 / (1 << SHIFT)).toLocaleString('en-US')} times larger would with the node's default 4,096. p50 of ${QUERIES} exact \`tmdbid\` filters after each round. Without renumbering and with it (the default: a round starts once the span of live document ids passes four times the documents): two stores in one process, their rounds alternated.

| round | without: span of live ids (buckets) | p50 ms | round s | with renumbering: span (buckets) | p50 ms | round s |
|---|---|---|---|---|---|---|
${shown.map(r => row(r, on.rounds[r.round])).join('\n')}

After ${ROUNDS} rounds: p50 ${last(off).p50Ms} ms without renumbering, ${last(on).p50Ms} ms with it; the rounds took ${sum(off).toFixed(1)} s and ${sum(on).toFixed(1)} s in all.
`)
/* eslint-enable max-len */
