import { delay, systemClock, type Clock } from './clock.js'
import { AbortedError, TimeoutError } from './errors.js'

interface WaitOptions {
  /** Deadline in milliseconds. */
  timeoutMs: number
  /** Named in the timeout error: what was waited for. */
  what: string
  /** Poll interval in milliseconds (default 10). */
  intervalMs?: number
  signal?: AbortSignal
  /** The clock the polls and the deadline run on (default: the system's); a component waits on its own. */
  clock?: Clock
}

/** Polls `pred` until it returns true, or throws a TimeoutError naming `what`. */
export async function waitFor (pred: () => boolean | Promise<boolean>, opts: WaitOptions): Promise<void> {
  const clock = opts.clock ?? systemClock
  const deadline = clock.monotonic() + opts.timeoutMs
  const interval = opts.intervalMs ?? 10
  for (;;) {
    if (opts.signal?.aborted === true) throw new AbortedError(`aborted while waiting for ${opts.what}`)
    if (await pred()) return
    if (clock.monotonic() >= deadline) throw new TimeoutError(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what}`)
    // Someone awaits the outcome: the poll keeps the process alive, as the work it waits for does.
    await delay(clock, interval, { keepAlive: true })
  }
}

/** Sleeps `ms` of real time (the process stays alive meanwhile), rejecting with AbortedError if the signal fires first. */
export async function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  await delay(systemClock, ms, { signal, keepAlive: true })
}

/** Races a promise against a deadline that names what it waited for. */
export async function withTimeout<T> (p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => { reject(new TimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}`)) }, timeoutMs)
      })
    ])
  } finally {
    clearTimeout(timer)
  }
}
