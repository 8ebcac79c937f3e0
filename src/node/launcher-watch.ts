/**
 * A node started through npm (`npx meta-core`, `npm start`) stops when the
 * npm process it was started by is stopped.
 *
 * npm runs a script or a bin as `sh -c '<command>'`, and forwards SIGTERM
 * and SIGINT only to that shell. /bin/sh is dash on Debian: it does not
 * exec the last command, dies of the signal and leaves the node re-parented
 * to PID 1, still serving. `npm start` avoids the shell with `exec` in the
 * script; `npx` cannot be told to. So a node whose environment says npm
 * started it (npm sets `npm_command`) watches its parent, and when the
 * parent is gone, stops as it would on SIGTERM. A node started any other
 * way (systemd, Docker, `nohup`) is never stopped by its parent's exit.
 */
import fs from 'node:fs'

/** How often the parent is looked at, in ms: a stop begins within this long of npm's exit. */
const PARENT_POLL_MS = 250

/** The parent pid as the kernel says it now (Node's `process.ppid` is read once at start). */
function currentParent (fallback: number): number | undefined {
  try {
    // /proc/self/stat: "pid (comm) state ppid …"; comm may contain spaces and parentheses, so split after the last ')'.
    const stat = fs.readFileSync('/proc/self/stat', 'utf8')
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    return Number.isInteger(ppid) ? ppid : undefined
  } catch {
    // No /proc (macOS): a parent that no longer exists answers ESRCH to signal 0.
    try {
      process.kill(fallback, 0)
      return fallback
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH' ? undefined : fallback
    }
  }
}

/**
 * Calls `onGone` once when the process that started this one exits, if npm
 * started it. Returns the function that stops watching.
 */
export function watchLauncher (env: Readonly<Record<string, string | undefined>>, onGone: () => void): () => void {
  if (env.npm_command === undefined || env.npm_command === '') return () => {}
  const parent = process.ppid
  const timer = setInterval(() => {
    if (currentParent(parent) === parent) return
    clearInterval(timer)
    onGone()
  }, PARENT_POLL_MS)
  // Never the reason the process stays up.
  timer.unref()
  return () => { clearInterval(timer) }
}
