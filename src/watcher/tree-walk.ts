import { isUtf8 } from 'node:buffer'
import fs from 'node:fs'
import path from 'node:path'
import { AbortedError, inspectLibraryPath, type LibraryEntry } from '../common/index.js'
import { joinRel } from './file-event-source.js'

export interface FileStat {
  size: number
  /** Modification time in ns since the epoch (from a bigint stat: ms precision is not enough to see a rewrite within the same ms). */
  mtimeNs: bigint
  /** The file's real path when it was reached through a symlink (inside the library): what is read, never the link itself. */
  real?: string
}

/**
 * Why an entry the walk found is not a library file, when that deserves a
 * log line (a hidden file or a vanished one does not):
 * - `special`: a FIFO, socket or device (never opened: a FIFO would block);
 * - `outside`: a symlink whose target lies outside the library;
 * - `unnamable`: a name that is not valid UTF-8, which no API answer, event
 *   or stored path could spell faithfully.
 */
export type SkipReason = 'special' | 'outside' | 'unnamable'

export interface SkippedEntry {
  /** The path as far as it can be spelled: `\xNN` for each byte of a name that is not UTF-8. */
  rel: string
  reason: SkipReason
  /** What it is (`fifo`, the link's target, …). */
  detail: string
}

export interface WalkOptions {
  /** Absolute real path of the library root (symlinks resolved): links are judged against it. */
  root: string
  /** Folder to walk, relative to the root (`''`: the whole library). */
  under?: string
  signal?: AbortSignal
  /** Every regular, non-hidden file found, with its stat. */
  onFile: (rel: string, st: FileStat) => void
  /** A folder or file below the start folder that could not be read (logged by the caller, then skipped). */
  onError?: (rel: string, err: NodeJS.ErrnoException) => void
  /** An entry that is not a library file, for a reason worth telling (logged by the caller, then skipped). */
  onSkip?: (entry: SkippedEntry) => void
}

export interface WalkResult {
  files: number
  dirs: number
  /** Entries that could not be read: the caller must not conclude files below them were deleted. */
  failed: string[]
  /** Entries skipped, by reason. */
  skipped: Record<SkipReason, number>
}

/** Files inspected at once within one folder: enough to keep the libuv pool busy without flooding it. */
const STAT_BATCH = 32

/** A name's bytes as text: printable ASCII kept, every other byte as `\xNN`. */
export function spellBytes (name: Buffer): string {
  let out = ''
  for (const b of name) out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`
  return out
}

/**
 * Walks a folder depth-first and reports each library file with its size and
 * mtime (see inspectLibraryPath in common for what a library file is).
 * Hidden entries (name starting with `.`) and everything below a hidden
 * folder are skipped silently; special files, symlinks leading outside the
 * library and names that are not UTF-8 (with everything below such a
 * folder) are skipped and reported through `onSkip`. A symlink to a file
 * inside the library counts as that file; a symlink to a folder is not
 * followed (loops, and the same files twice). Throws only when the start
 * folder itself cannot be listed.
 */
export async function walkTree (opts: WalkOptions): Promise<WalkResult> {
  const result: WalkResult = { files: 0, dirs: 0, failed: [], skipped: { special: 0, outside: 0, unnamable: 0 } }
  const skip = (entry: SkippedEntry): void => {
    result.skipped[entry.reason]++
    opts.onSkip?.(entry)
  }
  const start = opts.under ?? ''
  const stack = [start]
  while (stack.length > 0) {
    if (opts.signal?.aborted === true) throw new AbortedError('walk aborted')
    const dir = stack.pop()!
    let entries: Array<fs.Dirent<Buffer>>
    try {
      // Names as bytes: a name that is not UTF-8 would otherwise be decoded with U+FFFD and name a file that does not exist.
      entries = await fs.promises.readdir(path.join(opts.root, dir), { withFileTypes: true, encoding: 'buffer' })
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
      if (e.name[0] === 0x2e) continue // '.': hidden
      if (!isUtf8(e.name)) {
        skip({ rel: joinRel(dir, spellBytes(e.name)), reason: 'unnamable', detail: e.isDirectory() ? 'folder' : 'file' })
        continue
      }
      const rel = joinRel(dir, e.name.toString('utf8'))
      if (e.isDirectory()) stack.push(rel)
      else if (e.isFile() || e.isSymbolicLink()) files.push(rel)
      else if (e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice()) {
        skip({ rel, reason: 'special', detail: e.isFIFO() ? 'fifo' : e.isSocket() ? 'socket' : 'device' })
      }
    }
    for (let i = 0; i < files.length; i += STAT_BATCH) {
      const chunk = files.slice(i, i + STAT_BATCH)
      const found = await Promise.all(chunk.map(async rel => await inspectOrError(opts.root, rel)))
      for (let j = 0; j < chunk.length; j++) {
        const f = found[j]
        if (f instanceof Error) {
          if (f.code !== 'ENOENT') {
            result.failed.push(chunk[j])
            opts.onError?.(chunk[j], f)
          }
          continue
        }
        if (f.kind === 'special') skip({ rel: chunk[j], reason: 'special', detail: f.what })
        else if (f.kind === 'outside') skip({ rel: chunk[j], reason: 'outside', detail: f.target })
        if (f.kind !== 'file') continue
        result.files++
        opts.onFile(chunk[j], toFileStat(f))
      }
    }
  }
  return result
}

function toFileStat (e: Extract<LibraryEntry, { kind: 'file' }>): FileStat {
  return e.viaLink ? { size: e.size, mtimeNs: e.mtimeNs, real: e.real } : { size: e.size, mtimeNs: e.mtimeNs }
}

async function inspectOrError (root: string, rel: string): Promise<LibraryEntry | NodeJS.ErrnoException> {
  try {
    return await inspectLibraryPath(root, rel, { parentIsReal: true })
  } catch (err) {
    return err as NodeJS.ErrnoException
  }
}

/** What a path names now; errors other than "nothing there" (EACCES, EIO) are thrown. */
export type PathKind =
  | { kind: 'file', st: FileStat }
  | { kind: 'dir' }
  | { kind: 'none', skipped?: SkippedEntry }

/**
 * One path, by the walk's rules (`root` is the real library root). A FIFO,
 * a socket or a symlink leading outside is, as far as the library goes,
 * nothing: `none`, with `skipped` saying why.
 */
export async function statPath (root: string, rel: string): Promise<PathKind> {
  const e = await inspectLibraryPath(root, rel)
  switch (e.kind) {
    case 'file': return { kind: 'file', st: toFileStat(e) }
    case 'dir': return { kind: 'dir' }
    case 'special': return { kind: 'none', skipped: { rel, reason: 'special', detail: e.what } }
    case 'outside': return { kind: 'none', skipped: { rel, reason: 'outside', detail: e.target } }
    default: return { kind: 'none' }
  }
}

/** Stat of one library file: null when no library file is there. */
export async function statFile (root: string, rel: string): Promise<FileStat | null> {
  const p = await statPath(root, rel)
  return p.kind === 'file' ? p.st : null
}
