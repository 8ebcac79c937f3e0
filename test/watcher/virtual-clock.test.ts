/**
 * The tracker's windows on a virtual clock (scripted hints, real files): a
 * settle window of a minute, and a hash queue held as long as a test likes,
 * pass in real milliseconds and in the order the test says.
 */
import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { sha256FileCid } from '../../src/cid/index.js'
import { harnessPerTest, midhashOf, type Harness } from './harness.js'
import type { VirtualTime } from './virtual-time.js'

const harness = harnessPerTest({ source: 'scripted' })
const SETTLE = 60_000
const DATA = Buffer.alloc(4097, 0x5a)

async function open (): Promise<{ h: Harness, rt: VirtualTime }> {
  const h = await harness({ settleMs: SETTLE, clock: 'virtual' })
  return { h, rt: h.time! }
}

/** Moves the clock on until `n` events are out (at most `ms`). */
async function events (h: Harness, rt: VirtualTime, n: number, ms: number): Promise<void> {
  const ok = await rt.advance(ms, () => h.events().length >= n)
  expect(ok, `${n} events within ${ms} virtual ms; got ${JSON.stringify(h.events())}`).toBe(true)
}

describe('settle windows on the watcher\'s clock', () => {
  it('a new file is hashed once its window has passed, not before; a change inside the window starts it again', async () => {
    const { h, rt } = await open()
    h.fsd.write('a.bin', 'first bytes')
    await rt.advance(SETTLE - 1_000)
    expect(h.events()).toEqual([])
    expect(rt.reads.hashed).toEqual([])
    h.fsd.append('a.bin', ', then more')
    await rt.advance(SETTLE - 1_000)
    expect(h.events()).toEqual([]) // the window started again at the change
    await events(h, rt, 1, 3_000)
    expect(h.events().map(e => [e.type, e.path, e.size])).toEqual([['add', 'a.bin', '22']])
    expect(rt.reads.hashed).toHaveLength(1)
    await h.idle()
  })

  it('a file whose mtime is already older than the window is hashed at once', async () => {
    const { h, rt } = await open()
    h.fsd.write('old.bin', 'at rest')
    const past = new Date(Date.now() - 2 * SETTLE)
    fs.utimesSync(h.abs('old.bin'), past, past)
    await events(h, rt, 1, 1_000)
    expect(h.events()[0]).toMatchObject({ type: 'add', path: 'old.bin' })
  })
})

describe('a delete and a copy of the same bytes', () => {
  async function recorded (h: Harness, rt: VirtualTime): Promise<string> {
    h.fsd.write('s2/f2.bin', DATA)
    await events(h, rt, 1, SETTLE + 2_000)
    const cid = await midhashOf(h.abs('s2/f2.bin'))
    await h.store.records.mergeFlat(cid, { title: 'Kept' })
    return cid
  }

  it('the delete waits while a copy of its size waits for its hash, however long: then one rename, the record kept', async () => {
    const { h, rt } = await open()
    const cid = await recorded(h, rt)
    const rid = h.store.records.resolveRoot(cid)
    const release = rt.reads.holdHash('copy/dup.bin')
    h.fsd.write('copy/dup.bin', DATA)
    h.fsd.remove('s2/f2.bin')
    await rt.advance(10 * SETTLE)
    expect(rt.reads.hashed.some(p => p.endsWith('copy/dup.bin'))).toBe(true) // settled and being hashed
    expect(h.events()).toHaveLength(1) // no delete while the copy may be the same bytes
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    release()
    await events(h, rt, 2, 2_000)
    expect(h.events().slice(1).map(e => [e.type, e.oldPath, e.path])).toEqual([['rename', 's2/f2.bin', 'copy/dup.bin']])
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getDocument(cid)!.metadata).toMatchObject({ title: 'Kept', filePath: '/files/copy/dup.bin' })
    await rt.advance(1_000)
    await h.idle()
  })

  it('a file of the same size rewritten again and again does not hold the delete back for ever', async () => {
    const { h, rt } = await open()
    const cid = await recorded(h, rt)
    h.fsd.remove('s2/f2.bin')
    for (let i = 0; i < 8 && h.events().length < 2; i++) {
      h.fsd.write('busy.img', Buffer.alloc(4097, i)) // same size, other bytes, a new mtime each time
      await rt.advance(SETTLE / 2)
    }
    expect(h.events()[1]).toMatchObject({ type: 'delete', path: 's2/f2.bin' })
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
  })

  it('a file of another size does not hold the delete back', async () => {
    const { h, rt } = await open()
    const cid = await recorded(h, rt)
    const release = rt.reads.holdHash('other.bin')
    h.fsd.write('other.bin', Buffer.alloc(4096, 0x5a))
    h.fsd.remove('s2/f2.bin')
    await events(h, rt, 2, SETTLE + 2_000)
    expect(h.events()[1]).toMatchObject({ type: 'delete', path: 's2/f2.bin' })
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
    release()
    await events(h, rt, 3, 2_000)
    await rt.advance(1_000)
    await h.idle()
  })
})

describe('the background full hash', () => {
  it('reads at its rate bound on the watcher\'s clock: a 2 MiB file at 256 KiB/s takes its four virtual seconds', async () => {
    const h = await harness({ settleMs: SETTLE, clock: 'virtual', fullHash: ['sha2-256'], fullHashBytesPerSecond: 256 * 1024 })
    const rt = h.time!
    h.fsd.write('big.bin', Buffer.alloc(2 * 1_048_576, 0x42))
    await events(h, rt, 1, SETTLE + 2_000)
    // Read in two steps of 1 MiB: the second may start four seconds after the first.
    const hashed = (): boolean => h.watcher.status().fullHash.filesHashed === 1
    expect(await rt.advance(3_000, hashed)).toBe(false)
    expect(h.watcher.status().fullHash).toMatchObject({ state: 'hashing', current: { path: 'big.bin', bytesRead: 1_048_576 } })
    expect(await rt.advance(2_000, hashed)).toBe(true)
    const sha = (await sha256FileCid(h.abs('big.bin'))).cid
    expect(h.store.records.resolveRoot(sha)).toBe(h.store.records.resolveRoot(await midhashOf(h.abs('big.bin'))))
  })
})
