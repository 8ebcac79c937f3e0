import fs from 'node:fs'
import path from 'node:path'
import { silentLogger, type Logger } from '../common/index.js'
import { joinRel, isUnder, type EventSourceStatus, type FileEventSource, type HintHandler } from './file-event-source.js'

export interface FsEventSourceOptions {
  /** The library root (FILES_PATH). */
  root: string
  logger?: Logger
}

/**
 * Live hints from the OS: one non-recursive `fs.watch` per directory.
 *
 * Not `fs.watch(root, { recursive: true })`: on Linux, Node 20 implements it
 * with one inotify watch per file as well as per directory (20 201 watches
 * for 20 000 files in 200 folders, measured), so a large library runs into
 * `fs.inotify.max_user_watches` and its start-up walks every file. A
 * directory watch already reports its children's creation, change, removal
 * and renames, which is all a hint needs.
 *
 * inotify follows inodes, not names: after `mv a b` the watch armed for `a`
 * reports under the old name. So every `rename` event on a child re-checks
 * it: a directory is (re-)armed with its subtree and hinted again once armed
 * (files created before its watch existed are then found by the watcher's
 * walk of it); a vanished path has its watches closed.
 *
 * When the OS refuses a watch (ENOSPC: the inotify limit; EMFILE), the source
 * logs it once and reports itself degraded; the watcher's periodic rescan
 * still covers those folders.
 */
export function createFsEventSource (opts: FsEventSourceOptions): FileEventSource {
  return new FsEventSource(opts)
}

class FsEventSource implements FileEventSource {
  private readonly root: string
  private readonly log: Logger
  private readonly watchers = new Map<string, fs.FSWatcher>()
  private onHint: HintHandler | undefined
  private degraded: string | undefined

  constructor (opts: FsEventSourceOptions) {
    this.root = path.resolve(opts.root)
    this.log = opts.logger ?? silentLogger
  }

  async start (onHint: HintHandler): Promise<void> {
    if (this.onHint !== undefined) return
    this.onHint = onHint
    await this.armTree('')
  }

  async stop (): Promise<void> {
    this.onHint = undefined
    for (const w of this.watchers.values()) w.close()
    this.watchers.clear()
  }

  status (): EventSourceStatus {
    const s: EventSourceStatus = { kind: 'fs.watch', watching: this.watchers.size }
    if (this.degraded !== undefined) s.degraded = this.degraded
    return s
  }

  /** Watches `dir` and every non-hidden folder below it (arming before listing, so nothing created in between is missed). */
  private async armTree (dir: string): Promise<void> {
    const stack = [dir]
    while (stack.length > 0 && this.onHint !== undefined) {
      const d = stack.pop()!
      if (!this.arm(d)) continue
      let entries: fs.Dirent[]
      try {
        entries = await fs.promises.readdir(path.join(this.root, d), { withFileTypes: true })
      } catch {
        // Gone or unreadable since it was armed: its own watcher or its parent's reports what happened next.
        continue
      }
      for (const e of entries) {
        if (e.isDirectory() && !e.name.startsWith('.')) stack.push(joinRel(d, e.name))
      }
    }
  }

  private arm (dir: string): boolean {
    if (this.watchers.has(dir)) return true
    let w: fs.FSWatcher
    try {
      w = fs.watch(path.join(this.root, dir), { persistent: false }, (event, name) => { this.onEvent(dir, event, name) })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return false
      if (this.degraded === undefined) {
        this.degraded = `cannot watch some folders (${code ?? String(err)}): changes there are found by the periodic rescan`
        this.log.warn('live file events incomplete', { reason: this.degraded, dir })
      }
      return false
    }
    // A watcher error (its folder went away, the OS dropped the watch): forget it and let the watcher re-stat the folder.
    w.on('error', () => { this.disarmTree(dir); this.hint(dir) })
    this.watchers.set(dir, w)
    return true
  }

  private disarmTree (dir: string): void {
    for (const [d, w] of this.watchers) {
      if (isUnder(d, dir)) { w.close(); this.watchers.delete(d) }
    }
  }

  private onEvent (dir: string, event: string, name: string | Buffer | null): void {
    if (this.onHint === undefined) return
    if (name === null) { this.hint(dir); return }
    const n = typeof name === 'string' ? name : name.toString('utf8')
    if (n.startsWith('.')) return
    const rel = joinRel(dir, n)
    this.hint(rel)
    if (event === 'rename') void this.recheck(rel)
  }

  /** A child appeared, vanished or was renamed: re-arm it if it is a folder now, disarm it if it is gone. */
  private async recheck (rel: string): Promise<void> {
    let isDir: boolean
    try {
      isDir = (await fs.promises.stat(path.join(this.root, rel))).isDirectory()
    } catch {
      this.disarmTree(rel)
      return
    }
    if (!isDir || this.onHint === undefined) return
    // The same name may now be a different folder (mv): the old watches follow the old inode.
    this.disarmTree(rel)
    await this.armTree(rel)
    this.hint(rel)
  }

  private hint (rel: string): void {
    this.onHint?.(rel)
  }
}
