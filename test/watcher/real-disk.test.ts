/**
 * The record lifecycle with the OS event source on a real folder, driven the
 * way a person and their tools change a library: plain writes, `rename(2)`,
 * `unlink(2)`, no hint emitted by the test. Each case gives the record a
 * title first, so a record deleted and minted anew (the fields lost) shows
 * as a failure, not only a record gone.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { harnessPerTest, midhashOf, SETTLE_MS, type Harness } from './harness.js'

const harness = harnessPerTest({ source: 'real' })
const ME = 'holders/node-test'
const A = Buffer.alloc(4097, 0x5a)
const B = Buffer.alloc(5003, 0x3c)

function write (h: Harness, rel: string, data: Buffer): void {
  fs.mkdirSync(path.dirname(h.abs(rel)), { recursive: true })
  fs.writeFileSync(h.abs(rel), data)
}

function move (h: Harness, from: string, to: string): void {
  fs.mkdirSync(path.dirname(h.abs(to)), { recursive: true })
  fs.renameSync(h.abs(from), h.abs(to))
}

function rm (h: Harness, rel: string): void {
  fs.rmSync(h.abs(rel), { recursive: true })
}

/** Writes `rel`, waits for its record and gives it a title; returns its midhash. */
async function recorded (h: Harness, rel: string, data: Buffer, title = 'Kept'): Promise<string> {
  write(h, rel, data)
  const cid = await midhashOf(h.abs(rel))
  await waitFor(() => h.store.records.getFlat(cid)?.filePath !== undefined, { timeoutMs: 10_000, what: `${rel} recorded` })
  await h.idle()
  await h.store.records.mergeFlat(cid, { title })
  return cid
}

/** Where the record says this node holds the content: [filePath, ...duplicates]. */
function paths (h: Harness, cid: string): string[] | undefined {
  const doc = h.store.records.getDocument(cid)
  if (doc === undefined) return undefined
  return [doc.metadata.filePath ?? '-', ...doc.duplicates]
}

async function until (h: Harness, what: string, pred: () => boolean): Promise<void> {
  await waitFor(pred, { timeoutMs: 10_000, what })
  await h.idle()
}

async function duplicated (h: Harness, cid: string, n: number): Promise<void> {
  await until(h, `${n} duplicate(s) recorded`, () => (h.store.records.getDocument(cid)?.duplicates.length ?? 0) === n)
}

/** The watcher's memory and the disk agree: a full rescan finds nothing to do. */
async function settledScan (h: Harness, files: number): Promise<void> {
  expect(await h.watcher.scan()).toEqual({ fileCount: files, added: 0, changed: 0, deleted: 0, renamed: 0 })
}

function mtimeOf (h: Harness, rel: string): string {
  return String(fs.statSync(h.abs(rel), { bigint: true }).mtimeNs)
}

