/**
 * How many FTS rows hold a trigram, for planning only: the token whose
 * rarest trigram is rarest goes into the FTS query, and tokens far more
 * common than that one (a "the" beside a rare word) are checked on the
 * returned haystacks instead of making FTS5 walk their long doclists.
 *
 * Counts come from an fts5vocab table (per connection, in temp) and are
 * cached: a lookup walks the trigram's doclist, which for the commonest
 * trigrams costs milliseconds. A stale count can only make a plan slower,
 * never an answer wrong, so the cache is simply dropped now and then.
 */
import type { KvStore, SqlStatement } from '../kv/index.js'
import { INDEX_SCHEMA } from './search-schema.js'

/** Cached counts are forgotten after this long (ms), so plans follow a library as it grows. */
const MAX_AGE_MS = 10 * 60_000
const MAX_ENTRIES = 50_000
/** Trigrams looked at per token: its rarest among these bounds its matches well enough. */
const MAX_TRIGRAMS_PER_TOKEN = 8

export class TrigramStats {
  private readonly st: SqlStatement
  private cache = new Map<string, number>()
  private since = Date.now()

  constructor (kv: KvStore) {
    kv.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_fts_vocab USING fts5vocab(${INDEX_SCHEMA}, 'search_fts', 'row')`)
    this.st = kv.prepare('SELECT doc FROM temp.search_fts_vocab WHERE term = ?').pluck()
  }

  /** Rows holding `trigram` (3 code points). */
  docs (trigram: string): number {
    if (Date.now() - this.since > MAX_AGE_MS || this.cache.size > MAX_ENTRIES) {
      this.cache = new Map()
      this.since = Date.now()
    }
    let n = this.cache.get(trigram)
    if (n === undefined) {
      n = (this.st.get(trigram) as number | undefined) ?? 0
      this.cache.set(trigram, n)
    }
    return n
  }

  /** An upper bound of the rows containing `token` (3+ code points): the count of its rarest trigram sampled. */
  estimate (token: string): number {
    const cps = [...token]
    const n = cps.length - 2
    const step = Math.max(1, Math.ceil(n / MAX_TRIGRAMS_PER_TOKEN))
    let best = Infinity
    for (let i = 0; i < n; i += step) {
      best = Math.min(best, this.docs(cps.slice(i, i + 3).join('')))
      if (best === 0) break
    }
    return best
  }
}
