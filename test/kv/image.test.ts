/**
 * A store's image (SQLite's serialization) opens as an independent
 * in-memory copy: what was committed, queued writes included, and nothing
 * written to one reaches the other.
 */
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { KvStore } from '../../src/kv/index.js'
import { tmpDir } from '../helpers/tmp.js'

const t = tmpDir()
afterAll(() => { t.cleanup() })

describe('KvStore image', () => {
  it('copies a store whole into memory, independent of the original', async () => {
    const a = new KvStore({ path: ':memory:', backgroundCheckpoint: false })
    a.writeSync(tx => { tx.put('k1', 'one') })
    const queued = a.write(tx => { tx.put('k2', 'two') })
    const image = a.serialize() // commits what is queued first
    await queued
    const b = new KvStore({ path: ':memory:', image, backgroundCheckpoint: false })
    try {
      expect(b.get('k1')).toBe('one')
      expect(b.get('k2')).toBe('two')
      b.writeSync(tx => { tx.put('k3', 'three') })
      a.writeSync(tx => { tx.put('k4', 'four') })
      expect(a.get('k3')).toBeUndefined()
      expect(b.get('k4')).toBeUndefined()
      expect(() => new KvStore({ path: path.join(t.dir, 'x.db'), image, backgroundCheckpoint: false })).toThrow(/in-memory/)
    } finally {
      a.close()
      b.close()
    }
  })
})
