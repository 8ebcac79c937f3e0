/**
 * The record lifecycle, run once with OS events and once with scripted
 * events (architecture habit 10): both must lead the one state machine to
 * the same records and the same file:events. The OS run is real time on a
 * real folder; the scripted run gives the watcher a virtual clock (its
 * settle windows pass as the test waits).
 */
import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { midhashOf, openHarness, recordWithTitle, rewrite, shapes, type Harness, type SourceKind } from './harness.js'

const open: Harness[] = []
afterEach(async () => { while (open.length > 0) await open.pop()!.close() })

async function harness (kind: SourceKind, settleMs?: number): Promise<Harness> {
  // Scripted hints run on a virtual clock (settle windows pass as the test waits); OS events on real time, as they must.
  const h = await openHarness({ source: kind, clock: kind === 'scripted' ? 'virtual' : 'real', ...(settleMs !== undefined ? { settleMs } : {}) })
  open.push(h)
  await h.idle()
  return h
}

const HOLDER = 'holders/node-test'
const DATA_4097 = Buffer.alloc(4097, 0x5a)


describe.each(['real', 'scripted'] as const)('watcher lifecycle (%s events)', (kind) => {
  it('records a new file: one root with filePath, size, mtime, midhash alias and holder, and an add event', async () => {
    const h = await harness(kind)
    h.fsd.write('watch/movies/a.mkv', 'first movie')
    const evs = await h.waitEvents(e => e.length >= 1, 'the add event')
    const cid = await midhashOf(h.abs('watch/movies/a.mkv'))
    const st = fs.statSync(h.abs('watch/movies/a.mkv'), { bigint: true })
    expect(shapes(evs)).toEqual([{ type: 'add', path: 'watch/movies/a.mkv', size: '11', midhash256: cid }])
    expect(evs[0].timestamp).toMatch(/^\d{13}$/)
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata).toEqual({
      filePath: '/files/watch/movies/a.mkv',
      sizeByte: '11',
      mtimeNano: String(st.mtimeNs),
      [`cids/${cid}`]: 'true',
      [HOLDER]: 'true'
    })
    expect(doc.duplicates).toEqual([])
    expect(h.store.records.countRecords()).toBe(1)
    await h.idle()
    expect(h.watcher.status().fileCount).toBe(1)
  })

  it('a change re-hashes: the path moves to a record of the new content and the old one goes', async () => {
    const h = await harness(kind)
    h.fsd.write('a.txt', 'version one')
    await h.waitEvents(e => e.length === 1, 'the add')
    const oldCid = await midhashOf(h.abs('a.txt'))
    rewrite(h, 'a.txt', 'version two, longer')
    const evs = await h.waitEvents(e => e.length === 2, 'the change')
    const newCid = await midhashOf(h.abs('a.txt'))
    expect(shapes(evs)[1]).toEqual({ type: 'change', path: 'a.txt', size: '19', midhash256: newCid })
    expect(h.store.records.resolveRoot(oldCid)).toBeUndefined()
    expect(h.store.records.getFlat(newCid)).toMatchObject({ filePath: '/files/a.txt', sizeByte: '19', [HOLDER]: 'true' })
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('bytes changed in place: the new content\'s record takes over the fields people and plugins added; the old CIDs stop resolving', async () => {
    const h = await harness(kind)
    h.fsd.write('movies/film.mkv', 'the film with a wrong title tag')
    await h.waitEvents(e => e.length === 1, 'the add')
    const oldCid = await midhashOf(h.abs('movies/film.mkv'))
    const oldSha = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e' // a plugin's full hash of the old bytes
    await h.store.records.mergeFlat(oldCid, { title: 'The Film', 'tmdb/id': '603', 'titles/fr': 'Le Film', [`cids/${oldSha}`]: 'true' })
    rewrite(h, 'movies/film.mkv', 'the film with the title tag fixed')
    await h.waitEvents(e => e.length === 2, 'the change')
    const newCid = await midhashOf(h.abs('movies/film.mkv'))
    const fields = h.store.records.getFlat(newCid)!
    expect(fields).toMatchObject({
      title: 'The Film', 'tmdb/id': '603', 'titles/fr': 'Le Film',
      filePath: '/files/movies/film.mkv', sizeByte: '33', [HOLDER]: 'true', [`cids/${newCid}`]: 'true'
    })
    expect(Object.keys(fields).filter(f => f.startsWith('cids/'))).toEqual([`cids/${newCid}`]) // CIDs name bytes: none carried over
    expect(h.store.records.resolveRoot(oldCid)).toBeUndefined()
    expect(h.store.records.resolveRoot(oldSha)).toBeUndefined()
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('bytes changed in place while another copy keeps the old content: both records carry the fields, the old one stays', async () => {
    const h = await harness(kind)
    h.fsd.write('a.mkv', 'shared original bytes')
    await h.waitEvents(e => e.length === 1, 'the first add')
    h.fsd.write('b.mkv', 'shared original bytes')
    await h.waitEvents(e => e.length === 2, 'the copy')
    const oldCid = await midhashOf(h.abs('a.mkv'))
    await h.store.records.mergeFlat(oldCid, { title: 'Shared' })
    rewrite(h, 'a.mkv', 'edited bytes of a only')
    await h.waitEvents(e => e.length === 3, 'the change')
    const newCid = await midhashOf(h.abs('a.mkv'))
    expect(h.store.records.getFlat(newCid)).toMatchObject({ title: 'Shared', filePath: '/files/a.mkv' })
    const old = h.store.records.getDocument(oldCid)!
    expect(old.metadata).toMatchObject({ title: 'Shared', filePath: '/files/b.mkv' })
    expect(old.duplicates).toEqual([])
    expect(h.store.records.countRecords()).toBe(2)
  })

  it('bytes changed in place to content that already has a record: that record keeps its own fields', async () => {
    const h = await harness(kind)
    h.fsd.write('a.mkv', 'content A')
    h.fsd.write('c.mkv', 'content C')
    await h.waitEvents(e => e.length === 2, 'two adds')
    const cidA = await midhashOf(h.abs('a.mkv'))
    const cidC = await midhashOf(h.abs('c.mkv'))
    await h.store.records.mergeFlat(cidA, { title: 'A' })
    await h.store.records.mergeFlat(cidC, { title: 'C' })
    rewrite(h, 'a.mkv', 'content C')
    await h.waitEvents(e => e.length === 3, 'the change')
    expect(h.store.records.getDocument(cidC)!.metadata.title).toBe('C')
    expect(h.store.records.getDocument(cidC)!.duplicates).toEqual(['/files/a.mkv'])
    expect(h.store.records.resolveRoot(cidA)).toBeUndefined()
  })

  it('a change to content another file already holds makes the path a duplicate of that record', async () => {
    const h = await harness(kind)
    h.fsd.write('a.txt', 'content A')
    h.fsd.write('b.txt', 'content B')
    await h.waitEvents(e => e.length === 2, 'two adds')
    const cidA = await midhashOf(h.abs('a.txt'))
    const cidB = await midhashOf(h.abs('b.txt'))
    rewrite(h, 'a.txt', 'content B')
    const evs = await h.waitEvents(e => e.length === 3, 'the change')
    expect(shapes(evs)[2]).toEqual({ type: 'change', path: 'a.txt', size: '9', midhash256: cidB })
    expect(h.store.records.resolveRoot(cidA)).toBeUndefined()
    const doc = h.store.records.getDocument(cidB)!
    expect(doc.metadata.filePath).toBe('/files/b.txt')
    expect(doc.duplicates).toEqual(['/files/a.txt'])
  })

  it('a touch (same bytes, new mtime) is a change that refreshes mtimeNano on the same record', async () => {
    const h = await harness(kind)
    h.fsd.write('t.bin', 'unchanged bytes')
    await h.waitEvents(e => e.length === 1, 'the add')
    const cid = await midhashOf(h.abs('t.bin'))
    const rid = h.store.records.resolveRoot(cid)
    const later = new Date(Date.now() + 60_000)
    fs.utimesSync(h.abs('t.bin'), later, later)
    h.fsd.append('t.bin', '') // the hint a touch would give
    const evs = await h.waitEvents(e => e.length === 2, 'the change')
    expect(shapes(evs)[1]).toEqual({ type: 'change', path: 't.bin', size: '15', midhash256: cid })
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)!.mtimeNano).toBe(String(fs.statSync(h.abs('t.bin'), { bigint: true }).mtimeNs))
  })

  it('a move is one rename event and keeps the record (no new root)', async () => {
    const h = await harness(kind)
    h.fsd.write('in/x.bin', 'moving content')
    await h.waitEvents(e => e.length === 1, 'the add')
    const cid = await midhashOf(h.abs('in/x.bin'))
    const rid = h.store.records.resolveRoot(cid)
    h.fsd.rename('in/x.bin', 'out/y.bin')
    const evs = await h.waitEvents(e => e.length >= 2, 'the rename')
    await h.idle()
    expect(shapes(h.events())).toEqual([
      { type: 'add', path: 'in/x.bin', size: '14', midhash256: cid },
      { type: 'rename', path: 'out/y.bin', oldPath: 'in/x.bin', size: '14', midhash256: cid }
    ])
    expect(evs).toHaveLength(2)
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)).toMatchObject({ filePath: '/files/out/y.bin', [HOLDER]: 'true' })
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('a moved folder renames every file in it', async () => {
    const h = await harness(kind)
    h.fsd.write('show/s1/e1.mkv', 'episode one')
    h.fsd.write('show/s1/e2.mkv', 'episode two')
    await h.waitEvents(e => e.length === 2, 'two adds')
    const roots = [h.store.records.resolveRoot(await midhashOf(h.abs('show/s1/e1.mkv'))), h.store.records.resolveRoot(await midhashOf(h.abs('show/s1/e2.mkv')))]
    h.fsd.rename('show/s1', 'show/season-1')
    await h.waitEvents(e => e.length === 4, 'two renames')
    await h.idle()
    const renames = shapes(h.events()).slice(2).map(e => [e.type, e.oldPath, e.path]).sort()
    expect(renames).toEqual([
      ['rename', 'show/s1/e1.mkv', 'show/season-1/e1.mkv'],
      ['rename', 'show/s1/e2.mkv', 'show/season-1/e2.mkv']
    ])
    expect(h.store.records.resolveRoot(await midhashOf(h.abs('show/season-1/e1.mkv')))).toBe(roots[0])
    expect(h.store.records.resolveRoot(await midhashOf(h.abs('show/season-1/e2.mkv')))).toBe(roots[1])
  })

  it('deleting the only copy deletes the record', async () => {
    const h = await harness(kind)
    h.fsd.write('gone.txt', 'short lived')
    await h.waitEvents(e => e.length === 1, 'the add')
    const cid = await midhashOf(h.abs('gone.txt'))
    h.fsd.remove('gone.txt')
    const evs = await h.waitEvents(e => e.length === 2, 'the delete')
    expect(shapes(evs)[1]).toEqual({ type: 'delete', path: 'gone.txt' })
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
    expect(h.store.records.countRecords()).toBe(0)
    await h.idle()
    expect(h.watcher.status().fileCount).toBe(0)
  })

  it('two copies of one content are one record with a duplicate; removing a copy keeps the record', async () => {
    const h = await harness(kind)
    h.fsd.write('a/one.mkv', 'same bytes')
    await h.waitEvents(e => e.length === 1, 'the first add')
    h.fsd.write('b/two.mkv', 'same bytes')
    await h.waitEvents(e => e.length === 2, 'the second add')
    const cid = await midhashOf(h.abs('a/one.mkv'))
    expect(shapes(h.events())[1]).toEqual({ type: 'add', path: 'b/two.mkv', size: '10', midhash256: cid })
    expect(h.store.records.countRecords()).toBe(1)
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata.filePath).toBe('/files/a/one.mkv')
    expect(doc.duplicates).toEqual(['/files/b/two.mkv'])

    h.fsd.remove('b/two.mkv')
    await h.waitEvents(e => e.length === 3, 'the delete of the copy')
    const after = h.store.records.getDocument(cid)!
    expect(after.metadata.filePath).toBe('/files/a/one.mkv')
    expect(after.metadata[HOLDER]).toBe('true')
    expect(after.duplicates).toEqual([])
  })

  it('removing the main path promotes a duplicate to filePath', async () => {
    const h = await harness(kind)
    h.fsd.write('main.bin', 'shared content')
    await h.waitEvents(e => e.length === 1, 'the first add')
    h.fsd.write('copy.bin', 'shared content')
    await h.waitEvents(e => e.length === 2, 'the second add')
    const cid = await midhashOf(h.abs('main.bin'))
    const rid = h.store.records.resolveRoot(cid)
    h.fsd.remove('main.bin')
    await h.waitEvents(e => e.length === 3, 'the delete')
    expect(shapes(h.events())[2]).toEqual({ type: 'delete', path: 'main.bin' })
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata.filePath).toBe('/files/copy.bin')
    expect(doc.duplicates).toEqual([])
    h.fsd.remove('copy.bin')
    await h.waitEvents(e => e.length === 4, 'the last delete')
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
  })

  it('a copy made in another folder after the first was recorded takes over when the first is deleted live, and after a restart', async () => {
    const h = await harness(kind)
    const data = Buffer.alloc(4097, 0x5a)
    h.fsd.write('watch/s2/f2.bin', data)
    await h.waitEvents(e => e.length === 1, 'the first add')
    const cid = await midhashOf(h.abs('watch/s2/f2.bin'))
    h.fsd.mkdir('watch/copy')
    h.fsd.write('watch/copy/dup.bin', data)
    await h.waitEvents(e => e.length === 2, 'the copy recorded')
    expect(h.store.records.getDocument(cid)!.duplicates).toEqual(['/files/watch/copy/dup.bin'])
    h.fsd.remove('watch/s2/f2.bin')
    await h.waitEvents(e => e.length === 3, 'the delete')
    await h.idle()
    const doc = h.store.records.getDocument(cid)!
    expect(doc.metadata.filePath).toBe('/files/watch/copy/dup.bin')
    expect(doc.duplicates).toEqual([])
    expect(h.store.records.countRecords()).toBe(1)
    // sizeByte and mtimeNano describe the promoted file, not the deleted one.
    const st = fs.statSync(h.abs('watch/copy/dup.bin'), { bigint: true })
    expect(doc.metadata).toMatchObject({ sizeByte: '4097', mtimeNano: String(st.mtimeNs) })
    // The promoted copy is served, and a rescan finds nothing to change.
    expect(await h.watcher.scan()).toEqual({ fileCount: 1, added: 0, changed: 0, deleted: 0, renamed: 0 })
    // After a restart the copy is still known: deleting it too deletes the record.
    await h.shutdown()
    await h.reopen()
    await h.idle()
    h.fsd.remove('watch/copy/dup.bin')
    await h.waitEvents(e => e.length === 4, 'the last delete')
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
  })

  it('a copy made and the first deleted within one settle window keeps the record and its fields, at the copy', async () => {
    const h = await harness(kind)
    const cid = await recordWithTitle(h, 'watch/s2/f2.bin', DATA_4097)
    const rid = h.store.records.resolveRoot(cid)
    h.fsd.write('watch/copy/dup.bin', DATA_4097)
    h.fsd.remove('watch/s2/f2.bin')
    await h.waitEvents(e => e.length === 2, 'the move to the copy')
    await h.idle()
    expect(shapes(h.events())[1]).toEqual({ type: 'rename', oldPath: 'watch/s2/f2.bin', path: 'watch/copy/dup.bin', size: '4097', midhash256: cid })
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getDocument(cid)!.metadata).toMatchObject({ title: 'Kept', filePath: '/files/watch/copy/dup.bin', [HOLDER]: 'true' })
  })

  it('a copy made and the first deleted while the node was down keeps the record and its fields, at the copy', async () => {
    const h = await harness(kind)
    const cid = await recordWithTitle(h, 'watch/s2/f2.bin', DATA_4097)
    await h.shutdown()
    fs.mkdirSync(h.abs('watch/copy'), { recursive: true })
    fs.writeFileSync(h.abs('watch/copy/dup.bin'), DATA_4097)
    fs.rmSync(h.abs('watch/s2/f2.bin'))
    await h.reopen()
    await h.idle()
    expect(shapes(h.events()).slice(1)).toEqual([{ type: 'rename', oldPath: 'watch/s2/f2.bin', path: 'watch/copy/dup.bin', size: '4097', midhash256: cid }])
    expect(h.store.records.getDocument(cid)!.metadata).toMatchObject({ title: 'Kept', filePath: '/files/watch/copy/dup.bin', [HOLDER]: 'true' })
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('a file written slowly over several seconds is recorded once, whole', async () => {
    // Writes 250 ms apart for 2.5 s against an 800 ms settle window: no pause is long enough to pass for finished.
    const h = await harness(kind, 800)
    const chunk = 'x'.repeat(4096)
    h.fsd.write('slow/big.bin', chunk)
    for (let i = 1; i < 10; i++) {
      await h.pause(250)
      expect(h.events()).toEqual([])
      h.fsd.append('slow/big.bin', chunk)
    }
    const evs = await h.waitEvents(e => e.length >= 1, 'the add of the finished file')
    await h.idle()
    const cid = await midhashOf(h.abs('slow/big.bin'))
    expect(shapes(h.events())).toEqual([{ type: 'add', path: 'slow/big.bin', size: String(10 * 4096), midhash256: cid }])
    expect(evs).toHaveLength(1)
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('skips hidden files and hidden folders', async () => {
    const h = await harness(kind)
    h.fsd.write('.partial.mkv', 'hidden')
    h.fsd.write('.cache/thumb.jpg', 'hidden folder')
    h.fsd.write('dir/.DS_Store', 'hidden too')
    h.fsd.write('dir/visible.txt', 'visible')
    await h.waitEvents(e => e.length >= 1, 'the visible add')
    await h.idle()
    await h.watcher.scan()
    expect(h.events().map(e => e.path)).toEqual(['dir/visible.txt'])
    expect(h.watcher.status().fileCount).toBe(1)
  })
})
