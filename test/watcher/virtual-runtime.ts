/**
 * A watcher runtime on a virtual clock: timers run only when the test moves
 * time on, so a settle window of minutes passes in a few real milliseconds
 * and nothing the watcher schedules fires while the test looks (the wall
 * clock, which file mtimes are compared with, stays real). Stats and
 * hashes are the real file system's; `holdHash` keeps one path's hash from
 * finishing until released (a long hash queue, on demand).
 */
import { sleep } from '../../src/common/index.js'
import { systemRuntime, type WatcherRuntime } from '../../src/watcher/index.js'

interface Timer { at: number, seq: number, fn: () => void, done: boolean }

export interface VirtualRuntime extends WatcherRuntime {
  /** Virtual ms since the runtime was made. */
  readonly elapsed: number
  /**
   * Moves time on by `ms` in steps of `stepMs`, running each timer at its
   * time and letting real I/O (stats, hashes, store commits) proceed between
   * steps; stops early once `until` holds.
   */
  advance: (ms: number, opts?: { stepMs?: number, until?: () => boolean }) => Promise<boolean>
  /** The next hash of a file whose path ends with `suffix` waits until the returned release is called. */
  holdHash: (suffix: string) => () => void
  /** Hashes started so far, by absolute path. */
  readonly hashed: string[]
}

export function virtualRuntime (): VirtualRuntime {
  let t = 0
  let seq = 0
  const timers: Timer[] = []
  const holds = new Map<string, Promise<void>>()
  const hashed: string[] = []
  /** Stats and hashes under way: a step of the clock waits for them (a held hash excepted), as they take real time. */
  const io = new Set<Promise<unknown>>()
  const tracked = <T>(p: Promise<T>): Promise<T> => {
    io.add(p)
    void p.catch(() => {}).finally(() => { io.delete(p) })
    return p
  }

  const runDue = (): void => {
    for (;;) {
      let next: Timer | undefined
      for (const x of timers) if (!x.done && x.at <= t && (next === undefined || x.at < next.at || (x.at === next.at && x.seq < next.seq))) next = x
      if (next === undefined) return
      next.done = true
      timers.splice(timers.indexOf(next), 1)
      next.fn()
    }
  }

  return {
    // The wall clock stays the real one: the disk writes file mtimes with it, and a file is quiet by comparing the two.
    now: () => Date.now(),
    monotonic: () => t,
    schedule (delayMs, fn) {
      const timer: Timer = { at: t + Math.max(0, delayMs), seq: seq++, fn, done: false }
      timers.push(timer)
      return () => {
        if (timer.done) return
        timer.done = true
        timers.splice(timers.indexOf(timer), 1)
      }
    },
    stat: async (root, rel) => await tracked(systemRuntime.stat(root, rel)),
    async hash (abs, opts) {
      hashed.push(abs)
      for (const [suffix, gate] of holds) {
        if (!abs.endsWith(suffix)) continue
        holds.delete(suffix)
        await gate
        break
      }
      return await tracked(systemRuntime.hash(abs, opts))
    },
    get elapsed () { return t },
    get hashed () { return hashed },
    async advance (ms, opts = {}) {
      const step = opts.stepMs ?? 10
      const end = t + ms
      for (;;) {
        // Real time for the I/O the last timers started: stats and hashes to their end, then a little for a commit.
        while (io.size > 0) await Promise.allSettled([...io])
        await sleep(2)
        if (opts.until?.() === true) return true
        if (t >= end) return false
        t = Math.min(end, t + step)
        runDue()
      }
    },
    holdHash (suffix) {
      let release!: () => void
      holds.set(suffix, new Promise<void>(resolve => { release = resolve }))
      return () => { release() }
    }
  }
}
