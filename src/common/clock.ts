import { AbortedError } from './errors.js'

/**
 * Time for every component that waits: the wall clock, a clock that never
 * steps back, and one-shot timers, injected so a test runs a component in
 * virtual time (a clock whose timers fire only when the test moves it on)
 * instead of waiting for real delays. The watcher, search and the API take
 * one; a runtime with more to offer (the mesh's: randomness, the network)
 * extends it.
 *
 * Contract:
 * - `schedule` never runs `fn` inside the call; `fn` runs at most once;
 *   cancelling after it ran (or twice) is a no-op.
 * - One keep-alive rule: a pending timer does not keep the process alive,
 *   unless it carries work on its way that must not be lost to an exit (a
 *   batch of writes gathering, a merge due): `keepAlive`. Ticks, polls,
 *   heartbeats, retries of a look and idle closes never do; what keeps a
 *   node running is its server and its store, not its timers.
 * - `monotonic` never goes back: durations and windows are measured on it,
 *   so a step of the wall clock neither holds work back nor hurries it.
 * - `now` is the wall clock (ms since 1970): what is written down (event
 *   timestamps, file mtimes are compared with it).
 */
export interface Clock {
  /** Wall-clock milliseconds since 1970 (Date.now). */
  now: () => number
  /** Milliseconds on a clock that never goes back (any origin). */
  monotonic: () => number
  /** Runs `fn` once after `delayMs`; the function returned cancels it. */
  schedule: (delayMs: number, fn: () => void, opts?: ScheduleOptions) => Cancel
}

export interface ScheduleOptions {
  /** The pending timer keeps the process alive (work on its way); default: it does not. */
  keepAlive?: boolean
}

/** Cancels a scheduled timer; a no-op once it ran or was cancelled. */
export type Cancel = () => void

/** The real clock: Date.now, performance.now and setTimeout. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  schedule (delayMs, fn, opts) {
    const t = setTimeout(fn, delayMs)
    if (opts?.keepAlive !== true) t.unref()
    return () => { clearTimeout(t) }
  }
}

/** Resolves after `ms` on `clock`; rejects with AbortedError once `signal` fires. */
export async function delay (clock: Clock, ms: number, opts: { signal?: AbortSignal, keepAlive?: boolean } = {}): Promise<void> {
  const { signal } = opts
  if (signal?.aborted === true) throw new AbortedError()
  await new Promise<void>((resolve, reject) => {
    const onAbort = (): void => { cancel(); reject(new AbortedError()) }
    const cancel = clock.schedule(ms, () => { signal?.removeEventListener('abort', onAbort); resolve() }, { keepAlive: opts.keepAlive })
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Runs `fn` every `everyMs` on `clock` (the first time after one interval) until the function returned is called. */
export function every (clock: Clock, everyMs: number, fn: () => void): Cancel {
  let stopped = false
  let cancel: Cancel = () => {}
  const arm = (): void => {
    cancel = clock.schedule(everyMs, () => {
      if (stopped) return
      arm()
      fn()
    })
  }
  arm()
  return () => { stopped = true; cancel() }
}
