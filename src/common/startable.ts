/**
 * Lifecycle contract for long-lived components. `start()` and `stop()` are
 * idempotent; `stop()` on a never-started component is fine.
 */
export interface Startable {
  start: () => Promise<void>
  stop: () => Promise<void>
}

/**
 * Runs every stop step even when one fails, in the given order, and throws the
 * first error once all have run.
 */
export async function stopAll (steps: Array<() => Promise<void> | void>): Promise<void> {
  let first: unknown
  let failed = false
  for (const step of steps) {
    try {
      await step()
    } catch (err) {
      if (!failed) { first = err; failed = true }
    }
  }
  if (failed) throw first
}
