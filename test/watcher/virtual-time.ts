/**
 * The watcher in virtual time: its clock is the shared virtual scheduler
 * (test/helpers/manual-clock.ts), so a settle window of minutes passes in a
 * few real milliseconds and nothing it schedules fires while the test looks;
 * between two timers the test waits for the real I/O they started
 * (settle-io.ts), never for wall time. The wall clock stays the real one:
 * the disk writes file mtimes with it, and a file is quiet by comparing the
 * two. Stats and hashes are the real file system's; `holdHash` keeps one
 * path's hash from finishing until released (a long hash queue, on demand).
 */
import { AbortedError } from '../../src/common/index.js'
import { systemFileReads, type FileReads } from '../../src/watcher/index.js'
import { ManualClock } from '../helpers/manual-clock.js'
import { settleIo } from '../helpers/settle-io.js'

export interface HeldReads extends FileReads {
  /** The next hash of a file whose path ends with `suffix` waits until the returned release is called (or the hash is aborted). */
  holdHash: (suffix: string) => () => void
  /** Hashes started so far, by absolute path. */
  readonly hashed: string[]
}

export interface VirtualTime {
  clock: ManualClock
  reads: HeldReads
  /** Moves the clock on by `ms` (timers run at their time, I/O settles after each); stops early once `until` holds, returning whether it did. */
  advance: (ms: number, until?: () => boolean) => Promise<boolean>
}

export function virtualTime (): VirtualTime {
  const clock = new ManualClock(Date.now(), { wall: () => Date.now() })
  return {
    clock,
    reads: heldReads(),
    advance: async (ms, until) => await clock.advance(ms, { until, settle: settleIo })
  }
}

function heldReads (): HeldReads {
  const holds = new Map<string, Promise<void>>()
  const hashed: string[] = []
  return {
    stat: systemFileReads.stat,
    async hash (abs, opts) {
      hashed.push(abs)
      for (const [suffix, gate] of holds) {
        if (!abs.endsWith(suffix)) continue
        holds.delete(suffix)
        // As a real hash does: stopping the watcher aborts it.
        await new Promise<void>((resolve, reject) => {
          if (opts.signal.aborted) { reject(new AbortedError('hash aborted')); return }
          opts.signal.addEventListener('abort', () => { reject(new AbortedError('hash aborted')) }, { once: true })
          void gate.then(resolve)
        })
        break
      }
      return await systemFileReads.hash(abs, opts)
    },
    get hashed () { return hashed },
    holdHash (suffix) {
      let release!: () => void
      holds.set(suffix, new Promise<void>(resolve => { release = resolve }))
      return () => { release() }
    }
  }
}
