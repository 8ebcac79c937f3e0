/**
 * The WAL start-over's protocol (src/kv/wal-hold.ts). A model test: random
 * operations of owners, readers and the start-over, each checked against a
 * plain model of what the flags must say. Then the property the protocol
 * exists for, with real threads: the start-over never holds writers while
 * a reader that takes part is in a transaction.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { startModuleWorker, workerModule } from '../../src/common/index.js'
import { READER_SLOTS, WalHold } from '../../src/kv/wal-hold.js'
import { waitFor } from '../../src/common/wait.js'
import { pick, prng } from '../helpers/prng.js'

interface Model { taken: Set<number>, inside: Set<number>, readersHeld: boolean, writersHeld: boolean }

describe('WalHold', () => {
  it('follows its model over random operations (seeded)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = prng(seed)
      const hold = WalHold.create()
      const m: Model = { taken: new Set(), inside: new Set(), readersHeld: false, writersHeld: false }
      const firstFree = (): number | undefined => {
        for (let s = 0; s < READER_SLOTS; s++) if (![...m.taken].includes(s + 3)) return s + 3
        return undefined
      }
      for (let step = 0; step < 400; step++) {
        const taken = [...m.taken]
        const op = pick(rand, ['acquire', 'acquire', 'release', 'enter', 'leave', 'holdReaders', 'waitOut', 'holdWriters', 'releaseWriters',
          'release'] as const)
        const where = `seed ${seed} step ${step} ${op}`
        switch (op) {
          case 'acquire': {
            const want = firstFree()
            expect(hold.acquireReaderSlot(), where).toBe(want)
            if (want !== undefined) m.taken.add(want)
            break
          }
          case 'release':
            if (taken.length === 0) break
            { const s = pick(rand, taken); hold.releaseReaderSlot(s); m.taken.delete(s); m.inside.delete(s) }
            break
          case 'enter':
            // With no time to wait, a reader goes in whether or not readers are held (it never waits for good).
            if (taken.length === 0) break
            { const s = pick(rand, taken); hold.enterRead(s, 0); m.inside.add(s) }
            break
          case 'leave':
            if (m.inside.size === 0) break
            { const s = pick(rand, [...m.inside]); hold.leaveRead(s); m.inside.delete(s) }
            break
          case 'holdReaders': hold.holdReaders(); m.readersHeld = true; break
          case 'waitOut': expect(hold.waitReadersOut(Date.now()), where).toBe(m.inside.size === 0); break
          case 'holdWriters': hold.holdWriters(); m.writersHeld = true; break
          case 'releaseWriters': hold.releaseWriters(); m.writersHeld = false; break
          case 'release': hold.release(); m.readersHeld = false; m.writersHeld = false; break
        }
        expect([hold.readersOut(), hold.readersHeld(), hold.writersHeld(), hold.takenSlots()], where)
          .toEqual([m.inside.size === 0, m.readersHeld, m.writersHeld, m.taken.size])
      }
    }
  })

  it('a reader held off steps out of its slot and waits; the buffer is shared, not copied', () => {
    const a = WalHold.create()
    const b = WalHold.of(a.buffer)
    const slot = a.acquireReaderSlot()!
    b.holdReaders()
    const t0 = performance.now()
    a.enterRead(slot, 30)
    // It waited its whole limit (no one released), then went in anyway.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25)
    expect(b.readersOut()).toBe(false)
    a.leaveRead(slot)
    expect(b.waitReadersOut(Date.now() + 1000)).toBe(true)
    a.releaseReaderSlot(slot)
    expect(b.takenSlots()).toBe(0)
    expect(() => { a.enterRead(0, 0) }).toThrow(RangeError)
    expect(() => WalHold.of(new SharedArrayBuffer(4))).toThrow(RangeError)
  })

  it('never holds writers while a reader that takes part is in a transaction (two reader threads, 200 start-overs)', async () => {
    const hold = WalHold.create()
    const entry = workerModule('fixtures/wal-hold-reader', import.meta.url)
    const stop = new SharedArrayBuffer(4)
    const readers = [0, 1].map(async () => {
      const w = startModuleWorker(entry, { buffer: hold.buffer, slot: hold.acquireReaderSlot()!, stop })
      await new Promise(resolve => w.once('online', resolve))
      return await new Promise<{ overlaps: number, transactions: number }>((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })
    })
    // Both readers in their loop before the first start-over; told to stop however the test ends.
    onTestFinished(() => { Atomics.store(new Int32Array(stop), 0, 1) })
    await waitFor(() => !hold.readersOut(), { timeoutMs: 10_000, what: 'a reader in a transaction' })
    let startOvers = 0
    let found = 0
    // The start-over, as checkpoint-worker.ts runs it, while the readers run their transactions.
    while (startOvers < 200) {
      if (!hold.readersOut()) found++
      hold.holdReaders()
      if (hold.waitReadersOut(Date.now() + 1000)) {
        hold.holdWriters()
        // The last copy. A reader may mark its slot for a moment here (it marks itself in before it looks at
        // the hold, then steps back out): what must not happen is a transaction, which the readers count.
        const until = performance.now() + 0.2
        while (performance.now() < until) { /* spin: the readers try to enter meanwhile */ }
        hold.releaseWriters()
      }
      hold.release()
      startOvers++
      // Let the readers run a few transactions before the next.
      const t = performance.now() + 1
      while (performance.now() < t) { /* spin: the readers are on their own threads */ }
    }
    Atomics.store(new Int32Array(stop), 0, 1)
    const results = await Promise.all(readers)
    // Most start-overs began with a reader inside: they waited for it.
    expect(found).toBeGreaterThan(50)
    expect(results.every(r => r.transactions > 100)).toBe(true)
    expect(results.map(r => r.overlaps)).toEqual([0, 0])
  }, 60_000)
})
