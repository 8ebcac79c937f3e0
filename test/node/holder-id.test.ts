/**
 * A standalone store joining a mesh: the watcher's holder members follow
 * the node id from `node-…` to the peer id (and back if it leaves), written
 * as ordinary versioned changes, and a second start moves nothing; a
 * store copied from another node keeps that node's holders as they are.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { adoptHolderId, checkStoreIdentity } from '../../src/node/holder-id.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'

const t = tmpDir()
const open: NodeStore[] = []
afterEach(() => { while (open.length > 0) open.pop()!.close() })

function store (nodeId?: string): NodeStore {
  const s = openNodeStore({ path: path.join(t.dir, 'h.db'), nodeId, backgroundCheckpoint: false })
  open.push(s)
  return s
}

describe('holder members follow the node id', () => {
  it('moves this node\'s holders/<id> members when the id changes, and only those', async () => {
    const standalone = store()
    const oldId = standalone.records.nodeId
    expect(oldId).toMatch(/^node-/)
    expect(await adoptHolderId(standalone, silentLogger)).toBe(0)
    const mine = await standalone.records.mint('/files/a.mkv', 1, 1, { [`cids/${testCid(1)}`]: 'true', [`holders/${oldId}`]: 'true' })
    const shared = await standalone.records.mint('/files/b.mkv', 1, 1, { [`cids/${testCid(2)}`]: 'true', [`holders/${oldId}`]: 'true',
      'holders/peer-far': 'true' })
    const notMine = await standalone.records.mint('/files/c.mkv', 1, 1, { [`cids/${testCid(3)}`]: 'true', 'holders/peer-far': 'true' })
    standalone.close()
    open.pop()

    const peerId = '12D3KooWRm8J3iL796zPFi2EtGGtUJn58AG67gcqzMFHZnnsTzqD'
    const meshed = store(peerId)
    expect(await adoptHolderId(meshed, silentLogger)).toBe(2)
    const holders = (rid: string): string[] => Object.keys(meshed.records.getFlat(rid)!).filter(f => f.startsWith('holders/')).sort()
    expect(holders(mine)).toEqual([`holders/${peerId}`])
    expect(holders(shared)).toEqual([`holders/${peerId}`, 'holders/peer-far'])
    expect(holders(notMine)).toEqual(['holders/peer-far'])
    // The move is versioned by this node, so peers learn it.
    expect(meshed.kv.get(`ver:${mine}`)).toContain(peerId)
    expect(await adoptHolderId(meshed, silentLogger)).toBe(0)
    meshed.close()
    open.pop()

    // Leaving the mesh (its identity key file still names the peer id) moves them back to the standalone id.
    const again = store()
    expect(again.records.nodeId).toBe(oldId)
    expect(await adoptHolderId(again, silentLogger, { keyPeerId: async () => peerId })).toBe(2)
    expect(Object.keys(again.records.getFlat(mine)!).filter(f => f.startsWith('holders/'))).toEqual([`holders/${oldId}`])
  })

  it('recognises a store copied from another node: its holders are neither taken over nor released, the copy\'s local paths go', async () => {
    const peerA = '12D3KooWRm8J3iL796zPFi2EtGGtUJn58AG67gcqzMFHZnnsTzqD'
    const a = openNodeStore({ path: path.join(t.dir, 'a.db'), nodeId: peerA, backgroundCheckpoint: false })
    expect(await adoptHolderId(a, silentLogger)).toBe(0)
    const cid = testCid(7)
    const rid = await a.records.mint('/files/a.mkv', 1, 1, { [`cids/${cid}`]: 'true', [`holders/${peerA}`]: 'true' })
    await a.records.addDuplicatePath(cid, '/files/copy/a.mkv')
    a.close()
    fs.copyFileSync(path.join(t.dir, 'a.db'), path.join(t.dir, 'c.db'))
    const peerC = '12D3KooWJbeZd8CDhmQvGYDpb3fcAXR6g1fR7aM2ChUcTgLsZQ6W'
    const c = openNodeStore({ path: path.join(t.dir, 'c.db'), nodeId: peerC, backgroundCheckpoint: false })
    open.push(c)
    // C's own key file names C, not A: the store is a copy.
    const r = await checkStoreIdentity(c, silentLogger, { keyPeerId: async () => peerC })
    expect(r).toEqual({ moved: 0, copiedFrom: peerA })
    expect(c.kv.get('meta-core:copied-from')).toBe(peerA)
    expect(c.records.getFlat(rid)).toMatchObject({ [`holders/${peerA}`]: 'true' })
    expect(c.records.getFlat(rid)![`holders/${peerC}`]).toBeUndefined()
    expect(c.records.duplicatesOf(rid)).toEqual([])
    // C's watcher, not finding A's files on its own disk, releases nothing of A's.
    expect((await c.records.releaseCopy(cid, '/files/a.mkv', peerC)).kind).toBe('released')
    expect(c.records.resolveRoot(cid)).toBe(rid)
    expect(c.records.getFlat(rid)).toMatchObject({ [`holders/${peerA}`]: 'true' })
    // The next start is an ordinary one.
    expect(await checkStoreIdentity(c, silentLogger)).toEqual({ moved: 0 })
  })
})
