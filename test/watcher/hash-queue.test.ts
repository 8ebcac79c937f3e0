/**
 * The hash queue (src/watcher/hash-queue.ts) on its own: files run in the
 * order they settled, on a bounded number of slots; a file is checked when
 * its turn comes, not when it was queued; registerFile's reads take a slot
 * ahead of the queue.
 */
import { describe, expect, it } from 'vitest'
import { HashQueue } from '../../src/watcher/hash-queue.js'

interface Item { name: string, ready: boolean }

function rig (slots: number): { q: HashQueue<Item>, started: string[], item: (name: string) => Item } {
  const started: string[] = []
  const q = new HashQueue<Item>(slots, it => { started.push(it.name) })
  return { q, started, item: name => ({ name, ready: true }) }
}

describe('HashQueue', () => {
  it('runs items in the order they were pushed, no more at once than its slots', () => {
    const { q, started, item } = rig(2)
    expect(q.busy).toBe(false)
    for (const n of ['a', 'b', 'c', 'd']) q.push(item(n))
    expect(started).toEqual(['a', 'b'])
    expect(q.busy).toBe(true)
    q.release()
    expect(started).toEqual(['a', 'b', 'c'])
    q.release()
    q.release()
    expect(started).toEqual(['a', 'b', 'c', 'd'])
    q.release()
    expect(q.busy).toBe(false)
  })

  it('checks an item when its turn comes: one no longer ready is skipped without a slot', () => {
    const { q, started, item } = rig(1)
    const [a, b, c] = [item('a'), item('b'), item('c')]
    q.push(a)
    q.push(b)
    q.push(c)
    b.ready = false // it changed again while it waited: back to settling
    q.release()
    expect(started).toEqual(['a', 'c'])
  })

  it('gives registerFile\'s read the next free slot, ahead of the queued items', async () => {
    const { q, started, item } = rig(1)
    q.push(item('a'))
    let got = false
    const slot = q.acquire().then(() => { got = true })
    q.push(item('b'))
    expect(q.busy).toBe(true)
    q.release() // a's read is over: the slot goes to the waiting caller, not to b
    await slot
    expect(got).toBe(true)
    expect(started).toEqual(['a'])
    q.release()
    expect(started).toEqual(['a', 'b'])
  })

  it('starts nothing once stopped, and forgets what was queued when reset', () => {
    const { q, started, item } = rig(1)
    q.push(item('a'))
    q.push(item('b'))
    q.stop()
    q.release()
    q.push(item('c'))
    expect(started).toEqual(['a'])
    q.reset()
    q.push(item('d'))
    expect(started).toEqual(['a', 'd'])
  })

  it('keeps its memory bounded over a long run', () => {
    const { q, started, item } = rig(1)
    for (let i = 0; i < 5_000; i++) {
      q.push(item(String(i)))
      q.release()
    }
    expect(started).toHaveLength(5_000)
    expect((q as unknown as { queue: Item[] }).queue.length).toBeLessThan(2_100)
  })
})
