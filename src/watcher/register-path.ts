import path from 'node:path'
import { InvalidPathError } from './errors.js'

/** The folder (relative to FILES_PATH) that `POST /api/files/register` may name files in. */
export const REGISTER_FOLDER = 'plugin'

/**
 * Checks a path given to registerFile and returns it normalised (relative to
 * FILES_PATH, `/` separators): a relative path with no `..` segment that
 * names something below `plugin/`. `..` is refused even where it would
 * normalise back inside, as the original did: a client sending it is wrong.
 * Throws InvalidPathError (400).
 */
export function checkRegisterPath (input: unknown): string {
  // A body that is not a string is echoed in the error as String() renders it ('[object Object]' for an object).
  // eslint-disable-next-line @typescript-eslint/no-base-to-string
  if (typeof input !== 'string' || input.length === 0) throw new InvalidPathError(String(input ?? ''), 'a path is required')
  if (input.includes('\u0000')) throw new InvalidPathError(input, 'contains a NUL character')
  if (input.startsWith('/')) throw new InvalidPathError(input, 'must be relative to the library folder')
  if (input.split('/').includes('..')) throw new InvalidPathError(input, 'must not contain ".."')
  if (input.endsWith('/')) throw new InvalidPathError(input, 'names a directory')
  const norm = path.posix.normalize(input)
  if (!norm.startsWith(REGISTER_FOLDER + '/') || norm.length === REGISTER_FOLDER.length + 1) {
    throw new InvalidPathError(input, `must name a file under ${REGISTER_FOLDER}/`)
  }
  return norm
}
