/**
 * What the watcher asks of the world: its clocks, its timers and the two
 * file-system reads its state machine takes decisions on (a file's stat, a
 * file's hash). The system runtime uses the process's clocks and the real
 * file system; a test gives a virtual clock (`schedule` then runs when the
 * test moves time on) so settle windows pass without sleeping, and may wrap
 * `stat` or `hash` to hold a file's hash back. The walk of a folder and the
 * OS event source stay outside: they only produce observations, which the
 * state machine re-stats through `stat`.
 *
 * Contract (as the mesh core's runtime):
 * - `schedule` never runs `fn` inside the call; `fn` runs at most once;
 *   cancelling after it ran (or twice) is a no-op. A timer keeps the
 *   process alive only when asked (`keepAlive`: a write on its way); the
 *   settle ticks, hint gathering and the rescan never do.
 * - `monotonic` never goes back; settle windows are measured on it, so a
 *   step of the wall clock neither holds a change back nor hurries it.
 * - `now` is the wall clock, the one file mtimes are written with (a file
 *   whose mtime is older than the settle window is quiet) and the one event
 *   timestamps use.
 */
import { midhash256, type FileDigest } from '../cid/index.js'
import { statFile, type FileStat } from './tree-walk.js'

export interface WatcherRuntime {
  /** Wall-clock ms since 1970. */
  now: () => number
  /** Monotonic ms (any origin). */
  monotonic: () => number
  /** Runs `fn` after `delayMs`; returns a cancel function. */
  schedule: (delayMs: number, fn: () => void, opts?: { keepAlive?: boolean }) => () => void
  /** The library file at `rel` below `root` (symlink rules of the walk), or null when none is there. */
  stat: (root: string, rel: string) => Promise<FileStat | null>
  /** The file's midhash256 digest, reading `size` bytes' sample; never follows a symlink itself. */
  hash: (abs: string, opts: { size: number, signal: AbortSignal }) => Promise<FileDigest>
}

export const systemRuntime: WatcherRuntime = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  schedule (delayMs, fn, opts) {
    const t = setTimeout(fn, delayMs)
    if (opts?.keepAlive !== true) t.unref()
    return () => { clearTimeout(t) }
  },
  stat: statFile,
  hash: async (abs, opts) => await midhash256(abs, { size: opts.size, signal: opts.signal, noFollow: true })
}
