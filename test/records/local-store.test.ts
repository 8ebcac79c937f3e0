/**
 * The record layer's one door to node-local rows: each door writes only the
 * namespaces it was opened for (the layers' `watch:` and `mesh:`; the
 * clients' `btmagnet:`, `searchcov:`, `nzb:`) and refuses every other key,
 * the store's own above all, writing nothing.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { NotNodeLocalKeyError, openNodeStore, type LocalStore, type NodeStore } from '../../src/records/index.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function store (): NodeStore {
  const t = tmpDir()
  const s = openNodeStore({ path: path.join(t.dir, 'm.db'), nodeId: 'n1' })
  cleanups.push(() => { s.close(); t.cleanup() })
  return s
}

async function refuses (door: LocalStore, key: string): Promise<void> {
  await expect(door.write(tx => { tx.put(key, 'x') }), key).rejects.toBeInstanceOf(NotNodeLocalKeyError)
  expect(() => door.get(key), key).toThrow(NotNodeLocalKeyError)
}

describe('node-local rows', () => {
  it('each door writes its own namespaces only, and nothing of the store', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1n)
    const rows = s.kv.count('', '\u{10FFFF}')
    const owned = [`file:${rid}/title`, `ver:${rid}`, `cid:x`, 'idx:roots/x', `dup:${rid}/p`, `loc:${rid}`, 'meta-core:holder-id', 'ev:meta:events/1',
      'evhwm:x', 'fts_x', 'plain', '']
    for (const key of [...owned, 'btmagnet:a', 'nzb:a']) await refuses(s.records.local, key)
    for (const key of [...owned, 'mesh:cursor/p', 'watch:f/a', 'btmagnet']) await refuses(s.records.clientRows, key)
    expect(s.kv.count('', '\u{10FFFF}')).toBe(rows)

    await s.records.local.write(tx => { tx.put('mesh:epoch', '3'); tx.put('watch:f/a', '1/2/c') })
    await s.records.clientRows.write(tx => { tx.put('btmagnet:a', 'm'); tx.put('searchcov:b', 's'); tx.put('nzb:c', 'n') })
    expect(['mesh:epoch', 'watch:f/a', 'btmagnet:a', 'searchcov:b', 'nzb:c'].map(k => s.kv.get(k))).toEqual(['3', '1/2/c', 'm', 's', 'n'])
    // A refused key in a write refuses that write alone.
    await expect(s.records.clientRows.write(tx => { tx.put('nzb:d', 'n'); tx.put('mesh:epoch', '9') })).rejects.toBeInstanceOf(NotNodeLocalKeyError)
    expect([s.kv.get('nzb:d'), s.kv.get('mesh:epoch')]).toEqual([undefined, '3'])
  })

  it('keeps whose holder members the store holds behind the record layer', async () => {
    const s = store()
    expect(s.records.storeIdentity()).toEqual({ holderId: undefined, standaloneId: undefined })
    await s.records.recordStoreIdentity('n1')
    expect(s.records.storeIdentity()).toEqual({ holderId: 'n1', standaloneId: undefined })
    await s.records.recordStoreIdentity('n2', 'other-node')
    expect(s.records.storeIdentity().holderId).toBe('n2')
  })
})
