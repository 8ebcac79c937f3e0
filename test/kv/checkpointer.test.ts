/**
 * The store's background checkpointer under sustained writes. A reader on
 * another thread holds a snapshot nearly all the time, as search's index
 * writer does, so a passive checkpoint never finds the WAL free to start
 * over: without the RESTART step the WAL only grows. With it, the WAL
 * stays within a few times `restartBytes`, the file is cut back to
 * `keepBytes` once the WAL starts over, and no write fails while writers
 * wait for it.
 */
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import { openKv, type CheckpointTuning } from '../../src/kv/index.js'
import { tmpDir } from '../helpers/tmp.js'

const MiB = 2 ** 20
const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => { while (cleanups.length > 0) await cleanups.pop()!() })

/**
 * Back-to-back read transactions of about 20 ms each on the store, until
 * told to stop; with `hold`, each waits first while the store's hold is
 * set, as a side file's transactions do (search's index writer).
 */
const READER = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.path, { readonly: true })
const hold = workerData.hold === undefined ? undefined : new Int32Array(workerData.hold)
const begin = db.prepare('BEGIN')
const read = db.prepare('SELECT count(*) FROM kv').pluck()
const commit = db.prepare('COMMIT')
const pause = new Int32Array(new SharedArrayBuffer(4))
let stop = false
parentPort.on('message', () => { stop = true })
let reads = 0
function loop () {
  if (stop) { db.close(); parentPort.postMessage(reads); return }
  if (hold !== undefined) while (Atomics.load(hold, 0) !== 0) Atomics.wait(hold, 0, 1, 100)
  begin.run()
  read.get()
  Atomics.wait(pause, 0, 0, 20)
  commit.run()
  reads++
  setImmediate(loop)
}
loop()
`

interface Run { largestWalMiB: number, walMiBAfter: number, reads: number }

/**
 * Writes `totalMiB` in commits of about 64 KiB (some 330 KiB of WAL each:
 * the values take overflow pages) with the reader running; the largest
 * size the WAL file reached meanwhile, and its size once writes stopped
 * and a last commit ran. With `warmUp`, writes first until the WAL file
 * has been cut back once (a start-over happened: the checkpointer's thread
 * is up), and only then counts.
 */
async function sustainedWrites (checkpoint: CheckpointTuning, totalMiB: number, warmUp: boolean): Promise<Run> {
  const t = tmpDir('mc-ckpt-')
  const file = path.join(t.dir, 'store.db')
  const kv = openKv({ path: file, checkpoint })
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  const reader = new Worker(READER, { eval: true, workerData: { path: file, driver, hold: kv.walHold() } })
  const readerDone = new Promise<number>(resolve => { reader.once('message', resolve) })
  let stopped = false
  const stopReader = async (): Promise<number> => {
    if (stopped) return 0
    stopped = true
    reader.postMessage('stop')
    return await readerDone
  }
  cleanups.push(async () => { await stopReader(); kv.close(); t.cleanup() })
  const wal = `${file}-wal`
  const walSize = (): number => (fs.existsSync(wal) ? fs.statSync(wal).size : 0)
  const value = 'x'.repeat(1000)
  let n = 0
  const chunk = async (): Promise<void> => {
    // 64 rows of about 1 KiB, four write functions queued at once (a group commit, as concurrent writers make).
    await Promise.all(Array.from({ length: 4 }, async () => {
      await kv.write(tx => { for (let i = 0; i < 16; i++) tx.put(`k/${String(n++).padStart(9, '0')}`, value) })
    }))
    // The reader and the checkpointer run meanwhile (their threads), and the event loop turns.
    await new Promise(resolve => setImmediate(resolve))
  }
  if (warmUp) {
    let top = 0
    const until = Date.now() + 10_000
    for (let size = 0; size >= top; size = walSize()) {
      if (Date.now() > until) throw new Error(`the WAL file was never cut back (${(top / MiB).toFixed(1)} MiB)`)
      top = size
      await chunk()
    }
  }
  let largest = 0
  for (let written = 0; written < totalMiB * MiB; written += 64 * 1024) {
    await chunk()
    largest = Math.max(largest, walSize())
  }
  const reads = await stopReader()
  // With no reader and no writer left, the next look checkpoints everything and starts the WAL over; the next commit cuts the file back.
  const deadline = Date.now() + 5000
  while (Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 50))
    await kv.write(tx => { tx.put('k/last', String(Date.now())) })
    if (walSize() <= (checkpoint.keepBytes ?? Infinity) + 64 * 1024) break
  }
  // Every write went in: none failed while writers held off.
  expect(kv.keys('k/', 'k0').length).toBe(n + 1)
  return { largestWalMiB: largest / MiB, walMiBAfter: walSize() / MiB, reads }
}

const SMALL: CheckpointTuning = { thresholdBytes: 256 * 1024, restartBytes: 2 * MiB, keepBytes: 1 * MiB, restartWaitMs: 1000, intervalMs: 20 }

describe('background checkpointer', () => {
  it('without starting over, a WAL under sustained writes and a busy reader only grows (the case the RESTART step is for)', async () => {
    const r = await sustainedWrites({ ...SMALL, restartBytes: 2 ** 40 }, 24, false)
    expect(r.reads).toBeGreaterThan(10)
    expect(r.largestWalMiB).toBeGreaterThan(100)
  }, 60_000)

  it('starts the WAL over past restartBytes, so it stays bounded, and cuts the file back to keepBytes', async () => {
    const r = await sustainedWrites(SMALL, 24, true)
    expect(r.reads).toBeGreaterThan(10)
    // restartBytes, and what the writes add while a look copies, syncs and waits for the reader: a few
    // tenths of a second of writes at this pace (5.7-13.1 MiB in six runs on a 2-core machine), a
    // third of what the same writes leave without the RESTART step (122 MiB, the test above).
    expect(r.largestWalMiB).toBeLessThan(40)
    expect(r.walMiBAfter).toBeLessThan(1.2)
  }, 60_000)
})

describe('writes while the WAL starts over', () => {
  it('wait while the hold is set, go in once it clears, and close() commits them however the hold stands', async () => {
    const t = tmpDir('mc-ckpt-')
    const kv = openKv({ path: path.join(t.dir, 'store.db') })
    let closed = false
    cleanups.push(() => { if (!closed) kv.close(); t.cleanup() })
    const hold = new Int32Array(kv.walHold()!)
    // As the checkpointer's thread does around a RESTART.
    Atomics.store(hold, 0, 1)
    let first = false
    const w1 = kv.write(tx => { tx.put('a', '1') }).then(() => { first = true })
    await new Promise(resolve => setTimeout(resolve, 100))
    expect(first).toBe(false)
    expect(kv.get('a')).toBeUndefined()
    Atomics.store(hold, 0, 0)
    await w1
    expect(kv.get('a')).toBe('1')
    // Held again, and the store closed meanwhile: the queued write is committed, not left waiting.
    Atomics.store(hold, 0, 1)
    let second = false
    const w2 = kv.write(tx => { tx.put('b', '2') }).then(() => { second = true })
    await new Promise(resolve => setTimeout(resolve, 20))
    expect(second).toBe(false)
    kv.close()
    closed = true
    await w2
    const again = openKv({ path: path.join(t.dir, 'store.db') })
    expect(again.get('b')).toBe('2')
    again.close()
  })
})

describe('a reader that stays in the WAL', () => {
  it('makes start-overs give up, ever less often, and the store warns once after five in a row; writes go on, and the WAL starts over once it leaves', async () => {
    const t = tmpDir('mc-ckpt-')
    const file = path.join(t.dir, 'store.db')
    const lines: string[] = []
    const kv = openKv({
      path: file,
      checkpoint: { ...SMALL, restartWaitMs: 50 },
      logger: createLogger({ level: 'debug', write: line => { lines.push(line) } })
    })
    // One read transaction held open until told to stop (it honours no hold).
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    const reader = new Worker(`
      const { parentPort, workerData } = require('node:worker_threads')
      const db = new (require(workerData.driver))(workerData.path, { readonly: true })
      db.prepare('BEGIN').run()
      db.prepare('SELECT count(*) FROM kv').pluck().get()
      parentPort.postMessage('in')
      parentPort.on('message', () => { db.prepare('COMMIT').run(); db.close(); parentPort.postMessage('out') })
    `, { eval: true, workerData: { path: file, driver } })
    let left = false
    const leave = async (): Promise<void> => {
      if (left) return
      left = true
      const out = new Promise(resolve => reader.once('message', resolve))
      reader.postMessage('stop')
      await out
    }
    cleanups.push(async () => { await leave(); kv.close(); t.cleanup() })
    await new Promise(resolve => reader.once('message', resolve))
    const warned = (): boolean => lines.some(l => l.includes('the WAL cannot start over'))
    const value = 'x'.repeat(1000)
    let n = 0
    const until = Date.now() + 15_000
    while (!warned() && Date.now() < until) {
      await kv.write(tx => { for (let i = 0; i < 64; i++) tx.put(`k/${String(n++).padStart(9, '0')}`, value) })
      await new Promise(resolve => setTimeout(resolve, 5))
    }
    expect(warned()).toBe(true)
    expect(lines.filter(l => l.includes('the WAL cannot start over'))).toHaveLength(1)
    expect(lines.join('\n')).toMatch(/attempts=5/)
    // Each attempt held the writers back for up to 50 ms; the waits between them double from 40 ms, so the
    // next second sees two or three more (one every 70 ms or so without the back-off).
    const givenUp = (): number => lines.filter(l => l.includes('start-over given up')).length
    const before = givenUp()
    const second = Date.now() + 1000
    while (Date.now() < second) {
      await kv.write(tx => { for (let i = 0; i < 16; i++) tx.put(`k/${String(n++).padStart(9, '0')}`, value) })
      await new Promise(resolve => setTimeout(resolve, 5))
    }
    expect(givenUp() - before).toBeLessThanOrEqual(4)
    // The reader leaves: the next looks start the WAL over, and the next commit cuts the file back.
    await leave()
    const wal = `${file}-wal`
    const deadline = Date.now() + 10_000
    while (fs.statSync(wal).size > (SMALL.keepBytes ?? 0) + 64 * 1024 && Date.now() < deadline) {
      await kv.write(tx => { tx.put(`k/${String(n++).padStart(9, '0')}`, value) })
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    expect(fs.statSync(wal).size).toBeLessThanOrEqual((SMALL.keepBytes ?? 0) + 64 * 1024)
    expect(kv.keys('k/', 'k0').length).toBe(n)
  }, 60_000)
})
