import { AbortedError, TimeoutError } from './errors.js'

interface WaitOptions {
  /** Deadline in milliseconds. */
  timeoutMs: number
  /** Named in the timeout error: what was waited for. */
  what: string
  /** Poll interval in milliseconds (default 10). */
  intervalMs?: number
  signal?: AbortSignal
}

/** Polls `pred` until it returns true, or throws a TimeoutError naming `what`. */
export async function waitFor (pred: () => boolean | Promise<boolean>, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs
  const interval = opts.intervalMs ?? 10
  for (;;) {
    if (opts.signal?.aborted === true) throw new AbortedError(`aborted while waiting for ${opts.what}`)
    if (await pred()) return
    if (Date.now() >= deadline) throw new TimeoutError(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what}`)
    await sleep(interval)
  }
}

/** Sleeps `ms`, rejecting with AbortedError if the signal fires first. */
export async function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) { reject(new AbortedError()); return }
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => { clearTimeout(t); reject(new AbortedError()) }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
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
