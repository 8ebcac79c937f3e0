/**
 * The two file-system reads the watcher's state machine takes decisions on:
 * a file's stat and a file's hash. The system's are the real file system's;
 * a test may wrap them (hold one file's hash back, count the hashes). Time
 * is not here: the watcher takes the one `Clock` (common/clock.ts) beside
 * them. The walk of a folder and the OS event source stay outside: they
 * only produce observations, which the state machine re-stats through
 * `stat`.
 */
import { midhash256, type FileDigest } from '../cid/index.js'
import { statFile, type FileStat } from './tree-walk.js'

export interface FileReads {
  /** The library file at `rel` below `root` (symlink rules of the walk), or null when none is there. */
  stat: (root: string, rel: string) => Promise<FileStat | null>
  /** The file's midhash256 digest, reading `size` bytes' sample; never follows a symlink itself; rejects with AbortedError once `signal` fires. */
  hash: (abs: string, opts: { size: number, signal: AbortSignal }) => Promise<FileDigest>
}

export const systemFileReads: FileReads = {
  stat: statFile,
  hash: async (abs, opts) => await midhash256(abs, { size: opts.size, signal: opts.signal, noFollow: true })
}
