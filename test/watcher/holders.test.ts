import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { RecordReplica } from '../../src/mesh/replica-store.js'
import { openNodeStore } from '../../src/records/index.js'
import { createWatcher } from '../../src/watcher/index.js'
import { tmpDir } from '../helpers/tmp.js'
import { harnessPerTest, midhashOf } from './harness.js'

const harness = harnessPerTest({ source: 'scripted' })

const ME = 'holders/node-test'

describe('holders (docs/design/mesh-rules.md#the-deletion-rule)', () => {
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
    // The merged state then says no node holds the bytes (docs/design/mesh-rules.md#the-deletion-rule): the root stops being a record.
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

describe('holders and the byte cache (byte-cache.ts)', () => {
  it('our last library copy going while the cache keeps the bytes keeps our member; the cache letting go takes it', async () => {
    const h = await harness()
    h.fsd.write('film.mkv', 'kept in the cache too')
    await h.waitEvents(e => e.length === 1, 'the add')
    const cid = await midhashOf(h.abs('film.mkv'))
    const rid = h.store.records.resolveRoot(cid)!
    await h.store.records.mergeFlat(cid, { 'holders/peer-b': 'true' })
    expect(await h.store.records.holdCachedCopy(cid, 'node-test')).toBe(rid)
    h.fsd.remove('film.mkv')
    await h.waitEvents(e => e.length === 2, 'the delete')
    await h.idle()
    expect(h.store.records.getFlat(cid)?.[ME]).toBe('true')
    expect(h.store.records.ownLocation(cid)).toBeUndefined()
    expect((await h.store.records.releaseCachedCopy(rid, 'node-test')).kind).toBe('released')
    expect(h.store.records.getFlat(cid)).toMatchObject({ 'holders/peer-b': 'true' })
    expect(h.store.records.getFlat(cid)?.[ME]).toBeUndefined()
  })

  it('a record held only through the cache names a peer\'s path: a restart announces nothing for it', async () => {
    const h = await harness()
    h.fsd.write('mine.mkv', 'ours')
    await h.waitEvents(e => e.length === 1, 'the add')
    await h.idle()
    await h.shutdown()
    await h.reopen({ source: 'scripted', start: false })
    // A peer's record (its path under /files/ is not on our disk), learnt through the mesh's apply path.
    const t = tmpDir()
    const peer = openNodeStore({ path: path.join(t.dir, 'peer.db'), nodeId: 'peer-b' })
    try {
      const outside = path.join(t.dir, 'film.mkv') // the peer's bytes, nowhere in our library
      fs.writeFileSync(outside, 'the peer\'s film')
      const cid = await midhashOf(outside)
      await peer.records.mint('/files/their/film.mkv', 16, 1, { [`cids/${cid}`]: 'true', 'holders/peer-b': 'true' })
      await new RecordReplica(h.store.records).apply(peer.records.changesSince(undefined, { limit: 100 }).changes)
      await h.store.records.holdCachedCopy(cid, 'node-test')
      await h.watcher.start()
      await h.idle()
      expect(h.events()).toHaveLength(1)
      expect(h.store.records.getFlat(cid)?.[ME]).toBe('true')
    } finally {
      peer.close()
      t.cleanup()
    }
  })
})
