import { describe, expect, it } from 'vitest'
import { Prng } from '../../sim/engine/prng.js'
import { Scheduler } from '../../sim/engine/scheduler.js'

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