describe('copies on a real disk', () => {
  it('copies in a sibling folder, the same folder and a nested folder: each delete promotes a copy, the last one deletes the record', async () => {
    const h = await harness()
    const cid = await recorded(h, 'watch/s2/f2.bin', A)
    write(h, 'watch/copy/dup.bin', A)
    write(h, 'watch/s2/again.bin', A)
    write(h, 'watch/s2/deep/er/nest.bin', A)
    await duplicated(h, cid, 3)
    rm(h, 'watch/s2/f2.bin')
    await until(h, 'the first promoted', () => paths(h, cid)?.[0] !== '/files/watch/s2/f2.bin')
    expect(paths(h, cid)).toEqual(['/files/watch/copy/dup.bin', '/files/watch/s2/again.bin', '/files/watch/s2/deep/er/nest.bin'])
    expect(h.store.records.getFlat(cid)).toMatchObject({ title: 'Kept', sizeByte: '4097', mtimeNano: mtimeOf(h, 'watch/copy/dup.bin'), [ME]: 'true' })
    await settledScan(h, 3)
    rm(h, 'watch/copy/dup.bin')
    await until(h, 'the second promoted', () => paths(h, cid)?.length === 2)
    expect(paths(h, cid)).toEqual(['/files/watch/s2/again.bin', '/files/watch/s2/deep/er/nest.bin'])
    rm(h, 'watch/s2/deep')
    await until(h, 'the nested copy gone', () => paths(h, cid)?.length === 1)
    expect(paths(h, cid)).toEqual(['/files/watch/s2/again.bin'])
    expect(h.store.records.getFlat(cid)?.title).toBe('Kept')
    rm(h, 'watch/s2/again.bin')
    await until(h, 'the record gone with its last copy', () => h.store.records.resolveRoot(cid) === undefined)
    expect(h.store.records.countRecords()).toBe(0)
  })

  it('the copy deleted first, then the first file', async () => {
    const h = await harness()
    const cid = await recorded(h, 'a/one.bin', A)
    write(h, 'b/two.bin', A)
    await duplicated(h, cid, 1)
    rm(h, 'b/two.bin')
    await duplicated(h, cid, 0)
    expect(paths(h, cid)).toEqual(['/files/a/one.bin'])
    expect(h.store.records.getFlat(cid)?.title).toBe('Kept')
    rm(h, 'a/one.bin')
    await until(h, 'the record gone', () => h.store.records.resolveRoot(cid) === undefined)
  })

  it.each([['the first, then the copy', 'a/one.bin', 'b/two.bin'], ['the copy, then the first', 'b/two.bin', 'a/one.bin']])(
    'both deleted within one settle window (%s): the record goes, nothing is left behind', async (_, x, y) => {
      const h = await harness()
      const cid = await recorded(h, 'a/one.bin', A)
      write(h, 'b/two.bin', A)
      await duplicated(h, cid, 1)
      rm(h, x)
      // Real time on purpose: the second delete comes while the first waits out its window (OS events, real clock); no event marks that moment.
      await new Promise(resolve => setTimeout(resolve, SETTLE_MS / 4))
      rm(h, y)
      await until(h, 'the record gone', () => h.store.records.resolveRoot(cid) === undefined)
      expect(h.events().slice(2).map(e => [e.type, e.path]).sort()).toEqual([['delete', 'a/one.bin'], ['delete', 'b/two.bin']])
      expect(h.store.records.countRecords()).toBe(0)
      expect(h.watcher.status().fileCount).toBe(0)
    })

  it('a copy made and the first deleted within one settle window (cp, then rm): the record and its title stay, at the copy', async () => {
    const h = await harness()
    const cid = await recorded(h, 'a/one.bin', A)
    const rid = h.store.records.resolveRoot(cid)
    write(h, 'b/two.bin', A)
    rm(h, 'a/one.bin')
    await until(h, 'the copy recorded', () => paths(h, cid)?.[0] === '/files/b/two.bin')
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)).toMatchObject({ title: 'Kept', filePath: '/files/b/two.bin', mtimeNano: mtimeOf(h, 'b/two.bin') })
    expect(paths(h, cid)).toEqual(['/files/b/two.bin'])
    await settledScan(h, 1)
  })
})

describe('renames and moves on a real disk', () => {
  it('a rename in place, a move across folders and a moved folder: one rename each, the record kept', async () => {
    const h = await harness()
    const cid = await recorded(h, 'in/a.bin', A)
    const rid = h.store.records.resolveRoot(cid)
    move(h, 'in/a.bin', 'in/b.bin')
    await until(h, 'the rename', () => paths(h, cid)?.[0] === '/files/in/b.bin')
    move(h, 'in/b.bin', 'elsewhere/deeper/b.bin')
    await until(h, 'the move', () => paths(h, cid)?.[0] === '/files/elsewhere/deeper/b.bin')
    move(h, 'elsewhere', 'moved')
    await until(h, 'the folder moved', () => paths(h, cid)?.[0] === '/files/moved/deeper/b.bin')
    expect(h.events().slice(1).map(e => [e.type, e.oldPath, e.path])).toEqual([
      ['rename', 'in/a.bin', 'in/b.bin'],
      ['rename', 'in/b.bin', 'elsewhere/deeper/b.bin'],
      ['rename', 'elsewhere/deeper/b.bin', 'moved/deeper/b.bin']
    ])
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)?.title).toBe('Kept')
    await settledScan(h, 1)
  })

  it('the first moved away while a copy exists: the record follows it, the copy stays a duplicate', async () => {
    const h = await harness()
    const cid = await recorded(h, 'a/one.bin', A)
    write(h, 'b/two.bin', A)
    await duplicated(h, cid, 1)
    move(h, 'a/one.bin', 'c/one.bin')
    await until(h, 'the move', () => paths(h, cid)?.[0] === '/files/c/one.bin')
    expect(paths(h, cid)).toEqual(['/files/c/one.bin', '/files/b/two.bin'])
    expect(h.store.records.getFlat(cid)?.title).toBe('Kept')
    await settledScan(h, 2)
  })
})

