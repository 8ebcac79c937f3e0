/**
 * The report for planning: rates under load (warm-up and tail left out),
 * upload and download apart, the busiest node; a log-scale latency
 * histogram; the options folded away on the page.
 */
import { describe, expect, it } from 'vitest'
import { runScenario, type SimOptions } from '../../sim/index.js'
import { reportHtml } from '../../sim/report/html.js'
import { logHistogram } from '../../sim/metrics/stats.js'
import { logHistogramSvg, logTicks } from '../../sim/report/svg.js'

describe('report', () => {
  it('bins latencies on a log scale, ten bins per decade', () => {
    const h = logHistogram([1, 9, 10, 11, 105, 105, 990, 5000], 10)
    expect(h.lower).toBe(1)
    expect(h.edges[h.edges.length - 1]).toBeGreaterThanOrEqual(5000)
    expect(h.counts.reduce((a, b) => a + b, 0)).toBe(8)
    expect(h.edges).toHaveLength(h.counts.length)
    // Equal width on the log scale: each edge about 10^0.1 times the one before.
    for (let i = 1; i < h.edges.length; i++) expect(h.edges[i] / h.edges[i - 1]).toBeCloseTo(10 ** 0.1, 1)
    expect(logHistogram([], 10).counts).toEqual([])
  })

  it('keeps a narrow spread readable: more log bins than ten a decade, and round ticks inside it, on labelled axes', () => {
    // Every write readable within 106 to 108.6 ms (a baseline run at 50 ms a hop): ten bins a decade made that one bar.
    const values = Array.from({ length: 162 }, (_, i) => 106 + (i % 27) / 10)
    const h = logHistogram(values, 10)
    expect(h.counts.length).toBeGreaterThanOrEqual(10)
    expect(h.counts.reduce((a, b) => a + b, 0)).toBe(162)
    for (let i = 1; i < h.edges.length; i++) expect(Math.log10(h.edges[i] / h.edges[i - 1])).toBeCloseTo(1 / h.perDecade, 3)
    const ticks = logTicks(h.lower, h.edges[h.edges.length - 1])
    expect(ticks.length).toBeGreaterThanOrEqual(3)
    for (const t of ticks) expect(t).toBeGreaterThanOrEqual(h.lower)
    const svg = logHistogramSvg(h.lower, h.edges, h.counts, [], 'ms until readable')
    const labels = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map(m => m[1])
    expect(new Set(labels.filter(l => /^10\d(\.\d+)?$/.test(l))).size).toBeGreaterThanOrEqual(3)
    expect(labels).toContain('ms until readable (log scale)')
    expect(labels).toContain('writes per bin')
    expect(svg.match(/<rect [^>]*fill="#2563eb"/g)?.length).toBe(h.counts.length)
    // A wide spread keeps ten bins a decade and 1-2-5 ticks.
    expect(logHistogram([100, 30_000], 10).perDecade).toBe(10)
    expect(logTicks(100, 30_000)).toEqual([100, 200, 500, 1000, 2000, 5000, 10_000, 20_000])
  })

  it('counts traffic under load only, upload and download apart, and names the busiest node', async () => {
    const o: Partial<SimOptions> = { scenario: 'baseline', profile: 'library', nodes: [8], warmup: 4, duration: 6, tail: 8, rate: 40, seed: 'report' }
    const { report } = await runScenario(o)
    const r = report.runs[0]
    const ul = r.perNode.underLoad
    expect(ul.fromMs).toBe(4000 + 600)
    expect(ul.toMs).toBe(10_000)
    // Every byte sent is received: the means agree.
    expect(ul.uploadPerSecond.mean).toBeCloseTo(ul.downloadPerSecond.mean, -1)
    expect(ul.uploadPerSecond.p50).toBeGreaterThan(0)
    // The load's rate is above the whole run's average, which the quiet warm-up and tail dilute.
    expect(ul.uploadPerSecond.mean + ul.downloadPerSecond.mean).toBeGreaterThan(r.perNode.bytesPerSecond)
    expect(ul.busiest.uploadPerSecond + ul.busiest.downloadPerSecond).toBeGreaterThanOrEqual(ul.uploadPerSecond.max)
    expect(r.latencyHistogram.counts.reduce((a, b) => a + b, 0)).toBe(r.latencyMs.count)
    const html = reportHtml(report, 'npm run sim -- --scenario baseline')
    expect(html).toContain('(log scale)')
    expect(html).toMatch(/<details><summary>every option/)
    expect(html).toContain('Per node under load')
    expect(html).not.toContain('against node count') // one run is one point: no plot
  })
})
