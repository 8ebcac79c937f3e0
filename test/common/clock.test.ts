/**
 * The one clock's contract (src/common/clock.ts): the system clock's
 * keep-alive rule, and the helpers every component waits with, on the
 * system clock and on the tests' virtual one.
 */
import { describe, expect, it } from 'vitest'
import { AbortedError, delay, every, systemClock, TimeoutError, waitFor } from '../../src/common/index.js'
import { ManualClock } from '../helpers/manual-clock.js'

/** Timers that keep this process alive (an unref'd one is not listed). */
const liveTimers = (): number => process.getActiveResourcesInfo().filter(r => r === 'Timeout').length

describe('systemClock', () => {
  it('keeps the process alive only for a timer scheduled with keepAlive', () => {
    const before = liveTimers()
    const plain = systemClock.schedule(60_000, () => {})
    expect(liveTimers()).toBe(before)
    const held = systemClock.schedule(60_000, () => {}, { keepAlive: true })
    expect(liveTimers()).toBe(before + 1)
    held()
    plain()
    expect(liveTimers()).toBe(before)
  })

  it('runs a timer once, never inside the call, and a cancel after it ran is a no-op', async () => {
    let runs = 0
    const cancel = systemClock.schedule(0, () => { runs++ })
    expect(runs).toBe(0)
    await delay(systemClock, 5)
    expect(runs).toBe(1)
    cancel()
    cancel()
    expect(runs).toBe(1)
  })

  it('has a monotonic clock beside the wall one', () => {
    const a = systemClock.monotonic()
    expect(systemClock.monotonic()).toBeGreaterThanOrEqual(a)
    expect(Math.abs(systemClock.now() - Date.now())).toBeLessThan(1_000)
  })
})

describe('waiting on a clock', () => {
  it('delay resolves after its time on the clock it is given, and rejects once aborted', async () => {
    const clock = new ManualClock(0)
    let done = false
    const d = delay(clock, 1_000).then(() => { done = true })
    await clock.advance(999)
    expect(done).toBe(false)
    await clock.advance(1)
    await d
    expect(done).toBe(true)
    const ac = new AbortController()
    const aborted = delay(clock, 1_000, { signal: ac.signal })
    ac.abort()
    await expect(aborted).rejects.toBeInstanceOf(AbortedError)
    expect(clock.pending).toBe(0) // its timer went with it
    await expect(delay(clock, 1, { signal: ac.signal })).rejects.toBeInstanceOf(AbortedError)
  })

  it('every runs at each interval until cancelled', async () => {
    const clock = new ManualClock(0)
    const at: number[] = []
    const stop = every(clock, 100, () => { at.push(clock.monotonic()) })
    await clock.advance(350)
    expect(at).toEqual([100, 200, 300])
    stop()
    await clock.advance(1_000)
    expect(at).toEqual([100, 200, 300])
    expect(clock.pending).toBe(0)
  })

  it('waitFor polls and times out on the clock it is given', async () => {
    const clock = new ManualClock(0)
    let ok = false
    const w = waitFor(() => ok, { timeoutMs: 10_000, what: 'ok', intervalMs: 500, clock })
    await clock.advance(2_000)
    ok = true
    let done = false
    void w.then(() => { done = true })
    await clock.advance(500, { until: () => done, settle: async () => { await new Promise(resolve => setImmediate(resolve)) } })
    expect(done).toBe(true)
    expect(clock.elapsed).toBe(2_500)
    const never = waitFor(() => false, { timeoutMs: 1_000, what: 'nothing', intervalMs: 100, clock })
    const failed = expect(never).rejects.toBeInstanceOf(TimeoutError)
    await clock.advance(1_100, { settle: async () => { await new Promise(resolve => setImmediate(resolve)) } })
    await failed
  })
})
