/**
 * A candidate's phases (src/watcher/settle-policy.ts), case by case: where
 * each event takes each phase, which events leave a phase alone, and the
 * settle window's arithmetic (quiet files, ripe ones, the tick).
 */
import { describe, expect, it } from 'vitest'
import {
  Candidate, firstPhase, nextPhase, SettlePolicy, type CandidateEvent, type CandidatePhase
} from '../../src/watcher/settle-policy.js'
import type { FileStat } from '../../src/watcher/tree-walk.js'

const SETTLING: CandidatePhase = { kind: 'settling', since: 1_000, checking: false }
const CHECKING: CandidatePhase = { kind: 'settling', since: 1_000, checking: true }
const QUEUED: CandidatePhase = { kind: 'queued', quiet: false }
const QUIET: CandidatePhase = { kind: 'queued', quiet: true }
const HASHING: CandidatePhase = { kind: 'hashing', quiet: false, dirty: false }
const WRITING: CandidatePhase = { kind: 'writing', dirty: false }
const DROPPED: CandidatePhase = { kind: 'dropped' }
const ALL = [SETTLING, CHECKING, QUEUED, QUIET, HASHING, WRITING, DROPPED]

const EVENTS: CandidateEvent[] = [
  { type: 'changed', now: 5_000 }, { type: 'check' }, { type: 'checked' }, { type: 'settled' },
  { type: 'turn' }, { type: 'touched' }, { type: 'hashed' }, { type: 'drop' }
]

const st = (size: number, mtimeNs: bigint): FileStat => ({ size, mtimeNs })

describe('firstPhase', () => {
  it('queues a quiet file at once (no confirming re-stat), and lets any other settle from now', () => {
    expect(firstPhase(true, 7)).toEqual({ kind: 'queued', quiet: true })
    expect(firstPhase(false, 7)).toEqual({ kind: 'settling', since: 7, checking: false })
  })
})

describe('nextPhase', () => {
  it('a change starts the window again from any phase but writing, and loses quiet', () => {
    const changed: CandidateEvent = { type: 'changed', now: 5_000 }
    expect(nextPhase(SETTLING, changed)).toEqual({ kind: 'settling', since: 5_000, checking: false })
    expect(nextPhase(QUEUED, changed)).toEqual({ kind: 'settling', since: 5_000, checking: false })
    expect(nextPhase(QUIET, changed)).toEqual({ kind: 'settling', since: 5_000, checking: false })
    // Found changed after its read (or shorter than its stat): it settles again, and what made it dirty is judged then.
    expect(nextPhase({ ...HASHING, dirty: true }, changed)).toEqual({ kind: 'settling', since: 5_000, checking: false })
    // While its step is written, a change only marks it (touched): it is looked at again once written.
    expect(nextPhase(WRITING, changed)).toBe(WRITING)
  })

  it('a settle re-stat under way stays so across a change, and only one runs at a time', () => {
    expect(nextPhase(CHECKING, { type: 'changed', now: 5_000 })).toEqual({ kind: 'settling', since: 5_000, checking: true })
    expect(nextPhase(SETTLING, { type: 'check' })).toEqual(CHECKING)
    expect(nextPhase(CHECKING, { type: 'check' })).toBe(CHECKING)
    expect(nextPhase(CHECKING, { type: 'checked' })).toEqual(SETTLING)
  })

  it('settled: from settling to queued, never quiet', () => {
    expect(nextPhase(SETTLING, { type: 'settled' })).toEqual(QUEUED)
    expect(nextPhase(CHECKING, { type: 'settled' })).toEqual(QUEUED)
  })

  it('its turn: from queued to hashing, clean, keeping quiet', () => {
    expect(nextPhase(QUEUED, { type: 'turn' })).toEqual(HASHING)
    expect(nextPhase(QUIET, { type: 'turn' })).toEqual({ kind: 'hashing', quiet: true, dirty: false })
  })

  it('touched: marks a file being read or written, and nothing else', () => {
    expect(nextPhase(HASHING, { type: 'touched' })).toEqual({ ...HASHING, dirty: true })
    expect(nextPhase(WRITING, { type: 'touched' })).toEqual({ kind: 'writing', dirty: true })
    for (const p of [SETTLING, CHECKING, QUEUED, QUIET]) expect(nextPhase(p, { type: 'touched' })).toBe(p)
  })

  it('hashed: from hashing to writing, keeping the mark', () => {
    expect(nextPhase(HASHING, { type: 'hashed' })).toEqual(WRITING)
    expect(nextPhase({ kind: 'hashing', quiet: true, dirty: true }, { type: 'hashed' })).toEqual({ kind: 'writing', dirty: true })
  })

  it('drop ends every phase, and a dropped candidate stays dropped whatever comes', () => {
    for (const p of ALL) expect(nextPhase(p, { type: 'drop' })).toEqual(DROPPED)
    for (const e of EVENTS) expect(nextPhase(DROPPED, e)).toBe(DROPPED)
  })

  it('leaves a phase alone for an event that does not apply to it', () => {
    const applies: Record<CandidatePhase['kind'], Array<CandidateEvent['type']>> = {
      settling: ['changed', 'check', 'checked', 'settled', 'drop'],
      queued: ['changed', 'turn', 'drop'],
      hashing: ['changed', 'touched', 'hashed', 'drop'],
      writing: ['touched', 'drop'],
      dropped: []
    }
    for (const p of ALL) {
      for (const e of EVENTS) {
        if (applies[p.kind].includes(e.type)) continue
        // `check` twice and `checked` on a settling candidate not checking change nothing either.
        expect(nextPhase(p, e), `${p.kind} on ${e.type}`).toBe(p)
      }
    }
    expect(nextPhase(SETTLING, { type: 'checked' })).toEqual(SETTLING)
  })

  it('never changes the phase it is given', () => {
    for (const p of ALL) {
      const copy = structuredClone(p)
      for (const e of EVENTS) nextPhase(p, e)
      expect(p).toEqual(copy)
    }
  })
})

