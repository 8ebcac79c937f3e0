/**
 * The backlog of staged roots is bounded: writers wait at the bound while
 * the merger works it down, and a backlog that lasts says so in the log.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor } from '../../src/common/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { createSearch, type Search, type SearchRequest } from '../../src/search/index.js'
import { referenceSearch, type MergerOptions } from '../../src/search/testing.js'
import { ManualClock } from '../helpers/manual-clock.js'
import { tmpDir } from '../helpers/tmp.js'

let cleanup: (() => Promise<void>) | undefined
afterEach(async () => { await cleanup?.(); cleanup = undefined })

async function open (merger: MergerOptions, lines?: string[]): Promise<{ s: NodeStore, search: Search }> {
  const t = tmpDir('mc-backlog-')
  const s = openNodeStore({ path: `${t.dir}/store.db`, nodeId: 'n' })
  const logger = lines === undefined ? undefined : createLogger({ level: 'info', write: l => { lines.push(l) } })
  const search = createSearch({ kv: s.kv, records: s.records, logger }, { internal: { merger } })
  await search.start()
  cleanup = async () => { await search.stop(); s.close(); t.cleanup() }
  return { s, search }
}

const same = (s: NodeStore, search: Search, req: SearchRequest): void => { expect(search.search(req)).toEqual(referenceSearch(s.records, req)) }

describe('backlog', () => {
  it('merges a quarter of a batch at once, and less after the delay', async () => {
    // The merger's timers in virtual time: the delay passes only when the test moves the clock.
    const clock = new ManualClock()
    const { s, search } = await open({ batchRoots: 40, backlogLimit: 100_000, delayMs: 100, clock })
    let n = 0
    const mint = async (count: number): Promise<void> => {
      await Promise.all(Array.from({ length: count }, async () => { const i = n++; await s.records.mint(`/files/q/${i}.mkv`, i, i, { title: `q ${i}` }) }))
    }
    // Under a quarter of a batch: staged, the delay's timer set, and nothing runs until it fires.
    await mint(9)
    expect(search.pendingCount()).toBe(9)
    expect(clock.nextAt()).toBe(clock.now() + 100)
    expect(clock.runNext(clock.now() + 99)).toBe(false)
    expect(search.pendingCount()).toBe(9)
    // A quarter: merged at once, with the clock where it is.
    await mint(1)
    await waitFor(() => search.pendingCount() === 0, { timeoutMs: 4000, what: 'a quarter of a batch merged' })
    same(s, search, { query: 'q 8' })
    // Less than a quarter again: merged once the delay has passed, and not before.
    await mint(3)
    expect(search.pendingCount()).toBe(3)
    const due = clock.nextAt()!
    expect(due - clock.now()).toBe(100)
    clock.advanceTo(due - 1)
    expect(search.pendingCount()).toBe(3)
    expect(clock.runNext(due)).toBe(true)
    await waitFor(() => search.pendingCount() === 0, { timeoutMs: 4000, what: 'the trickle merged after the delay' })
    same(s, search, { query: 'q 11' })
  })

  it('makes writers wait at the bound instead of letting the backlog grow', async () => {
    // The merger starts only when writers wait on it: without the wait, all 200 writes would stay staged.
    const { s, search } = await open({ backlogLimit: 20, batchRoots: 1000, delayMs: 3_600_000 })
    let most = 0
    s.kv.onCommit(() => { most = Math.max(most, search.pendingCount()) })
    await Promise.all(Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 50; i++) await s.records.mint(`/files/${w}/${i}.mkv`, i, i, { title: `writer ${w} record ${i}` })
    }))
    expect(most).toBeGreaterThanOrEqual(20 / 2)
    expect(most).toBeLessThanOrEqual(20 + 4) // each of the 4 writers may have passed the gate just before it closed
    same(s, search, { query: 'writer 3' })
    same(s, search, { filters: [{ property: 'title', values: ['record 4'] }] })
    await search.whenIdle()
    expect(search.pendingCount()).toBe(0)
    same(s, search, { query: 'writer 3' })
  })

  it('commits writes while a batch is being indexed', async () => {
    // One batch of every staged root, started by whenIdle: the index writer works on its own thread and file.
    const { s, search } = await open({ batchRoots: 100_000, backlogLimit: 100_000, delayMs: 3_600_000 })
    const fields = (i: number): Record<string, string> => Object.fromEntries(Array.from({ length: 20 }, (_, f) => [`f${f}`, `value ${i} ${f}`]))
    await Promise.all(Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 600; i++) await s.records.mint(`/files/c/${w}-${i}.mkv`, i, i, fields(w * 1000 + i))
    }))
    expect(search.pendingCount()).toBe(2400)
    const idle = search.whenIdle()
    // Writes made while the batch runs: each commits while the batch's 2,400 roots are still staged.
    let during = 0
    for (let i = 0; i < 5; i++) {
      await s.records.mint(`/files/c/late-${i}.mkv`, i, i, { title: `late ${i}` })
      if (search.pendingCount() >= 2400) during++
    }
    await idle
    expect(during).toBeGreaterThanOrEqual(3)
    expect(search.pendingCount()).toBe(0)
    same(s, search, { query: 'late 3' })
    same(s, search, { filters: [{ property: 'f7', values: ['value 1123 7'], exact: true }] })
  })

  it('writes a progress line while a backlog lasts, and one when it is merged', async () => {
    const lines: string[] = []
    const { s, search } = await open({ batchRoots: 10, delayMs: 3_600_000, progressEveryMs: 0 }, lines)
    await Promise.all(Array.from({ length: 100 }, async (_, i) => await s.records.mint(`/files/p/${i}.mkv`, i, i, { title: `progress ${i}` })))
    await search.whenIdle()
    const progress = lines.filter(l => l.includes('search: backlog in progress'))
    expect(progress.length).toBeGreaterThan(1)
    expect(progress[0]).toMatch(/pending=\d+/)
    expect(lines.some(l => l.includes('search: backlog merged'))).toBe(true)
    same(s, search, { query: 'progress 7' })
  })
})
