/**
 * Turning a path into a file under FILES_PATH, never outside it.
 *
 * Stored paths look like `/files/<relative>` whatever FILES_PATH is on this
 * node; they are data (a peer or a client may have written them), so they
 * are checked like client input: only the `/files/` form is accepted, the
 * relative part may not climb (`..`), and the real path (symlinks resolved)
 * must lie inside the real FILES_PATH. The file is then opened with
 * O_NOFOLLOW (and O_NONBLOCK) and checked to be a regular file on the open
 * descriptor, so a symlink or FIFO swapped in after the check is refused
 * rather than followed or blocked on.
 */
import { realpath, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { InvalidInputError, NotAFileError, openRegularFile } from '../../common/index.js'

/** The prefix every stored file path carries (the library volume as the original mounted it). */
export const FILES_MOUNT = '/files/'

/** Longest relative path accepted from a client (PATH_MAX on Linux). */
const MAX_PATH = 4096

/** The relative part of a stored `/files/<relative>` path, or undefined for any other shape. */
export function relativeOfStored (stored: string): string | undefined {
  if (!stored.startsWith(FILES_MOUNT)) return undefined
  const rel = stored.slice(FILES_MOUNT.length)
  return isSafeRelative(rel) ? rel : undefined
}

function isSafeRelative (rel: string): boolean {
  if (rel.length === 0 || rel.length > MAX_PATH || rel.includes('\u0000') || rel.includes('\\')) return false
  if (rel.startsWith('/')) return false
  return rel.split('/').every(seg => seg !== '..')
}

/** Checks a client-supplied path relative to FILES_PATH; throws InvalidInputError (`invalid_path`) saying why not. */
export function checkClientRelative (rel: unknown): string {
  if (typeof rel !== 'string' || rel.length === 0) throw new InvalidInputError('path must be a non-empty string', { code: 'invalid_path' })
  if (rel.length > MAX_PATH) throw new InvalidInputError('path is too long', { code: 'invalid_path' })
  if (rel.includes('\u0000')) throw new InvalidInputError('path contains a NUL character', { code: 'invalid_path' })
  if (rel.startsWith('/') || rel.includes('\\')) throw new InvalidInputError('path must be relative to FILES_PATH, with / separators', { code: 'invalid_path' })
  if (rel.split('/').some(seg => seg === '..')) throw new InvalidInputError('path may not contain ".." segments', { code: 'invalid_path' })
  return path.posix.normalize(rel)
}

type Resolved =
  | { kind: 'ok', real: string, rel: string }
  | { kind: 'missing' }
  | { kind: 'outside' }

/**
 * The real path of `rel` under `filesRoot`, or why there is none. Errors
 * other than "not there" (EACCES, EIO) propagate.
 */
export async function resolveInside (filesRoot: string, rel: string): Promise<Resolved> {
  let root: string
  try {
    root = await realpath(filesRoot)
  } catch (err) {
    if (isMissing(err)) return { kind: 'missing' }
    throw err
  }
  let real: string
  try {
    real = await realpath(path.join(root, rel))
  } catch (err) {
    if (isMissing(err)) return { kind: 'missing' }
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') return { kind: 'outside' }
    throw err
  }
  if (!real.startsWith(root + path.sep)) return { kind: 'outside' }
  return { kind: 'ok', real, rel: path.relative(root, real).split(path.sep).join('/') }
}

export interface OpenedFile {
  fh: FileHandle
  size: number
  mtimeMs: number
}

/**
 * Opens a resolved real path read-only without following a final symlink;
 * undefined when it is not a regular file (any more). A FIFO, socket or
 * device is refused before it is opened, and the descriptor is checked again
 * (see openRegularFile in common), so serving never blocks on one.
 */
export async function openServableFile (real: string): Promise<OpenedFile | undefined> {
  let opened
  try {
    opened = await openRegularFile(real, { noFollow: true })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (err instanceof NotAFileError || isMissing(err) || code === 'ELOOP' || code === 'EISDIR') return undefined
    throw err
  }
  return { fh: opened.fh, size: opened.st.size, mtimeMs: opened.st.mtimeMs }
}

function isMissing (err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}
