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
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

/** Writes about 12 MiB (some 3,000 pages) in six commits; returns the largest size the WAL file reached. */
function fill (autocheckpointPages?: number): { walMiB: number, setting: unknown } {
  const t = tmpDir('mc-side-')
  const store = path.join(t.dir, 'store.db')
  openKv({ path: store }).close()
  const file = path.join(t.dir, 'store.db-side')
  const side = openSideFile({ path: file, store: { path: store, as: 'store' }, synchronous: 'NORMAL', cacheKiB: 2048, ...(autocheckpointPages === undefined ? {} : { autocheckpointPages }) })
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
  it('waits to begin a transaction while the store holds its readers off, and begins once the hold clears', async () => {
    const t = tmpDir('mc-side-')
    const store = path.join(t.dir, 'store.db')
    openKv({ path: store }).close()
    const hold = new SharedArrayBuffer(4)
    const flag = new Int32Array(hold)
    const side = openSideFile({ path: path.join(t.dir, 'store.db-side'), store: { path: store, as: 'store' }, synchronous: 'NORMAL', cacheKiB: 2048, storeHold: hold })
    cleanups.push(() => { side.close(); t.cleanup() })
    const read = side.prepare("SELECT count(*) FROM store.kv WHERE k = 'meta-core:schema-version'").pluck()
    // No hold: no wait.
    let t0 = performance.now()
    expect(side.transaction(() => read.get())).toBe(1)
    expect(performance.now() - t0).toBeLessThan(50)
    // Held, and cleared 150 ms later from another thread (as the checkpointer's thread does).
    Atomics.store(flag, 0, 1)
    const clearer = new Worker(`
      const { workerData } = require('node:worker_threads')
      const flag = new Int32Array(workerData)
      setTimeout(() => { Atomics.store(flag, 0, 0); Atomics.notify(flag, 0) }, 150)
    `, { eval: true, workerData: hold })
    await new Promise(resolve => clearer.once('online', resolve))
    t0 = performance.now()
    expect(side.transaction(() => read.get())).toBe(1)
    const waited = performance.now() - t0
    expect(waited).toBeGreaterThan(100)
    expect(waited).toBeLessThan(1500)
    await clearer.terminate()
  })
})
