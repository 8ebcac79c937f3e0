/**
 * The backlog of staged roots is bounded: writers wait at the bound while
 * the merger works it down, and a backlog that lasts says so in the log.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { createSearch, referenceSearch, type MergerOptions, type Search, type SearchRequest } from '../../src/search/index.js'
import { tmpDir } from '../helpers/tmp.js'

let cleanup: (() => Promise<void>) | undefined
afterEach(async () => { await cleanup?.(); cleanup = undefined })

async function open (merger: MergerOptions, lines?: string[]): Promise<{ s: NodeStore, search: Search }> {
  const t = tmpDir('mc-backlog-')
  const s = openNodeStore({ path: `${t.dir}/store.db`, nodeId: 'n' })
  const logger = lines === undefined ? undefined : createLogger({ level: 'info', write: l => { lines.push(l) } })
  const search = createSearch({ kv: s.kv, records: s.records, logger }, { merger })
  await search.start()
  cleanup = async () => { await search.stop(); s.close(); t.cleanup() }
  return { s, search }
}

const same = (s: NodeStore, search: Search, req: SearchRequest): void => { expect(search.search(req)).toEqual(referenceSearch(s.records, req)) }

describe('backlog', () => {
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

  it('past half the bound, writes and merger steps take turns', async () => {
    // Small steps (one root per fill, a few entries per slice) so a batch takes many of them: writers must not wait for a whole batch.
    const LIMIT = 40
    const WRITERS = 4
    const { s, search } = await open({ backlogLimit: LIMIT, batchRoots: 1000, fillRoots: 1, sliceEntries: 5, sliceRows: 1, delayMs: 3_600_000 })
    // Each commit: a write (it appends to the change log) or a merger step (it does not), and the backlog after it.
    const commits: Array<{ write: boolean, pending: number }> = []
    let appended = false
    s.kv.onCommit(entries => { appended = entries.length > 0 })
    s.kv.onBatch(() => { commits.push({ write: appended, pending: search.pendingCount() }); appended = false })
    await Promise.all(Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < 60; i++) await s.records.mint(`/files/${w}/${i}.mkv`, i, i, { title: `turns ${w} ${i}` })
    }))
    await search.whenIdle()
    const writes = commits.filter(c => c.write).length
    expect(writes).toBeGreaterThan(0)
    // Once the backlog is past half the bound (plus the writes that passed the gate before it), no two write commits follow each other.
    let paced = 0
    for (let i = 0; i + 1 < commits.length; i++) {
      if (!commits[i].write || commits[i].pending < LIMIT / 2 + WRITERS) continue
      paced++
      expect(commits[i + 1].write, `commit ${i + 1} of ${commits.length}`).toBe(false)
    }
    expect(paced).toBeGreaterThan(5)
    expect(Math.max(...commits.map(c => c.pending))).toBeLessThanOrEqual(LIMIT + WRITERS)
    same(s, search, { query: 'turns 2' })
  })

  it('moves field entries in smaller slices while slices take longer than the step target', async () => {
    // The same 1,000 records of 20 fields (20,000 entries) merged by a merger whose steps seem instant, and by one whose steps seem to take 40 ms.
    const mergerCommits = async (stepMs: number): Promise<number> => {
      let t = 0
      const { s, search } = await open({ batchRoots: 1000, fillRoots: 1000, sliceRows: 1000, sliceEntries: 6000, delayMs: 3_600_000, clock: () => (t += stepMs / 2) })
      let appended = false
      let n = 0
      s.kv.onCommit(entries => { appended = entries.length > 0 })
      s.kv.onBatch(() => { if (!appended) n++; appended = false })
      for (let i = 0; i < 1000; i++) {
        await s.records.mint(`/files/slices/${i}.mkv`, i, i, Object.fromEntries(Array.from({ length: 20 }, (_, f) => [`f${f}`, `value ${i} ${f}`])))
      }
      await search.whenIdle()
      same(s, search, { filters: [{ property: 'f7', values: ['value 123 7'], exact: true }] })
      await cleanup?.()
      cleanup = undefined
      return n
    }
    const quick = await mergerCommits(0)
    const slow = await mergerCommits(40)
    // Quick: the 20,000+ entries in four slices. Slow: 6,000 then 4,200 and so on down to 500 entries a slice.
    expect(slow).toBeGreaterThanOrEqual(quick + 3)
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
