import type { FileStat } from './tree-walk.js'

type Phase = 'settling' | 'queued' | 'hashing' | 'writing'

/** A file seen with a size/mtime the state does not hold: on its way to being hashed and recorded. */
export class Candidate {
  size: number
  mtimeNs: bigint
  /** The real path when the file is a symlink to a library file: hashing reads it, never following a link itself. */
  real: string | undefined
  /** Monotonic ms since which (size, mtime) has not been seen to change. */
  stableSince = 0
  phase: Phase = 'settling'
  /**
   * Its mtime was already older than the settle window when first seen, and
   * it has not changed since: hashed without the confirming re-stat.
   */
  quiet = false
  /** A settle re-stat is in flight. */
  checking = false
  /** Changed again while hashing or writing: look again when done. */
  dirty = false
  /** No longer the tracker's candidate for its path (vanished, recorded, replaced). */
  dropped = false
  tag: number | undefined = undefined

  constructor (readonly rel: string, st: FileStat) {
    this.size = st.size
    this.mtimeNs = st.mtimeNs
    this.real = st.real
  }

  /** Waiting in the hash queue for its turn. */
  get ready (): boolean {
    return this.phase === 'queued' && !this.dropped
  }

  /** Being hashed or written: an observation marks it dirty instead of changing it. */
  get busy (): boolean {
    return this.phase === 'hashing' || this.phase === 'writing'
  }

  /** Whether `st` is what this candidate holds. */
  same (st: FileStat): boolean {
    return st.size === this.size && st.mtimeNs === this.mtimeNs
  }
}

/**
 * When a changed file may be hashed: once its (size, mtime) has held still
 * for `settleMs` (re-stat'ed at the end of the window; any change restarts
 * it), so a file still being copied is not recorded half written. A file
 * whose mtime is already older than the window cannot have been written
 * during it and is `quiet`: queued at once (the initial scan's files, a
 * moved file).
 *
 * The policy only keeps the settling set and answers with times it is
 * given (the runtime's clocks); the tracker re-stats what is `ripe` and
 * moves it on.
 */
export class SettlePolicy {
  /** How often the tracker looks at the settling files: a few times per window, so a settled file waits at most a quarter window more. */
  readonly tickMs: number
  private readonly settling = new Set<Candidate>()

  constructor (readonly settleMs: number) {
    this.tickMs = Math.min(500, Math.max(20, Math.floor(settleMs / 4)))
  }

  get size (): number {
    return this.settling.size
  }

  /** The file's mtime (wall clock) is older than the window at `wallNow`. */
  quiet (mtimeNs: bigint, wallNow: number): boolean {
    return wallNow - Number(mtimeNs / 1_000_000n) >= this.settleMs
  }

  /** (Re)starts the window of `c` at `now` (monotonic). */
  start (c: Candidate, now: number): void {
    c.stableSince = now
    c.phase = 'settling' // if it was queued, the hash queue skips it
    c.quiet = false
    this.settling.add(c)
  }

  /** Settling files whose window has passed at `now`, not already being re-stat'ed. */
  ripe (now: number): Candidate[] {
    const out: Candidate[] = []
    for (const c of this.settling) if (!c.checking && now - c.stableSince >= this.settleMs) out.push(c)
    return out
  }

  delete (c: Candidate): void {
    this.settling.delete(c)
  }

  clear (): void {
    this.settling.clear()
  }
}