describe('a file replaced by another file\'s bytes on a real disk', () => {
  it('written over (cp b a): the path joins b\'s record, a\'s record goes with its last copy', async () => {
    const h = await harness()
    const a = await recorded(h, 'lib/a.bin', A, 'Title A')
    const b = await recorded(h, 'lib/b.bin', B, 'Title B')
    write(h, 'lib/a.bin', B)
    await until(h, 'a.bin a copy of b', () => h.store.records.resolveRoot(a) === undefined && paths(h, b)?.length === 2)
    expect(paths(h, b)).toEqual(['/files/lib/b.bin', '/files/lib/a.bin'])
    expect(h.store.records.getFlat(b)?.title).toBe('Title B')
    await settledScan(h, 2)
  })

  it('renamed over (mv b a): b\'s record, with its title, is now at a; a\'s record goes', async () => {
    const h = await harness()
    const a = await recorded(h, 'lib/a.bin', A, 'Title A')
    const b = await recorded(h, 'lib/b.bin', B, 'Title B')
    const rid = h.store.records.resolveRoot(b)
    move(h, 'lib/b.bin', 'lib/a.bin')
    await until(h, 'b\'s record at a', () => h.store.records.resolveRoot(a) === undefined && paths(h, b)?.join() === '/files/lib/a.bin')
    expect(h.store.records.resolveRoot(b)).toBe(rid)
    expect(h.store.records.getFlat(b)).toMatchObject({ title: 'Title B', sizeByte: '5003', mtimeNano: mtimeOf(h, 'lib/a.bin') })
    expect(h.store.records.countRecords()).toBe(1)
    await settledScan(h, 1)
  })
})

describe('changes made while the node was down, on a real disk', () => {
  it('a copy made while down is found at start; the first deleted after it promotes the copy', async () => {
    const h = await harness()
    const cid = await recorded(h, 's2/f2.bin', A)
    await h.shutdown()
    write(h, 'copy/dup.bin', A)
    await h.reopen()
    await duplicated(h, cid, 1)
    rm(h, 's2/f2.bin')
    await until(h, 'the copy promoted', () => paths(h, cid)?.[0] === '/files/copy/dup.bin')
    expect(paths(h, cid)).toEqual(['/files/copy/dup.bin'])
    expect(h.store.records.getFlat(cid)?.title).toBe('Kept')
  })

  it('a copy made and the first deleted while down: the record and its title stay, at the copy', async () => {
    const h = await harness()
    const cid = await recorded(h, 's2/f2.bin', A)
    const rid = h.store.records.resolveRoot(cid)
    await h.shutdown()
    write(h, 'copy/dup.bin', A)
    rm(h, 's2/f2.bin')
    await h.reopen()
    await h.idle()
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)).toMatchObject({ title: 'Kept', filePath: '/files/copy/dup.bin', mtimeNano: mtimeOf(h, 'copy/dup.bin') })
    expect(paths(h, cid)).toEqual(['/files/copy/dup.bin'])
    await settledScan(h, 1)
  })

  it('a path known only from the records (a crash before its state row) that is gone, with a copy on disk: the record stays, at the copy', async () => {
    const h = await harness()
    await h.shutdown()
    write(h, 'copy/dup.bin', A)
    const cid = await midhashOf(h.abs('copy/dup.bin'))
    await h.reopen({ source: 'real', start: false })
    const rid = await h.store.records.mint('/files/s2/f2.bin', A.length, 1n, { [`cids/${cid}`]: 'true', [ME]: 'true', title: 'Kept' })
    await h.watcher.start()
    await h.idle()
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)).toMatchObject({ title: 'Kept', filePath: '/files/copy/dup.bin' })
    expect(paths(h, cid)).toEqual(['/files/copy/dup.bin'])
  })

  it('a copy deleted while down leaves the record at the first file', async () => {
    const h = await harness()
    const cid = await recorded(h, 'a/one.bin', A)
    write(h, 'b/two.bin', A)
    await duplicated(h, cid, 1)
    await h.shutdown()
    rm(h, 'b/two.bin')
    await h.reopen()
    await duplicated(h, cid, 0)
    expect(paths(h, cid)).toEqual(['/files/a/one.bin'])
    expect(h.store.records.getFlat(cid)?.title).toBe('Kept')
  })
})
