/**
 * The seam between the file system's change notifications and the watcher.
 *
 * A source delivers hints only: "something at or below this path may have
 * changed" (a path relative to FILES_PATH with `/` separators; `''` is the
 * whole library). The watcher re-stats what a hint names and feeds the one
 * differential state machine, so a source may coalesce, duplicate, reorder or
 * mislabel hints without harm, and a dropped hint costs only latency: the
 * periodic rescan finds what it missed.
 *
 * Implementations: `createFsEventSource` (the OS, one inotify watch per
 * directory) and `createScriptedEventSource` (hints a test script emits).
 * test/watcher/event-source.contract.test.ts runs one suite against both.
 */
export type HintHandler = (relPath: string) => void

export interface EventSourceStatus {
  kind: string
  /** Directories being watched (0 for sources that do not watch directories). */
  watching: number
  /** Why live events are incomplete (e.g. the inotify watch limit), when they are. */
  degraded?: string
}

export interface FileEventSource {
  /** Starts delivering hints; resolves once changes made from now on will be hinted. Idempotent. */
  start: (onHint: HintHandler) => Promise<void>
  /** Stops delivering hints. Idempotent; fine on a never-started source. */
  stop: () => Promise<void>
  status: () => EventSourceStatus
}

/** True when any segment starts with `.`: hidden files and everything inside hidden folders are not part of the library. */
export function isHiddenPath (rel: string): boolean {
  if (rel === '') return false
  if (rel.startsWith('.')) return true
  return rel.includes('/.')
}

export function joinRel (dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`
}

/** `rel` is `prefix` or lies below it (`''` contains everything). */
export function isUnder (rel: string, prefix: string): boolean {
  return prefix === '' || rel === prefix || rel.startsWith(prefix + '/')
}
