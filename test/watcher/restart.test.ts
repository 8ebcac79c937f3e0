import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { FILE_EVENTS, WATCH_STATE_PREFIX } from '../../src/watcher/index.js'
import { prefixEnd } from '../../src/kv/index.js'
import { midhashOf, openHarness, shapes, type Harness } from './harness.js'

const open: Harness[] = []
afterEach(async () => { while (open.length > 0) await open.pop()!.close() })

async function harness (): Promise<Harness> {
  const h = await openHarness({ source: 'scripted' })
  open.push(h)
  return h
}

describe('boot hydration', () => {
  it('after a restart: unchanged files cause no event and no hashing; changes made while down are announced', async () => {
    const h = await harness()
    for (const [rel, body] of [['keep.mkv', 'kept'], ['edit.mkv', 'before edit'], ['drop.mkv', 'to be deleted'], ['move/from.mkv', 'to be moved']]) {
      h.fsd.write(rel, body)
    }
    await h.waitEvents(e => e.length === 4, 'four adds')
    await h.idle()
    const movedCid = await midhashOf(h.abs('move/from.mkv'))
    const movedRoot = h.store.records.resolveRoot(movedCid)
    const dropCid = await midhashOf(h.abs('drop.mkv'))
    await h.shutdown()

    // While the node is down.
    fs.writeFileSync(h.abs('edit.mkv'), 'after the edit')
    fs.rmSync(h.abs('drop.mkv'))
    fs.mkdirSync(h.abs('moved'))
    fs.renameSync(h.abs('move/from.mkv'), h.abs('moved/to.mkv'))
    fs.writeFileSync(h.abs('new.mkv'), 'arrived while down')

    await h.reopen()
    await h.idle()
    const after = shapes(h.events()).slice(4)
    const byType = after.map(e => `${e.type} ${e.oldPath !== undefined ? e.oldPath + ' -> ' : ''}${e.path}`).sort()
    expect(byType).toEqual(['add new.mkv', 'change edit.mkv', 'delete drop.mkv', 'rename move/from.mkv -> moved/to.mkv'])
    // keep.mkv was neither announced nor read again: only the three changed files were hashed.
    expect(h.watcher.status().progress.filesHashed).toBe(3)
    expect(h.store.records.resolveRoot(movedCid)).toBe(movedRoot)
    expect(h.store.records.resolveRoot(dropCid)).toBeUndefined()
    expect(h.store.records.countRecords()).toBe(4)
    expect(h.watcher.status().fileCount).toBe(4)
  })

  it('a restart with nothing changed writes nothing at all', async () => {
    const h = await harness()
    h.fsd.write('a.bin', 'a')
    h.fsd.write('b/c.bin', 'c')
    await h.waitEvents(e => e.length === 2, 'two adds')
    await h.idle()
    const head = h.store.kv.streamHead('meta:events')
    await h.shutdown()
    await h.reopen()
    await h.idle()
    expect(h.events()).toHaveLength(2)
    expect(h.store.kv.streamHead('meta:events')).toBe(head)
    expect(h.watcher.status().progress).toMatchObject({ phase: 'idle', filesSeen: 2, filesHashed: 0 })
  })

  it('recovers a record written without its event and state row (a crash between the two)', async () => {
    const h = await harness()
    h.fsd.write('keep.bin', 'kept')
    await h.waitEvents(e => e.length === 1, 'the add')
    await h.idle()
    await h.shutdown()
    // What a crash after the record's commit but before the event's would leave: a minted record, no event, no row.
    fs.writeFileSync(h.abs('orphan.bin'), 'minted, never announced')
    fs.writeFileSync(h.abs('orphan-gone.bin'), 'minted, then deleted while down')
    await h.reopen({ source: 'scripted', start: false })
    for (const rel of ['orphan.bin', 'orphan-gone.bin']) {
      const st = fs.statSync(h.abs(rel), { bigint: true })
      const cid = await midhashOf(h.abs(rel))
      await h.store.records.mint(`/files/${rel}`, Number(st.size), st.mtimeNs, { [`cids/${cid}`]: 'true', 'holders/node-test': 'true' })
    }
    const goneCid = await midhashOf(h.abs('orphan-gone.bin'))
    fs.rmSync(h.abs('orphan-gone.bin'))
    await h.watcher.start()
    await h.idle()
    expect(shapes(h.events()).slice(1).map(e => `${e.type} ${e.path}`).sort()).toEqual(['add orphan.bin', 'delete orphan-gone.bin'])
    expect(h.store.records.resolveRoot(goneCid)).toBeUndefined()
    expect(h.store.records.countRecords()).toBe(2)
    expect(h.store.kv.keys(WATCH_STATE_PREFIX, prefixEnd(WATCH_STATE_PREFIX)).sort()).toEqual([`${WATCH_STATE_PREFIX}keep.bin`,
      `${WATCH_STATE_PREFIX}orphan.bin`])
  })
})

describe('reset', () => {
  it('clears file:events to one reset entry, then re-announces every file as add without minting', async () => {
    const h = await harness()
    h.fsd.write('a.mkv', 'alpha')
    h.fsd.write('b/a-copy.mkv', 'alpha')
    h.fsd.write('c.mkv', 'gamma')
    await h.waitEvents(e => e.length === 3, 'three adds')
    await h.idle()
    const roots = h.store.records.listRoots()
    expect(roots).toHaveLength(2)
    const before = h.store.kv.streamHead(FILE_EVENTS)!

    const summary = await h.watcher.reset()
    await h.idle()
    expect(summary).toEqual({ fileCount: 3, added: 3, changed: 0, deleted: 0, renamed: 0 })
    const evs = h.store.kv.readStream(FILE_EVENTS, undefined, 100)
    expect(evs[0].fields).toEqual({ type: 'reset', path: '', watcherId: 'files', timestamp: expect.stringMatching(/^\d+$/) })
    expect(evs[0].id > before).toBe(true)
    expect(evs.slice(1).map(e => `${e.fields.type} ${e.fields.path}`).sort()).toEqual(['add a.mkv', 'add b/a-copy.mkv', 'add c.mkv'])
    expect(h.store.records.listRoots()).toEqual(roots)
    expect(h.watcher.status().progress.filesHashed).toBe(3)
  })

  it('a reset interrupted by a crash still re-announces everything on the next boot', async () => {
    const h = await harness()
    h.fsd.write('x.mkv', 'x')
    await h.waitEvents(e => e.length === 1, 'the add')
    await h.idle()
    await h.shutdown()
    await h.reopen({ source: 'scripted', start: false })
    // The reset's own transaction, then a crash before the rescan.
    await h.store.kv.write(tx => {
      tx.clearStream(FILE_EVENTS)
      tx.appendEvent(FILE_EVENTS, { type: 'reset', path: '', watcherId: 'files', timestamp: String(Date.now()) })
      for (const k of tx.keys(WATCH_STATE_PREFIX, prefixEnd(WATCH_STATE_PREFIX))) tx.delete(k)
    })
    await h.watcher.start()
    await h.idle()
    expect(shapes(h.events())).toEqual([
      { type: 'reset', path: '', watcherId: 'files' },
      { type: 'add', path: 'x.mkv', size: '1', midhash256: await midhashOf(h.abs('x.mkv')) }
    ])
    expect(h.store.records.countRecords()).toBe(1)
  })
})
