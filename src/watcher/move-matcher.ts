import type { FileEntry } from './file-state.js'
import type { Candidate } from './settle-policy.js'

/** A known file not found: written as `gone` once the settle window passes without its bytes turning up elsewhere. */
export interface PendingDelete {
  rel: string
  cid: string
  size: number
  /** Monotonic ms from which it may be written as gone. */
  due: number
  submitted: boolean
  /** Seen again while its removal was being written: look again when done. */
  dirty: boolean
  tag: number | undefined
}

/**
 * Matches a vanished file with the same bytes turning up at another path,
 * so that a move, or a copy followed by the removal of the first file,
 * keeps the record (one `rename`) rather than deleting it and minting a new
 * one without the fields people gave it.
 *
 * A vanished file waits as a pending delete for the settle window; a new
 * path whose hash names the same content claims it (`claim`). The window
 * alone cannot decide: a new path is hashed only once it has settled and had
 * its turn in the hash queue, which, after a restart over a large library,
 * can be long after the vanished file's window ended. So a pending delete
 * also waits while any unresolved candidate has its size: bytes that are the
 * same have the same size (a move keeps the mtime too, a copy does not), and
 * sizes of media files are nearly unique, so the wait is for the one file
 * that may be its copy. Candidates are indexed here by size (`track` /
 * `untrack`) for that reason. A settling candidate holds a delete only if it
 * has been still since before the delete fell due (it is then ripe within a
 * window): a same-size file rewritten for ever (a disk image in use) never
 * holds one back for ever, while a queued or hashing one holds it until the
 * queue reaches it, as the queue always does. A path known only from the
 * records (no state row: after a crash) has no size, and waits for every
 * candidate.
 */
export class MoveMatcher {
  private readonly pending = new Map<string, PendingDelete>()
  private readonly byCid = new Map<string, Set<string>>()
  /** Unresolved candidates per size. */
  private readonly sizes = new Map<number, Set<Candidate>>()

  get size (): number {
    return this.pending.size
  }

  get (rel: string): PendingDelete | undefined {
    return this.pending.get(rel)
  }

  /** Some pending delete is waiting for its window (the tracker's tick must keep running). */
  get waiting (): boolean {
    for (const pd of this.pending.values()) if (!pd.submitted) return true
    return false
  }

  add (rel: string, e: FileEntry, due: number): PendingDelete {
    const pd: PendingDelete = { rel, cid: e.cid, size: e.size, due, submitted: false, dirty: false, tag: undefined }
    this.pending.set(rel, pd)
    let set = this.byCid.get(e.cid)
    if (set === undefined) { set = new Set(); this.byCid.set(e.cid, set) }
    set.add(rel)
    return pd
  }

  /** It turned up again, or was claimed by a move. */
  remove (pd: PendingDelete): void {
    if (this.pending.get(pd.rel) === pd) this.pending.delete(pd.rel)
    this.unindex(pd)
  }

  /** Its removal is being written: no longer claimable, still pending until written. */
  submit (pd: PendingDelete): void {
    pd.submitted = true
    this.unindex(pd)
  }

  /** Takes an unsubmitted pending delete of this content, for a move; returns its path. */
  claim (cid: string): PendingDelete | undefined {
    const rels = this.byCid.get(cid)
    if (rels === undefined) return undefined
    for (const rel of rels) {
      const pd = this.pending.get(rel)
      if (pd === undefined || pd.submitted) continue
      this.remove(pd)
      return pd
    }
    return undefined
  }

  /** Pending deletes whose window is over and that no unresolved candidate may be the copy of. */
  due (now: number): PendingDelete[] {
    const out: PendingDelete[] = []
    for (const pd of this.pending.values()) {
      if (pd.submitted || now < pd.due) continue
      if (this.held(pd)) continue
      out.push(pd)
    }
    return out
  }

  /** `c` is unresolved with its current size. */
  track (c: Candidate): void {
    let set = this.sizes.get(c.size)
    if (set === undefined) { set = new Set(); this.sizes.set(c.size, set) }
    set.add(c)
  }

  /** `c` is resolved, or about to change size (call before the change). */
  untrack (c: Candidate): void {
    const set = this.sizes.get(c.size)
    if (set === undefined) return
    set.delete(c)
    if (set.size === 0) this.sizes.delete(c.size)
  }

  private held (pd: PendingDelete): boolean {
    // An unconfirmed entry (known from the records only) has no size: any candidate may be its copy.
    const sets = pd.size < 0 ? [...this.sizes.values()] : [this.sizes.get(pd.size)]
    for (const set of sets) {
      if (set === undefined) continue
      for (const c of set) if (c.phase.kind !== 'settling' || c.phase.since <= pd.due) return true
    }
    return false
  }

  clear (): void {
    this.pending.clear()
    this.byCid.clear()
    this.sizes.clear()
  }

  private unindex (pd: PendingDelete): void {
    const set = this.byCid.get(pd.cid)
    if (set === undefined) return
    set.delete(pd.rel)
    if (set.size === 0) this.byCid.delete(pd.cid)
  }
}
