import type { FileStat } from './tree-walk.js'

/**
 * Where a candidate is on its way from "seen with a size/mtime the state
 * does not hold" to recorded:
 * - `settling`: its (size, mtime) has held still since `since` (monotonic
 *   ms); `checking` while the re-stat at the end of its window is under way;
 * - `queued`: settled, waiting for a hash slot. `quiet`: its mtime was
 *   already older than the settle window when it was first seen, and it has
 *   not changed since, so no re-stat confirms the hash;
 * - `hashing`: being read; `dirty` once an observation says it changed (or
 *   vanished) meanwhile;
 * - `writing`: its step is at the lifecycle writer; `dirty` as above: it is
 *   looked at again once written;
 * - `dropped`: no longer the tracker's candidate for its path (vanished,
 *   recorded, replaced, unreadable). Final.
 */
export type CandidatePhase =
  | { kind: 'settling', since: number, checking: boolean }
  | { kind: 'queued', quiet: boolean }
  | { kind: 'hashing', quiet: boolean, dirty: boolean }
  | { kind: 'writing', dirty: boolean }
  | { kind: 'dropped' }

/** What happens to a candidate (the tracker's observations and the outcomes of its reads and writes). */
export type CandidateEvent =
  /**
   * Its (size, mtime) changed, or a read found it shorter than its stat: it
   * settles again from `now`. A settle re-stat already under way stays so
   * (what it finds is judged against the new size and mtime). While its
   * step is being written, a change only marks it (`touched`).
   */
  | { type: 'changed', now: number }
  /** Its window passed: the settle re-stat starts. */
  | { type: 'check' }
  /** The settle re-stat is over (what it found follows as an event of its own). */
  | { type: 'checked' }
  /** The settle re-stat found it as it was: it waits for a hash slot. */
  | { type: 'settled' }
  /** Its turn in the hash queue came. */
  | { type: 'turn' }
  /** Observed to change, or to vanish, while it is read or written. */
  | { type: 'touched' }
  /** Read, and still what was read: its step goes to the writer. */
  | { type: 'hashed' }
  /** Vanished, recorded, replaced or unreadable. */
  | { type: 'drop' }

const DROPPED: CandidatePhase = { kind: 'dropped' }

/** A new candidate's phase: queued at once when `quiet` (its mtime is older than the window), else settling from `now`. */
export function firstPhase (quiet: boolean, now: number): CandidatePhase {
  return quiet ? { kind: 'queued', quiet: true } : { kind: 'settling', since: now, checking: false }
}

/** The candidate's phase after `e`; an event that does not apply to a phase leaves it as it is. */
export function nextPhase (p: CandidatePhase, e: CandidateEvent): CandidatePhase {
  if (p.kind === 'dropped') return p
  switch (e.type) {
    case 'changed':
      return p.kind === 'writing' ? p : { kind: 'settling', since: e.now, checking: p.kind === 'settling' && p.checking }
    case 'check':
      return p.kind === 'settling' && !p.checking ? { ...p, checking: true } : p
    case 'checked':
      return p.kind === 'settling' ? { ...p, checking: false } : p
    case 'settled':
      return p.kind === 'settling' ? { kind: 'queued', quiet: false } : p
    case 'turn':
      return p.kind === 'queued' ? { kind: 'hashing', quiet: p.quiet, dirty: false } : p
    case 'touched':
      return p.kind === 'hashing' || p.kind === 'writing' ? { ...p, dirty: true } : p
    case 'hashed':
      return p.kind === 'hashing' ? { kind: 'writing', dirty: p.dirty } : p
    case 'drop':
      return DROPPED
  }
}

/** A file seen with a size/mtime the state does not hold: on its way to being hashed and recorded. */
export class Candidate {
  size: number
  mtimeNs: bigint
  /** The real path when the file is a symlink to a library file: hashing reads it, never following a link itself. */
  real: string | undefined
  phase: CandidatePhase
  tag: number | undefined = undefined

  constructor (readonly rel: string, st: FileStat, phase: CandidatePhase) {
    this.size = st.size
    this.mtimeNs = st.mtimeNs
    this.real = st.real
    this.phase = phase
  }

  /** Moves it on (nextPhase). */
  on (e: CandidateEvent): void {
    this.phase = nextPhase(this.phase, e)
  }

  /** Waiting in the hash queue for its turn. */
  get ready (): boolean {
    return this.phase.kind === 'queued'
  }

  /** Being hashed or written: an observation marks it dirty instead of changing it. */
  get busy (): boolean {
    return this.phase.kind === 'hashing' || this.phase.kind === 'writing'
  }

  get dropped (): boolean {
    return this.phase.kind === 'dropped'
  }

  /** Changed (or vanished) while hashed or written: to be looked at again once written. */
  get dirty (): boolean {
    return (this.phase.kind === 'hashing' || this.phase.kind === 'writing') && this.phase.dirty
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
 * given (the clock's); the tracker re-stats what is `ripe` and moves it on.
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

  /** `c` settles (again) from `now` (monotonic); if it was queued, the hash queue skips it. */
  start (c: Candidate, now: number): void {
    c.on({ type: 'changed', now })
    this.settling.add(c)
  }

  /** Settling files whose window has passed at `now`, not already being re-stat'ed. */
  ripe (now: number): Candidate[] {
    const out: Candidate[] = []
    for (const c of this.settling) {
      if (c.phase.kind === 'settling' && !c.phase.checking && now - c.phase.since >= this.settleMs) out.push(c)
    }
    return out
  }

  /** `c` is settled or dropped: no longer looked at. */
  delete (c: Candidate): void {
    this.settling.delete(c)
  }

  clear (): void {
    this.settling.clear()
  }
}
