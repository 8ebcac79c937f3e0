/**
 * A side file (search's index file) in WAL mode with the store attached:
 * its WAL is checkpointed by its own commits once past the pages it is
 * told, SQLite's 1,000 unless told otherwise.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { openKv, openSideFile } from '../../src/kv/index.js'
import { HOLD_READERS, WalHold } from '../../src/kv/wal-hold.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

/** Writes about 12 MiB (some 3,000 pages) in six commits; returns the largest size the WAL file reached. */
function fill (autocheckpointPages?: number): { walMiB: number, setting: unknown } {
  const t = tmpDir('mc-side-')
  const store = path.join(t.dir, 'store.db')
  openKv({ path: store }).close()
  const file = path.join(t.dir, 'store.db-side')
  const side = openSideFile({ path: file, store: { path: store, as: 'store' }, synchronous: 'NORMAL', cacheKiB: 2048,
    ...(autocheckpointPages === undefined ? {} : { autocheckpointPages }) })
  cleanups.push(() => { side.close(); t.cleanup() })
  side.exec('CREATE TABLE t (x TEXT NOT NULL)')
  // The store is readable through the side file's connection.
  expect(side.prepare("SELECT count(*) FROM store.kv WHERE k = 'meta-core:schema-version'").pluck().get()).toBe(1)
  const ins = side.prepare('INSERT INTO t (x) VALUES (?)')
  let largest = 0
  for (let c = 0; c < 6; c++) {
    side.transaction(() => { for (let i = 0; i < 500; i++) ins.run(`${c}-${i}-`.padEnd(4000, 'x')) })
    largest = Math.max(largest, fs.statSync(`${file}-wal`).size)
  }
  return { walMiB: largest / 2 ** 20, setting: side.prepare('PRAGMA wal_autocheckpoint').pluck().get() }
}

describe('side file', () => {
  it('checkpoints its WAL past 1,000 pages by default, past the pages it is told otherwise', () => {
    const byDefault = fill()
    expect(byDefault.setting).toBe(1000)
    expect(byDefault.walMiB).toBeLessThan(8)
    const told = fill(4000)
    expect(told.setting).toBe(4000)
    expect(told.walMiB).toBeGreaterThan(10)
  })
})

describe('side file and the store\'s hold', () => {
  it('marks its transactions in its reader slot; while a start-over holds readers off it waits, marked out, and begins once the hold clears', async () => {
    const t = tmpDir('mc-side-')
    const store = path.join(t.dir, 'store.db')
    openKv({ path: store }).close()
    const wal = WalHold.create()
    const hold = new Int32Array(wal.buffer)
    const slot = wal.acquireReaderSlot()!
    const side = openSideFile({ path: path.join(t.dir, 'store.db-side'), store: { path: store, as: 'store' }, synchronous: 'NORMAL', cacheKiB: 2048,
      storeReader: { hold: wal.buffer, slot } })
    cleanups.push(() => { side.close(); t.cleanup() })
    const read = side.prepare("SELECT count(*) FROM store.kv WHERE k = 'meta-core:schema-version'").pluck()
    // No hold: no wait; marked in while the transaction runs, out after it, also when it throws.
    let t0 = performance.now()
    expect(side.transaction(() => [read.get(), Atomics.load(hold, slot), wal.readersOut()])).toEqual([1, 1, false])
    expect(performance.now() - t0).toBeLessThan(50)
    expect(Atomics.load(hold, slot)).toBe(0)
    expect(() => side.transaction(() => { throw new Error('boom') })).toThrow('boom')
    expect(Atomics.load(hold, slot)).toBe(0)
    expect(wal.readersOut()).toBe(true)
    // Held, and cleared 150 ms later from another thread (as the checkpointer's thread does), which first
    // reports whether the reader was marked in: it was not, so a start-over would not wait for the one waiting.
    Atomics.store(hold, HOLD_READERS, 1)
    const clearer = new Worker(`
      const { parentPort, workerData } = require('node:worker_threads')
      const hold = new Int32Array(workerData.buffer)
      setTimeout(() => {
        parentPort.postMessage(Atomics.load(hold, workerData.slot))
        Atomics.store(hold, workerData.readers, 0)
        Atomics.notify(hold, workerData.readers)
      }, 150)
    `, { eval: true, workerData: { buffer: hold.buffer, readers: HOLD_READERS, slot } })
    const inside = new Promise(resolve => clearer.once('message', resolve))
    await new Promise(resolve => clearer.once('online', resolve))
    t0 = performance.now()
    expect(side.transaction(() => read.get())).toBe(1)
    const waited = performance.now() - t0
    expect(waited).toBeGreaterThan(100)
    expect(waited).toBeLessThan(1500)
    expect(await inside).toBe(0)
    expect(Atomics.load(hold, slot)).toBe(0)
    await clearer.terminate()
  })
})
