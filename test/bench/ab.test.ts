/**
 * bench:ab's arithmetic and parsing (bench/lib/ab.ts): reading a benchmark's
 * JSON out of its stdout, finding a figure in either shape of a benchmark's
 * JSON, medians, B/A and the tolerance in both directions.
 */
import { describe, expect, it } from 'vitest'
import { BENCHES, extractJson, median, metricValue, parseEnvOption, parseMetricOption, sidesOfRound, summarise, valueAt,
  type MetricSpec } from '../../bench/lib/ab.js'

const rate: MetricSpec = { name: 'rate', paths: ['x'], better: 'higher', headline: true, description: '' }
const latency: MetricSpec = { name: 'p99Ms', paths: ['y'], better: 'lower', headline: true, description: '' }

describe('extractJson', () => {
  it('skips a banner and progress lines with braces before the object, and text after it', () => {
    const out = '\n> meta-core@0.1.0 bench:ingest\n> tsx bench/ingest.ts\n\nlog {not json}\n{\n  "a": { "b": [1, 2] },\n  "c": "}"\n}\ntrailing line\n'
    expect(extractJson(out)).toEqual({ a: { b: [1, 2] }, c: '}' })
  })

  it('fails with the start of the output when there is no object', () => {
    expect(() => extractJson('store ready at x.db (cached)\n')).toThrow(/no JSON object.*store ready/)
  })
})

describe('figures in a benchmark\'s JSON', () => {
  it('follows dot paths through objects and arrays', () => {
    expect(valueAt({ results: [{ writePath: { recordsPerSecond: 7 } }] }, 'results.0.writePath.recordsPerSecond')).toBe(7)
    expect(valueAt({ results: [] }, 'results.0.writePath')).toBeUndefined()
    expect(valueAt({ a: 1 }, 'a.b')).toBeUndefined()
  })

  it('reads ingest\'s headline in the older and the newer shape of its JSON', () => {
    const spec = BENCHES.ingest.metrics.find(m => m.name === 'writePath')!
    expect(metricValue({ small: { recordsPerSecond: 637.5 }, large: { recordsPerSecond: 437 } }, spec)).toBe(637.5)
    expect(metricValue({ results: [{ writePath: { recordsPerSecond: 2900 } }, { writePath: { recordsPerSecond: 2100 } }] }, spec)).toBe(2900)
    expect(() => metricValue({ small: { recordsPerSecond: 'fast' } }, spec)).toThrow(/writePath/)
  })

  it('reads api\'s median round', () => {
    const json = { medianRound: { health: { requestsPerSecond: 20_000 }, apiMetaCid: { requestsPerSecond: 10_000, p99Ms: 8.4 }, ratioToHealth: 0.5 } }
    expect(Object.fromEntries(BENCHES.api.metrics.map(m => [m.name, metricValue(json, m)])))
      .toEqual({ apiMeta: 10_000, ratioToHealth: 0.5, health: 20_000, apiMetaP99Ms: 8.4 })
  })
})

describe('options', () => {
  it('parses --metric with fallback paths; a name ending in Ms, Seconds or Bytes is lower-is-better', () => {
    expect(parseMetricOption('hits=a.b|c.0')).toMatchObject({ name: 'hits', paths: ['a.b', 'c.0'], better: 'higher', headline: true })
    expect(parseMetricOption('p50Ms=q.p50').better).toBe('lower')
    expect(parseMetricOption('freshSeconds=catchUp.fresh.seconds').better).toBe('lower')
    expect(parseMetricOption('wireBytes=catchUp.fresh.bytes').better).toBe('lower')
    expect(() => parseMetricOption('hits')).toThrow(/name=path/)
    expect(() => parseMetricOption('hits=')).toThrow(/name=path/)
  })

  it('parses --env, keeping = in the value', () => {
    expect(parseEnvOption('BENCH_INGEST_LARGE=0')).toEqual(['BENCH_INGEST_LARGE', '0'])
    expect(parseEnvOption('X=a=b')).toEqual(['X', 'a=b'])
    expect(() => parseEnvOption('=1')).toThrow(/KEY=value/)
  })

  it('orders the sides of each round', () => {
    expect([0, 1, 2].map(r => sidesOfRound('ab', r).join(''))).toEqual(['ab', 'ab', 'ab'])
    expect([0, 1, 2, 3].map(r => sidesOfRound('abba', r).join(''))).toEqual(['ab', 'ba', 'ab', 'ba'])
  })
})

describe('summarise', () => {
  it('medians of odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([])).toBeNaN()
  })

  it('B/A of the medians and per round; a rate may fall by the tolerance, not more', () => {
    const s = summarise(rate, [100, 90, 110], [96, 99, 94], 0.05)
    expect(s.medianA).toBe(100)
    expect(s.medianB).toBe(96)
    expect(s.ratio).toBe(0.96)
    expect(s.roundRatios).toEqual([0.96, 1.1, 0.8545])
    expect(s.medianRoundRatio).toBe(0.96)
    expect(s.withinTolerance).toBe(true)
    expect(summarise(rate, [100], [94], 0.05).withinTolerance).toBe(false)
    expect(summarise(rate, [100], [130], 0.05).withinTolerance).toBe(true)
  })

  it('a latency may rise by the tolerance, not more', () => {
    expect(summarise(latency, [10], [10.4], 0.05).withinTolerance).toBe(true)
    expect(summarise(latency, [10], [10.6], 0.05).withinTolerance).toBe(false)
    expect(summarise(latency, [10], [5], 0.05).withinTolerance).toBe(true)
  })

  it('refuses rounds that do not pair up', () => {
    expect(() => summarise(rate, [1, 2], [1], 0.05)).toThrow(/2 A and 1 B/)
    expect(() => summarise(rate, [], [], 0.05)).toThrow()
  })
})
