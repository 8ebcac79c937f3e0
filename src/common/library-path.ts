/**
 * What a path under the library folder (FILES_PATH) names, decided from
 * lstat/realpath without opening anything. The watcher, the register route
 * and file serving all go through this one rule, so they agree on what a
 * library file is:
 *
 * - a regular file, reached through real folders (the walk never follows a
 *   folder symlink, so a path through one is not a library path);
 * - a symlink whose target, with every link resolved, is a regular file
 *   inside the real library root: it is that file;
 * - anything else is not read: a symlink leading outside the library
 *   (`outside`), a FIFO, socket or device (`special`: opening a FIFO blocks
 *   a thread-pool thread until a writer appears, so it must never be
 *   opened), a folder, or nothing.
 */
import fs, { type BigIntStats } from 'node:fs'
import { lstat, open, realpath, stat, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { InvalidInputError } from './errors.js'

/** The path exists but is not a regular file (a directory, a FIFO, a socket, a device). HTTP 400 `not_a_file`. */
export class NotAFileError extends InvalidInputError {
  constructor (message = 'not a regular file', options?: { cause?: unknown }) {
    super(message, { ...options, code: 'not_a_file' })
  }
}

type SpecialKind = 'fifo' | 'socket' | 'character device' | 'block device' | 'unknown'

export type LibraryEntry =
  | { kind: 'file', real: string, size: number, mtimeNs: bigint, viaLink: boolean }
  | { kind: 'dir' }
  | { kind: 'none' }
  | { kind: 'special', what: SpecialKind }
  | { kind: 'outside', target: string }

interface InspectOptions {
  /**
   * The caller listed the parent folder itself (a walk that only descends
   * into real folders): skips resolving it. Otherwise the parent must
   * resolve to itself, i.e. no folder on the way is a symlink.
   */
  parentIsReal?: boolean
}

/** True when `real` lies strictly inside `realRoot` (both already resolved). */
function isInside (realRoot: string, real: string): boolean {
  return real.startsWith(realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep)
}

function specialKind (st: { isFIFO: () => boolean, isSocket: () => boolean, isCharacterDevice: () => boolean, isBlockDevice: () => boolean }): SpecialKind {
  if (st.isFIFO()) return 'fifo'
  if (st.isSocket()) return 'socket'
  if (st.isCharacterDevice()) return 'character device'
  if (st.isBlockDevice()) return 'block device'
  return 'unknown'
}

/** Nothing there. (ELOOP, a link loop, is an error the caller reports, not an absence.) */
function isGone (err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

/**
 * Classifies `rel` (relative, `/` separators) under `realRoot` (the
 * realpath of the library folder). Errors other than "nothing there"
 * (EACCES, EIO, ELOOP) are thrown.
 */
export async function inspectLibraryPath (realRoot: string, rel: string, opts: InspectOptions = {}): Promise<LibraryEntry> {
  const abs = path.join(realRoot, rel)
  let lst: BigIntStats
  try {
    lst = await lstat(abs, { bigint: true })
    if (opts.parentIsReal !== true) {
      const parent = path.dirname(abs)
      if (await realpath(parent) !== parent) return { kind: 'none' }
    }
  } catch (err) {
    if (isGone(err)) return { kind: 'none' }
    throw err
  }
  if (lst.isFile()) return { kind: 'file', real: abs, size: Number(lst.size), mtimeNs: lst.mtimeNs, viaLink: false }
  if (lst.isDirectory()) return { kind: 'dir' }
  if (!lst.isSymbolicLink()) return { kind: 'special', what: specialKind(lst) }
  let real: string
  let st: BigIntStats
  try {
    real = await realpath(abs)
    if (!isInside(realRoot, real)) return { kind: 'outside', target: real }
    st = await stat(real, { bigint: true })
  } catch (err) {
    if (isGone(err)) return { kind: 'none' } // a dangling link
    throw err
  }
  if (st.isFile()) return { kind: 'file', real, size: Number(st.size), mtimeNs: st.mtimeNs, viaLink: true }
  // A link to a folder is not followed (the walk's rule: no loops, no files twice).
  if (st.isDirectory()) return { kind: 'none' }
  return { kind: 'special', what: specialKind(st) }
}

function refusal (st: fs.Stats): NotAFileError {
  return new NotAFileError(st.isDirectory() ? 'a directory is not a regular file' : `a ${specialKind(st)} is not a regular file`)
}

/**
 * Opens a file for reading, refusing anything but a regular file: checked
 * by stat before opening (a FIFO must never be opened: the open blocks a
 * thread-pool thread until some writer appears, and four such opens stall
 * every file operation of the process), then opened non-blocking and
 * checked again on the descriptor, so a FIFO or device swapped in between is
 * refused rather than read. With `noFollow` a symlink is refused too (the
 * caller resolved the path and wants exactly that file). Returns the handle
 * and the stat of the descriptor; the caller closes it.
 */
export async function openRegularFile (file: string, opts: { noFollow?: boolean } = {}): Promise<{ fh: FileHandle, st: fs.Stats }> {
  const before = await (opts.noFollow === true ? lstat(file) : stat(file))
  if (!before.isFile()) throw before.isSymbolicLink() ? new NotAFileError('a symlink is not followed here') : refusal(before)
  const flags = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | (opts.noFollow === true ? fs.constants.O_NOFOLLOW : 0)
  const fh = await open(file, flags)
  try {
    const st = await fh.stat()
    if (!st.isFile()) throw refusal(st)
    return { fh, st }
  } catch (err) {
    await fh.close()
    throw err
  }
}
