/**
 * Scan tags (src/watcher/scan-tags.ts) on their own: a scan completes once
 * its walk is over and no item carries its tag, with the events its items
 * produced; an item carries one tag at a time; stop rejects waiting scans.
 */
import { describe, expect, it } from 'vitest'
import { AbortedError } from '../../src/common/index.js'
import { ScanTags, type Tagged } from '../../src/watcher/scan-tags.js'

const item = (): Tagged => ({ tag: undefined })

describe('ScanTags', () => {
  it('a scan with nothing tagged completes as soon as its walk is closed', async () => {
    const t = new ScanTags()
    expect(await t.close(t.open())).toEqual({ added: 0, changed: 0, deleted: 0, renamed: 0 })
  })

  it('waits for every item it tagged, and counts what each produced', async () => {
    const t = new ScanTags()
    const tag = t.open()
    const [a, b, c] = [item(), item(), item()]
    for (const x of [a, b, c]) t.set(x, tag)
    let done = false
    const closed = t.close(tag).then(r => { done = true; return r })
    t.count(a, { ok: true, event: 'add' })
    t.clear(a)
    t.count(b, { ok: true, event: 'rename' })
    t.count(b, { ok: false, event: 'change' }) // a failed step counts nothing
    t.clear(b)
    await Promise.resolve()
    expect(done).toBe(false)
    expect(t.waitedFor(c)).toBe(true)
    t.count(c, { ok: true }) // nothing written: no event
    t.clear(c)
    expect(await closed).toEqual({ added: 1, changed: 0, deleted: 0, renamed: 1 })
    expect(t.waitedFor(c)).toBe(false)
  })

  it('an item carries one tag: tagged again, the earlier scan no longer waits for it', async () => {
    const t = new ScanTags()
    const first = t.open()
    const second = t.open()
    const x = item()
    t.set(x, first)
    t.set(x, second)
    expect(await t.close(first)).toEqual({ added: 0, changed: 0, deleted: 0, renamed: 0 })
    let done = false
    const closed = t.close(second).then(() => { done = true })
    await Promise.resolve()
    expect(done).toBe(false)
    t.clear(x)
    await closed
    t.clear(x) // twice: nothing
  })

  it('an abandoned scan is not waited for, and its items are simply untagged later', async () => {
    const t = new ScanTags()
    const tag = t.open()
    const x = item()
    t.set(x, tag)
    t.abandon(tag)
    expect(t.waitedFor(x)).toBe(false)
    t.clear(x)
    await expect(t.close(tag)).rejects.toBeInstanceOf(AbortedError)
    t.set(item(), tag) // a tag no scan holds tags nothing
  })

  it('stop rejects the scans still waiting', async () => {
    const t = new ScanTags()
    const tag = t.open()
    t.set(item(), tag)
    const closed = t.close(tag)
    t.abortAll()
    await expect(closed).rejects.toBeInstanceOf(AbortedError)
  })
})
