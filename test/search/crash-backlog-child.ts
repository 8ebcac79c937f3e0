/**
 * Writer process for the search crash test: search attached with a merger
 * cut into tiny steps (a batch spans dozens of transactions) and a small
 * backlog bound, so a kill lands in the middle of a batch with roots still
 * staged. Writes new records, updates, deletes and CID aliases that join
 * and split groups, several in flight; prints `ack <n>` after each commit.
 */
import { openNodeStore, type RecordId } from '../../src/records/index.js'
import { createSearch } from '../../src/search/index.js'
import { prng, pick } from '../helpers/prng.js'
import { testCid } from '../helpers/record-ops.js'

const path = process.argv[2]
const seed = Number(process.argv[3])
const s = openNodeStore({ path, nodeId: 'crash-writer' })
await createSearch({ kv: s.kv, records: s.records }, {
  internal: { syncRepairMaxRoots: 0, merger: { batchRoots: 40, delayMs: 2, backlogLimit: 150 } }
}).start()
const rand = prng(seed)
const WORDS = ['north', 'south', 'River', 'stone', 'Ünïcode', 'glass', 'ember', 'tide']
const CIDS = Array.from({ length: 12 }, (_, i) => testCid(i))
const known: RecordId[] = s.records.listRoots({ limit: 10_000 })
let n = 0

async function op (): Promise<void> {
  const roll = rand()
  const words = (): string => `${pick(rand, WORDS)} ${pick(rand, WORDS)} ${n}`
  if (roll < 0.5 || known.length === 0) {
    const extra: Record<string, string> = { title: words(), genre: `${pick(rand, WORDS)}, ${pick(rand, WORDS)}`, year: String(1990 + (n % 30)) }
    if (rand() < 0.2) extra[`cids/${pick(rand, CIDS)}`] = 'true'
    known.push(await s.records.mint(`/files/k/${seed}-${n}.mkv`, n, n, extra))
  } else if (roll < 0.8) {
    await s.records.mergeFlat(pick(rand, known), rand() < 0.5 ? { title: words() } : { showtitle: words(), year: String(2000 + (n % 20)) })
  } else if (roll < 0.9) {
    await s.records.addAlias(pick(rand, known), pick(rand, CIDS))
  } else if (roll < 0.95) {
    await s.records.deleteProperty(pick(rand, known), rand() < 0.5 ? `cids/${pick(rand, CIDS)}` : 'title')
  } else {
    await s.records.deleteRoot(pick(rand, known))
  }
}

async function writer (): Promise<void> {
  for (;;) {
    const i = n++
    try {
      await op()
    } catch (err) {
      // A target deleted meanwhile: expected; anything else ends the run loudly.
      if (!(err instanceof Error) || !/neither|not found/.test(err.message)) throw err
    }
    process.stdout.write(`ack ${i}\n`)
  }
}

void Promise.all(Array.from({ length: 6 }, writer))
