import { InvalidInputError, MetaCoreError } from '../common/index.js'

/**
 * A path that cannot be registered as given: absolute, with a `..` segment,
 * not under `plugin/`, or naming a directory. The HTTP layer answers 400.
 */
export class InvalidPathError extends InvalidInputError {
  readonly path: string
  constructor (path: string, reason: string) {
    super(`invalid path ${JSON.stringify(path.slice(0, 200))}: ${reason}`, { code: 'invalid_path' })
    this.path = path
  }
}

/** Nothing exists at the path given. The HTTP layer answers 404. */
export class FileNotFoundError extends MetaCoreError {
  readonly path: string
  constructor (path: string, options?: { cause?: unknown }) {
    super('not_found', `no file at ${JSON.stringify(path.slice(0, 200))}`, options)
    this.path = path
  }
}

/**
 * FILES_PATH itself cannot be listed (missing, unmounted, no permission). A
 * scan stops rather than treat every known file as deleted: an unmounted
 * volume must not delete the library's records.
 */
export class FilesPathUnavailableError extends MetaCoreError {
  constructor (filesPath: string, options?: { cause?: unknown }) {
    super('files_path_unavailable', `cannot list the library folder ${JSON.stringify(filesPath)}`, options)
  }
}
