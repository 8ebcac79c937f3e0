import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { openNodeStore } from '../../src/records/index.js'
import { createWatcher } from '../../src/watcher/index.js'
import { tmpDir } from '../helpers/tmp.js'
import { harnessPerTest, midhashOf } from './harness.js'

const harness = harnessPerTest({ source: 'scripted' })

const ME = 'holders/node-test'

describe('holders (replication.md)', () => {
  it('when our last copy goes but another node holds the content, only our holder member goes', async () => {
    const h = await harness()
    h.fsd.write('film.mkv', 'shared across nodes')
    await h.waitEvents(e => e.length === 1, 'the add')
    const cid = await midhashOf(h.abs('film.mkv'))
    await h.store.records.mergeFlat(cid, { 'holders/peer-b': 'true', title: 'Film' })
    h.fsd.remove('film.mkv')
    await h.waitEvents(e => e.length === 2, 'the delete')
    await h.idle()
    const flat = h.store.records.getFlat(cid)!
    expect(flat[ME]).toBeUndefined()
    expect(flat).toMatchObject({ 'holders/peer-b': 'true', title: 'Film' })
  })

  it('known content written through the API first gets our filePath and holder, with no new root', async () => {
    const h = await harness()
    const outside = path.join(h.root, 'outside.bin') // same bytes, not in the library
    fs.writeFileSync(outside, 'gateway content')
    const cid = await midhashOf(outside)
    const { rid } = await h.store.records.mergeFlat(cid, { title: 'From a gateway' })
    h.fsd.write('lib/gw.bin', 'gateway content')
    await h.waitEvents(e => e.length === 1, 'the add')
    expect(h.store.records.resolveRoot(cid)).toBe(rid)
    expect(h.store.records.getFlat(cid)).toMatchObject({ title: 'From a gateway', filePath: '/files/lib/gw.bin', sizeByte: '15', [ME]: 'true' })
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('a record whose last holder member is cleared is no record, and the watcher\'s later delete writes nothing', async () => {
    const h = await harness()
    h.fsd.write('kept.bin', 'api owned')
    await h.waitEvents(e => e.length === 1, 'the add')
    const cid = await midhashOf(h.abs('kept.bin'))
    const rid = h.store.records.resolveRoot(cid)!
    // The merged state then says no node holds the bytes (replication.md): the root stops being a record.
    await h.store.records.deleteProperty(cid, ME)
    expect(h.store.records.resolveRoot(cid)).toBeUndefined()
    expect(h.store.records.countRecords()).toBe(0)
    h.fsd.remove('kept.bin')
    await h.waitEvents(e => e.length === 2, 'the delete')
    await h.idle()
    expect(h.events()[1]).toMatchObject({ type: 'delete', path: 'kept.bin' })
    // Never a root tombstone: the root keeps its fields, so a holder another node adds brings it back whole.
    expect(h.store.records.readChangeLog(undefined, 1000).some(e => e.key === `file:${rid}`)).toBe(false)
    expect(h.store.kv.get(`file:${rid}/sizeByte`)).toBe('9')
  })

  it('uses the configured holder id (a mesh peer id) instead of the node id', async () => {
    const t = tmpDir()
    const store = openNodeStore({ path: path.join(t.dir, 'm.db'), nodeId: 'node-x' })
    const files = path.join(t.dir, 'files')
    const w = createWatcher({ records: store.records }, { filesPath: files, enabled: false, holderId: '12D3KooWPeer' })
    try {
      await w.start()
      fs.mkdirSync(path.join(files, 'plugin'), { recursive: true })
      fs.writeFileSync(path.join(files, 'plugin/x'), 'x')
      const r = await w.registerFile('plugin/x')
      expect(store.records.getFlat(r.cid)).toMatchObject({ 'holders/12D3KooWPeer': 'true' })
      expect(() => createWatcher({ records: store.records }, { filesPath: files, holderId: 'a/b' })).toThrow(/holderId/)
    } finally {
      await w.stop()
      store.close()
      t.cleanup()
    }
  })
})
