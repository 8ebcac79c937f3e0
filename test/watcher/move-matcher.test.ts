/**
 * Move matching (src/watcher/move-matcher.ts) on its own: a vanished file
 * waits as a pending delete for its window and while a candidate of its
 * size may be its copy; a new path of the same content claims it.
 */
import { describe, expect, it } from 'vitest'
import { MoveMatcher } from '../../src/watcher/move-matcher.js'
import { Candidate, firstPhase } from '../../src/watcher/settle-policy.js'
import type { FileEntry } from '../../src/watcher/file-state.js'

const entry = (cid: string, size: number): FileEntry => ({ cid, size, mtimeNs: '1', fresh: false })
const candidate = (rel: string, size: number, since: number): Candidate => new Candidate(rel, { size, mtimeNs: 1n }, firstPhase(false, since))

describe('MoveMatcher', () => {
  it('holds a vanished file until its window ends, then gives it as due', () => {
    const m = new MoveMatcher()
    const pd = m.add('a.mkv', entry('cidA', 100), 1_000)
    expect(m.size).toBe(1)
    expect(m.waiting).toBe(true)
    expect(m.get('a.mkv')).toBe(pd)
    expect(m.due(999)).toEqual([])
    expect(m.due(1_000)).toEqual([pd])
  })

  it('lets a new path of the same content claim it, once: a move', () => {
    const m = new MoveMatcher()
    const pd = m.add('a.mkv', entry('cidA', 100), 1_000)
    expect(m.claim('cidB')).toBeUndefined()
    expect(m.claim('cidA')).toBe(pd)
    expect(m.claim('cidA')).toBeUndefined()
    expect(m.size).toBe(0)
    expect(m.due(5_000)).toEqual([])
  })

  it('a delete being written can no longer be claimed, and no longer keeps the tick running', () => {
    const m = new MoveMatcher()
    const pd = m.add('a.mkv', entry('cidA', 100), 1_000)
    m.submit(pd)
    expect(m.waiting).toBe(false)
    expect(m.claim('cidA')).toBeUndefined()
    expect(m.due(5_000)).toEqual([]) // already on its way
    expect(m.size).toBe(1) // still pending until written
    m.remove(pd)
    expect(m.size).toBe(0)
  })

  it('waits while a queued or hashing candidate of its size is unresolved, however long', () => {
    const m = new MoveMatcher()
    const pd = m.add('a.mkv', entry('cidA', 100), 1_000)
    const copy = candidate('b.mkv', 100, 0)
    copy.on({ type: 'settled' })
    m.track(copy)
    expect(m.due(1_000_000)).toEqual([])
    copy.on({ type: 'turn' })
    expect(m.due(1_000_000)).toEqual([])
    m.untrack(copy)
    expect(m.due(1_000_000)).toEqual([pd])
  })

  it('a candidate of another size does not hold it', () => {
    const m = new MoveMatcher()
    const pd = m.add('a.mkv', entry('cidA', 100), 1_000)
    m.track(candidate('b.mkv', 101, 0))
    expect(m.due(1_000)).toEqual([pd])
  })

  it('a settling candidate holds it only if it has been still since before the delete fell due', () => {
    const m = new MoveMatcher()
    const pd = m.add('a.mkv', entry('cidA', 100), 1_000)
    const early = candidate('b.mkv', 100, 1_000)
    m.track(early)
    expect(m.due(1_500)).toEqual([]) // ripe within a window: it may be the copy
    m.untrack(early)
    // Rewritten after the delete fell due (a disk image in use): it cannot hold the delete for ever.
    m.track(candidate('c.mkv', 100, 1_001))
    expect(m.due(1_500)).toEqual([pd])
  })

  it('a path known only from the records (no size) waits for a candidate of any size', () => {
    const m = new MoveMatcher()
    const pd = m.add('lost.mkv', entry('cidA', -1), 1_000)
    const other = candidate('b.mkv', 7, 0)
    m.track(other)
    expect(m.due(2_000)).toEqual([])
    m.untrack(other)
    expect(m.due(2_000)).toEqual([pd])
  })

  it('clear forgets every pending delete and candidate', () => {
    const m = new MoveMatcher()
    m.add('a.mkv', entry('cidA', 100), 1_000)
    m.track(candidate('b.mkv', 100, 0))
    m.clear()
    expect(m.size).toBe(0)
    expect(m.claim('cidA')).toBeUndefined()
    const pd = m.add('c.mkv', entry('cidC', 100), 0)
    expect(m.due(0)).toEqual([pd])
  })
})
