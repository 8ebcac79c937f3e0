import { describe, it, expect } from 'vitest'
import { betterCid, canonicalCid, cidRank, compareBytewise } from '../../src/cid/index.js'
import { loadJsonFixture } from './fixture-files.js'

interface RankVector { name: string, cid: string, rank: number }
const { vectors } = loadJsonFixture<{ vectors: RankVector[] }>('cid-rank-vectors.json')
const byName = (name: string): string => {
  const v = vectors.find(x => x.name === name)
  if (v === undefined) throw new Error(`no vector ${name}`)
  return v.cid
}

/** Deterministic Fisher–Yates (mulberry32), so a failure reproduces. */
function shuffled<T> (items: readonly T[], seed: number): T[] {
  const out = items.slice()
  let s = seed >>> 0
  const rand = (): number => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

/** Expected winner from the fixture's own ranks (not cidRank): highest rank, then smallest string. */
function expectedWinner (set: readonly RankVector[]): string {
  return set.slice().sort((a, b) => (b.rank - a.rank) || (a.cid < b.cid ? -1 : a.cid > b.cid ? 1 : 0))[0].cid
}

describe('cidRank', () => {
  it('the fixture has the vectors of every rank of the ladder (docs/design/data-model.md#canonical-cid)', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(26)
    expect(new Set(vectors.map(v => v.rank))).toEqual(new Set([40, 30, 25, 20, 10, 5, 0]))
  })

  for (const v of vectors) {
    it(`${v.name} ranks ${v.rank}`, () => {
      expect(cidRank(v.cid)).toBe(v.rank)
    })
  }

  it('refuses what strict parsing refuses: upper-case, CIDv0, token form, non-strings', () => {
    const sha = byName('sha2-256-raw-codec')
    expect(cidRank(sha.toUpperCase())).toBe(0)
    expect(cidRank('b' + sha.slice(1).toUpperCase())).toBe(0)
    expect(cidRank('sha256:' + sha)).toBe(0)
    expect(cidRank(sha + '=')).toBe(0)
    expect(cidRank(undefined)).toBe(0)
    expect(cidRank(42)).toBe(0)
  })

  it('matches nzb-posting on its codec before the sha2-256 mh switch', () => {
    // codec 0x1003 + mh 0x12 would score 30 if the mh were checked first.
    expect(cidRank(byName('nzb-posting'))).toBe(25)
  })
})

describe('betterCid', () => {
  it('higher rank wins regardless of argument order', () => {
    const dagpb = byName('ipfs-dagpb')
    const md5 = byName('md5')
    expect(betterCid(dagpb, md5)).toBe(dagpb)
    expect(betterCid(md5, dagpb)).toBe(dagpb)
    const loc = byName('card-locator')
    const mid = byName('midhash256-codec-eq-mh')
    expect(betterCid(loc, mid)).toBe(mid)
    expect(betterCid(mid, loc)).toBe(mid)
  })

  it('on a tie the byte-wise smaller string wins', () => {
    const raw = byName('sha2-256-raw-codec') // bafkrei…
    const eq = byName('sha2-256-codec-eq-mh') // baejbei…
    expect(betterCid(raw, eq)).toBe(eq)
    expect(betterCid(eq, raw)).toBe(eq)
    // both midhash spellings rank 10; the raw-codec one (bafky…) sorts first
    const midRaw = byName('midhash256-raw-codec')
    const midEq = byName('midhash256-codec-eq-mh')
    expect(betterCid(midEq, midRaw)).toBe(midRaw)
  })

  it('an upper-case twin never beats the lower-case original', () => {
    const sha = byName('sha2-256-raw-codec')
    const upper = 'b' + sha.slice(1).toUpperCase() // sorts before `sha` byte-wise
    expect(upper < sha).toBe(true)
    expect(betterCid(upper, sha)).toBe(sha)
  })
})

describe('canonicalCid', () => {
  it('empty → undefined', () => {
    expect(canonicalCid([])).toBeUndefined()
    expect(canonicalCid(new Set<string>())).toBeUndefined()
  })

  it('a single member is canonical whatever its rank', () => {
    expect(canonicalCid(['not-a-cid'])).toBe('not-a-cid')
    expect(canonicalCid([byName('url-locator')])).toBe(byName('url-locator'))
  })

  it('picks the fixture winner for every shuffle of every vector set', () => {
    const sets: Array<{ label: string, members: RankVector[] }> = [
      { label: 'all', members: vectors },
      ...[40, 30, 25, 20, 10, 5, 0].map(r => ({ label: `tier ${r}`, members: vectors.filter(v => v.rank === r) })),
      { label: 'below 30', members: vectors.filter(v => v.rank < 30) },
      { label: 'below 10', members: vectors.filter(v => v.rank < 10) }
    ]
    for (const { label, members } of sets) {
      const want = expectedWinner(members)
      for (let seed = 1; seed <= 25; seed++) {
        const order = shuffled(members, seed * 7919).map(v => v.cid)
        expect(canonicalCid(order), `${label} seed ${seed}`).toBe(want)
        expect(canonicalCid(new Set(order)), `${label} seed ${seed} (Set)`).toBe(want)
        expect(order.reduce((a, b) => betterCid(a, b)), `${label} seed ${seed} (fold)`).toBe(want)
      }
    }
  })

  it('names the expected winners explicitly', () => {
    expect(canonicalCid(vectors.map(v => v.cid))).toBe(byName('ipfs-dagpb'))
    expect(canonicalCid(vectors.filter(v => v.rank === 30).map(v => v.cid))).toBe(byName('sha2-256-codec-eq-mh'))
    expect(canonicalCid(vectors.filter(v => v.rank === 20).map(v => v.cid))).toBe(byName('btih-v2-raw-codec'))
    expect(canonicalCid(vectors.filter(v => v.rank === 5).map(v => v.cid))).toBe(byName('nzb-release-locator'))
    expect(canonicalCid(vectors.filter(v => v.rank === 0).map(v => v.cid))).toBe('')
    expect(canonicalCid([byName('card-locator'), byName('midhash256-codec-eq-mh'), byName('sha1')])).toBe(byName('midhash256-codec-eq-mh'))
  })

  it('accepts any iterable, including a generator', () => {
    function * gen (): Generator<string> { yield byName('md5'); yield byName('nzb-posting'); yield byName('btih-v1-file') }
    expect(canonicalCid(gen())).toBe(byName('nzb-posting'))
  })
})

describe('compareBytewise', () => {
  it('orders ASCII like <', () => {
    expect(compareBytewise('baej', 'bafk')).toBeLessThan(0)
    expect(compareBytewise('bafk', 'baej')).toBeGreaterThan(0)
    expect(compareBytewise('ba', 'baa')).toBeLessThan(0)
    expect(compareBytewise('abc', 'abc')).toBe(0)
  })

  it('orders by UTF-8 bytes where UTF-16 code units disagree', () => {
    const astral = '\u{1F600}' // UTF-8 F0…, UTF-16 D83D…
    const bmpHigh = '\uFFFD' // UTF-8 EF BF BD
    expect(astral < bmpHigh).toBe(true) // JS code-unit order
    expect(Buffer.compare(Buffer.from(astral), Buffer.from(bmpHigh))).toBe(1)
    expect(compareBytewise(astral, bmpHigh)).toBeGreaterThan(0)
    expect(betterCid(astral, bmpHigh)).toBe(bmpHigh)
  })
})
