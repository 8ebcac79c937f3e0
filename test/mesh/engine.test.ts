import { describe, expect, it } from 'vitest'
/**
 * The engine of virtual runs (src/mesh/testing): the scheduler, the seeded
 * generator and the link model, which the virtual mesh and the simulator
 * both run on.
 */
import { DEFAULT_LINK, LinkModel, parseLatency, Prng, Scheduler, type LinkConfig } from '../../src/mesh/testing/index.js'

describe('Scheduler', () => {
  it('runs tasks in time order, ties in the order they were scheduled', async () => {
    const s = new Scheduler()
    const seen: string[] = []
    s.at(20, () => seen.push('c'))
    s.at(10, () => seen.push('a'))
    s.at(10, () => seen.push('b'))
    s.after(5, () => {
      seen.push('first')
      s.after(5, () => seen.push('a2')) // due at 10, scheduled after a and b
    })
    await s.run({ until: 100 })
    expect(seen).toEqual(['first', 'a', 'b', 'a2', 'c'])
    expect(s.now).toBe(100)
  })

  it('keeps the clock at each task time and stops before tasks due after `until`', async () => {
    const s = new Scheduler()
    const times: number[] = []
    for (const t of [3, 1, 2, 50]) s.at(t, () => times.push(s.now))
    await s.run({ until: 10 })
    expect(times).toEqual([1, 2, 3])
    expect(s.now).toBe(10)
    await s.run({ until: 60 })
    expect(times).toEqual([1, 2, 3, 50])
  })

  it('skips cancelled tasks and clamps the past to now', async () => {
    const s = new Scheduler()
    const seen: number[] = []
    const cancel = s.at(5, () => seen.push(5))
    s.at(6, () => seen.push(6))
    cancel()
    cancel()
    await s.run({ until: 7 })
    s.at(1, () => seen.push(s.now))
    await s.run({ until: 8 })
    expect(seen).toEqual([6, 7])
  })

  it('waits for the settle promise after each task before the next', async () => {
    const s = new Scheduler()
    const log: string[] = []
    s.at(1, () => log.push('t1'))
    s.at(2, () => log.push('t2'))
    await s.run({
      until: 5,
      settle: () => new Promise<void>(resolve => setImmediate(() => { log.push('settled'); resolve() }))
    })
    expect(log).toEqual(['t1', 'settled', 't2', 'settled'])
  })

  it('keeps a large random load in order', async () => {
    const s = new Scheduler()
    const rng = new Prng('heap')
    const got: number[] = []
    for (let i = 0; i < 5000; i++) s.at(rng.int(1000), () => got.push(s.now))
    await s.run({ until: 1000 })
    expect(got.length).toBe(5000)
    for (let i = 1; i < got.length; i++) expect(got[i]).toBeGreaterThanOrEqual(got[i - 1])
  })
})

describe('Prng', () => {
  it('replays by seed and differs between seeds', () => {
    const a = new Prng('7')
    const b = new Prng('7')
    const c = new Prng('8')
    const xs = Array.from({ length: 20 }, () => a.u32())
    expect(Array.from({ length: 20 }, () => b.u32())).toEqual(xs)
    expect(Array.from({ length: 20 }, () => c.u32())).not.toEqual(xs)
  })

  it('forks independent streams: drawing from one does not shift another', () => {
    const root1 = new Prng('s')
    const root2 = new Prng('s')
    const n1 = root1.fork('node-1')
    root2.fork('node-0').u32() // a draw elsewhere
    const n1b = root2.fork('node-1')
    expect(Array.from({ length: 10 }, () => n1.next())).toEqual(Array.from({ length: 10 }, () => n1b.next()))
    expect(new Prng('s').fork('x').u32()).not.toBe(new Prng('s').fork('y').u32())
  })

  it('draws uniform and exponential values with the right means', () => {
    const r = new Prng('stats')
    let u = 0
    let e = 0
    const n = 20_000
    for (let i = 0; i < n; i++) {
      const x = r.next()
      expect(x).toBeGreaterThanOrEqual(0)
      expect(x).toBeLessThan(1)
      u += x
      e += r.exponential(100)
    }
    expect(u / n).toBeGreaterThan(0.48)
    expect(u / n).toBeLessThan(0.52)
    expect(e / n).toBeGreaterThan(95)
    expect(e / n).toBeLessThan(105)
  })

  it('samples distinct items and shuffles in place', () => {
    const r = new Prng('sample')
    const s = r.sample([1, 2, 3, 4, 5, 6, 7, 8], 5)
    expect(new Set(s).size).toBe(5)
    expect(r.sample([1, 2], 5).sort()).toEqual([1, 2])
    const xs = Array.from({ length: 50 }, (_, i) => i)
    const ys = r.shuffle(xs.slice())
    expect(ys.slice().sort((a, b) => a - b)).toEqual(xs)
    expect(ys).not.toEqual(xs)
  })
})

