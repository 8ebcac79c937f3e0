import fs from 'node:fs'
import path from 'node:path'
import { AbortedError } from '../common/index.js'
import { joinRel } from './file-event-source.js'

export interface FileStat {
  size: number
  /** Modification time in ns since the epoch (from a bigint stat: ms precision is not enough to see a rewrite within the same ms). */
  mtimeNs: bigint
}

export interface WalkOptions {
  /** Absolute library root. */
  root: string
  /** Folder to walk, relative to the root (`''`: the whole library). */
  under?: string
  signal?: AbortSignal
  /** Every regular, non-hidden file found, with its stat. */
  onFile: (rel: string, st: FileStat) => void
  /** A folder or file below the start folder that could not be read (logged by the caller, then skipped). */
  onError?: (rel: string, err: NodeJS.ErrnoException) => void
}

export interface WalkResult {
  files: number
  dirs: number
  /** Entries that could not be read: the caller must not conclude files below them were deleted. */
  failed: string[]
}

/** Files stat'ed at once within one folder: enough to keep the libuv pool busy without flooding it. */
const STAT_BATCH = 32

/**
 * Walks a folder depth-first and reports each regular file with its size and
 * mtime. Hidden entries (name starting with `.`) and everything below a
 * hidden folder are skipped. A symlink to a file counts as that file; a
 * symlink to a folder is not followed (loops, and the same files twice).
 * Throws only when the start folder itself cannot be listed.
 */
export async function walkTree (opts: WalkOptions): Promise<WalkResult> {
  const result: WalkResult = { files: 0, dirs: 0, failed: [] }
  const start = opts.under ?? ''
  const stack = [start]
  while (stack.length > 0) {
    if (opts.signal?.aborted === true) throw new AbortedError('walk aborted')
    const dir = stack.pop()!
    let entries: fs.Dirent[]
    try {
      entries = await fs.promises.readdir(path.join(opts.root, dir), { withFileTypes: true })
    } catch (err) {
      if (dir === start) throw err
      const code = (err as NodeJS.ErrnoException).code
      // Gone since its parent was listed: not a failure, its files are simply not there any more.
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        result.failed.push(dir)
        opts.onError?.(dir, err as NodeJS.ErrnoException)
      }
      continue
    }
    result.dirs++
    const files: string[] = []
    for (const e of entries) {
      if (e.name.startsWith('.')) continue
      const rel = joinRel(dir, e.name)
      if (e.isDirectory()) stack.push(rel)
      else if (e.isFile() || e.isSymbolicLink()) files.push(rel)
    }
    for (let i = 0; i < files.length; i += STAT_BATCH) {
      const chunk = files.slice(i, i + STAT_BATCH)
      const stats = await Promise.all(chunk.map(async rel => await statOrError(path.join(opts.root, rel))))
      for (let j = 0; j < chunk.length; j++) {
        const st = stats[j]
        if (st instanceof Error) {
          if (st.code !== 'ENOENT') {
            result.failed.push(chunk[j])
            opts.onError?.(chunk[j], st)
          }
          continue
        }
        if (!st.isFile()) continue
        result.files++
        opts.onFile(chunk[j], { size: Number(st.size), mtimeNs: st.mtimeNs })
      }
    }
  }
  return result
}

async function statOrError (p: string): Promise<fs.BigIntStats | NodeJS.ErrnoException> {
  try {
    return await fs.promises.stat(p, { bigint: true })
  } catch (err) {
    return err as NodeJS.ErrnoException
  }
}

/** What a path names now; errors other than "nothing there" (EACCES, EIO) are thrown. */
export type PathKind = { kind: 'file', st: FileStat } | { kind: 'dir' } | { kind: 'none' }

export async function statPath (abs: string): Promise<PathKind> {
  let st: fs.BigIntStats
  try {
    st = await fs.promises.stat(abs, { bigint: true })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'none' }
    throw err
  }
  if (st.isDirectory()) return { kind: 'dir' }
  // A socket or fifo is not a library file: as far as the library goes, nothing is there.
  if (!st.isFile()) return { kind: 'none' }
  return { kind: 'file', st: { size: Number(st.size), mtimeNs: st.mtimeNs } }
}

/** Stat of one file: null when no regular file is there. */
export async function statFile (abs: string): Promise<FileStat | null> {
  const p = await statPath(abs)
  return p.kind === 'file' ? p.st : null
}

