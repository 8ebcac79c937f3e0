/**
 * Time for components that wait: `now` and one-shot timers, injected so a
 * test runs them in virtual time (a clock whose timers fire only when it is
 * told to move on) instead of waiting for real delays.
 */
export interface Clock {
  /** Milliseconds since the epoch (as Date.now). */
  now: () => number
  /** Runs `fn` once after `delayMs`; the function returned cancels it. With `unref`, a pending timer does not keep the process alive. */
  schedule: (delayMs: number, fn: () => void, opts?: { unref?: boolean }) => () => void
}

/** The real clock: Date.now and setTimeout. */
export const systemClock: Clock = {
  now: () => Date.now(),
  schedule (delayMs, fn, opts) {
    const t = setTimeout(fn, delayMs)
    if (opts?.unref === true) t.unref()
    return () => { clearTimeout(t) }
  }
}