describe('Candidate', () => {
  it('answers from its phase: ready only when queued, busy while read or written, dirty only then', () => {
    const c = new Candidate('a.bin', st(10, 5n), firstPhase(false, 0))
    const seen = (): unknown => ({ ready: c.ready, busy: c.busy, dirty: c.dirty, dropped: c.dropped })
    expect(seen()).toEqual({ ready: false, busy: false, dirty: false, dropped: false })
    c.on({ type: 'settled' })
    expect(seen()).toEqual({ ready: true, busy: false, dirty: false, dropped: false })
    c.on({ type: 'turn' })
    c.on({ type: 'touched' })
    expect(seen()).toEqual({ ready: false, busy: true, dirty: true, dropped: false })
    c.on({ type: 'hashed' })
    expect(seen()).toEqual({ ready: false, busy: true, dirty: true, dropped: false })
    c.on({ type: 'drop' })
    expect(seen()).toEqual({ ready: false, busy: false, dirty: false, dropped: true })
  })

  it('is the same file only at the same size and mtime', () => {
    const c = new Candidate('a.bin', st(10, 5n), firstPhase(false, 0))
    expect(c.same(st(10, 5n))).toBe(true)
    expect(c.same(st(11, 5n))).toBe(false)
    expect(c.same(st(10, 6n))).toBe(false)
  })
})

describe('SettlePolicy', () => {
  it('ticks a few times per window, within 20 ms and 500 ms', () => {
    expect(new SettlePolicy(2_000).tickMs).toBe(500)
    expect(new SettlePolicy(60_000).tickMs).toBe(500)
    expect(new SettlePolicy(200).tickMs).toBe(50)
    expect(new SettlePolicy(0).tickMs).toBe(20)
  })

  it('calls a file quiet once its mtime is a whole window older than the wall clock', () => {
    const p = new SettlePolicy(2_000)
    const ms = 1_700_000_000_000
    const ns = BigInt(ms) * 1_000_000n
    expect(p.quiet(ns, ms + 1_999)).toBe(false)
    expect(p.quiet(ns, ms + 2_000)).toBe(true)
    expect(p.quiet(ns, ms - 60_000)).toBe(false) // an mtime in the future is not quiet
  })

  it('finds ripe the settling files whose window passed, once each until their re-stat is over', () => {
    const p = new SettlePolicy(1_000)
    const a = new Candidate('a', st(1, 1n), firstPhase(false, 0))
    const b = new Candidate('b', st(2, 1n), firstPhase(false, 0))
    p.start(a, 0)
    p.start(b, 400)
    expect(p.size).toBe(2)
    expect(p.ripe(999)).toEqual([])
    expect(p.ripe(1_000)).toEqual([a])
    a.on({ type: 'check' })
    expect(p.ripe(1_400)).toEqual([b])
    // A change restarts the window (the re-stat under way is judged against what changed).
    p.start(a, 1_500)
    expect(a.phase).toEqual({ kind: 'settling', since: 1_500, checking: true })
    a.on({ type: 'checked' })
    expect(p.ripe(2_499)).toEqual([b])
    expect(p.ripe(2_500)).toEqual([a, b])
    p.delete(b)
    expect(p.ripe(9_999)).toEqual([a])
    p.clear()
    expect(p.size).toBe(0)
  })

  it('starting a queued file sends it back to settling: the hash queue skips it', () => {
    const p = new SettlePolicy(1_000)
    const c = new Candidate('q', st(1, 1n), firstPhase(true, 0))
    expect(c.ready).toBe(true)
    p.start(c, 50)
    expect(c.ready).toBe(false)
    expect(c.phase).toEqual({ kind: 'settling', since: 50, checking: false })
    expect(p.ripe(1_050)).toEqual([c])
  })
})