function links (cfg: Partial<Omit<LinkConfig, 'latency'>> & { latency?: string }, seed = 'links'): LinkModel {
  return new LinkModel(new Prng(seed), {
    ...DEFAULT_LINK, ...cfg, latency: parseLatency(cfg.latency ?? '100')
  })
}

describe('LinkModel', () => {
  it('keeps a lane first-in first-out, pipelined or serial; messages off a lane travel apart', () => {
    const m = links({ latency: 'uniform:10:200' })
    const lane = { last: 0 }
    const arrivals = Array.from({ length: 200 }, (_, i) => m.transit(i, 0, 1, 'x', 10, { lane }))
    const times = arrivals.map(t => t.lost === undefined ? t.arrive : NaN)
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThanOrEqual(times[i - 1])
    const apart = Array.from({ length: 200 }, (_, i) => m.transit(i, 0, 1, 'x', 10)).map(t => t.lost === undefined ? t.arrive : NaN)
    expect(apart.some((t, i) => i > 0 && t < apart[i - 1])).toBe(true)
    const serial = links({ latency: '100', link: 'serial' })
    const one = { last: 0 }
    expect([0, 1, 2].map(at => serial.transit(at, 0, 1, 'x', 10, { lane: one }))).toEqual([{ arrive: 100 }, { arrive: 200 }, { arrive: 300 }])
  })

  it('loses by kind and between regions, duplicates by kind, and turns loss into RTO delays in retransmit mode', () => {
    const m = links({ latency: 'regions:2:50', loss: 0, lossBetweenRegions: 0.5, byKind: { gossip: { loss: 1, duplicate: 0 }, copy: { duplicate: 1 } } })
    expect(m.transit(0, 0, 2, 'gossip', 10)).toEqual({ lost: 'loss' }) // same region, but gossip is always lost
    expect(m.lossOf(0, 2, 'pull')).toBe(0)
    expect(m.lossOf(0, 1, 'pull')).toBe(0.5)
    const lost = Array.from({ length: 1000 }, () => m.transit(0, 0, 1, 'pull', 10)).filter(t => t.lost === 'loss').length
    expect(lost).toBeGreaterThan(400)
    expect(lost).toBeLessThan(600)
    expect(m.transit(0, 0, 2, 'copy', 10)).toEqual({ arrive: 1, again: 1 })
    expect(m.transit(0, 0, 1, 'pull', 10, { reachable: false }).lost).toMatch(/loss|partition/)
    const tcp = links({ latency: '100', loss: 0.5, lossMode: 'retransmit' })
    const delays = Array.from({ length: 500 }, () => tcp.transit(0, 0, 1, 'x', 10)).map(t => t.lost === undefined ? t.arrive : NaN)
    expect(delays.every(d => (d - 100) % 200 === 0)).toBe(true)
    expect(delays.some(d => d > 100)).toBe(true)
  })

  it('queues on the sender\'s uplink and the receiver\'s downlink; a probability of 0 draws nothing', () => {
    const m = links({ latency: '10', uplinkBps: 8000, downlinkBps: 8000 }) // 1 byte per ms each way
    expect(m.transit(0, 0, 1, 'x', 100)).toEqual({ arrive: 210 }) // leaves at 100, arrives at 110, in at 210
    expect(m.transit(0, 0, 2, 'x', 100)).toEqual({ arrive: 310 }) // behind the first on the uplink
    expect(m.transit(0, 3, 1, 'x', 100)).toEqual({ arrive: 310 }) // behind the first on 1's downlink
    const rng = new Prng('draws')
    const lossless = new LinkModel(rng, { ...DEFAULT_LINK, latency: parseLatency('uniform:1:2') })
    lossless.transit(0, 0, 1, 'x', 1)
    const twin = new Prng('draws')
    twin.next() // the latency sample, and nothing else
    expect(rng.next()).toBe(twin.next())
  })
})
