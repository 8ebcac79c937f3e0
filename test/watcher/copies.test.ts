/**
 * The last-copy decision when the watcher's memory of local copies and the
 * record's duplicate rows disagree. They agree in every ordinary sequence
 * (lifecycle.contract.test.ts); they part when a copy's record write commits
 * but its state row does not (a failed event write, a crash between two
 * transactions), or a duplicate row goes behind the watcher's back. Either
 * way, deleting the first file must not lose a copy that still exists, nor
 * the fields people gave the record. The scripted source lets a file exist
 * on disk without the watcher hearing of it.
 */
import fs from 'node:fs'
import { describe, expect, it } from 'vitest'
import { harnessPerTest, recordWithTitle, type Harness } from './harness.js'

const harness = harnessPerTest({ source: 'scripted' })

const ME = 'holders/node-test'
const DATA = Buffer.alloc(4097, 0x5a)

/** f2.bin recorded, with a title a person gave it; returns its midhash. */
async function recordFirst (h: Harness): Promise<string> {
  return await recordWithTitle(h, 'watch/s2/f2.bin', DATA)
}

/** Writes the copy on disk without a hint: the watcher does not know it. */
function copyUnheard (h: Harness, rel: string): fs.BigIntStats {
  fs.mkdirSync(h.abs(rel.slice(0, rel.lastIndexOf('/'))), { recursive: true })
  fs.writeFileSync(h.abs(rel), DATA)
  return fs.statSync(h.abs(rel), { bigint: true })
}

describe('a copy the record names but the watcher does not know', () => {
  it('is promoted when the first file goes, then confirmed: the record keeps its fields, and the copy stays known', async () => {
    const h = await harness()
    const cid = await recordFirst(h)
    const st = copyUnheard(h, 'watch/copy/dup.bin')
    await h.store.records.addDuplicatePath(cid, '/files/watch/copy/dup.bin') // its record write committed, its state row did not
    h.fsd.remove('watch/s2/f2.bin')
    await h.waitEvents(e => e.length === 3, 'the delete, then the copy confirmed')
    await h.idle()
    expect(h.events().slice(1).map(e => [e.type, e.path])).toEqual([['delete', 'watch/s2/f2.bin'], ['add', 'watch/copy/dup.bin']])
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata).toMatchObject({ title: 'Kept', filePath: '/files/watch/copy/dup.bin', sizeByte: '4097', mtimeNano: String(st.mtimeNs), [ME]: 'true' })
    expect(doc.duplicates).toEqual([])
    expect(h.watcher.status().fileCount).toBe(1)
    expect(await h.watcher.scan()).toEqual({ fileCount: 1, added: 0, changed: 0, deleted: 0, renamed: 0 })
    // Known now: deleting it deletes the record.
    h.fsd.remove('watch/copy/dup.bin')
    await h.waitEvents(e => e.length === 4, 'the last delete')
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
  })

  it('is promoted, found missing, and then the record goes with its last copy', async () => {
    const h = await harness()
    const cid = await recordFirst(h)
    await h.store.records.addDuplicatePath(cid, '/files/watch/copy/gone.bin') // a row naming nothing on disk
    h.fsd.remove('watch/s2/f2.bin')
    await h.waitEvents(e => e.length === 3, 'the delete of each path')
    await h.idle()
    expect(h.events().slice(1).map(e => [e.type, e.path])).toEqual([['delete', 'watch/s2/f2.bin'], ['delete', 'watch/copy/gone.bin']])
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
    expect(h.watcher.status().fileCount).toBe(0)
  })
})

describe('a copy the watcher knows but the record lost', () => {
  it('becomes filePath, with its own size and mtime, when the first file goes', async () => {
    const h = await harness()
    const cid = await recordFirst(h)
    h.fsd.write('watch/copy/dup.bin', DATA)
    await h.waitEvents(e => e.length === 2, 'the copy recorded')
    const st = fs.statSync(h.abs('watch/copy/dup.bin'), { bigint: true })
    await h.store.records.removeFilePath(cid, '/files/watch/copy/dup.bin') // the duplicate row goes behind the watcher's back
    h.fsd.remove('watch/s2/f2.bin')
    await h.waitEvents(e => e.length === 3, 'the delete')
    await h.idle()
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata).toMatchObject({ title: 'Kept', filePath: '/files/watch/copy/dup.bin', sizeByte: '4097', mtimeNano: String(st.mtimeNs), [ME]: 'true' })
    expect(doc.duplicates).toEqual([])
  })

  it('is written back as a duplicate when another copy of the content goes', async () => {
    const h = await harness()
    const cid = await recordFirst(h)
    h.fsd.write('watch/copy/a.bin', DATA)
    h.fsd.write('watch/copy/b.bin', DATA)
    await h.waitEvents(e => e.length === 3, 'two copies recorded')
    await h.store.records.removeFilePath(cid, '/files/watch/copy/b.bin')
    h.fsd.remove('watch/copy/a.bin')
    await h.waitEvents(e => e.length === 4, 'the delete')
    await h.idle()
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata.filePath).toBe('/files/watch/s2/f2.bin')
    expect(doc.duplicates).toEqual(['/files/watch/copy/b.bin'])
  })
})
