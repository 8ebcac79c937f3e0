/**
 * A standalone store joining a mesh: the watcher's holder members follow
 * the node id from `node-…` to the peer id (and back if it leaves), written
 * as ordinary versioned changes, and a second start moves nothing.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { adoptHolderId } from '../../src/node/holder-id.js'
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
    const shared = await standalone.records.mint('/files/b.mkv', 1, 1, { [`cids/${testCid(2)}`]: 'true', [`holders/${oldId}`]: 'true', 'holders/peer-far': 'true' })
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

    // Leaving the mesh moves them back to the standalone id.
    const again = store()
    expect(again.records.nodeId).toBe(oldId)
    expect(await adoptHolderId(again, silentLogger)).toBe(2)
    expect(Object.keys(again.records.getFlat(mine)!).filter(f => f.startsWith('holders/'))).toEqual([`holders/${oldId}`])
  })
})
