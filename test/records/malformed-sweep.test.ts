/**
 * Stores written before writes refused lone surrogates may hold rows whose
 * key is not UTF-8: no request can address them. Opening such a store
 * removes them (with their version entries, and a record left with no
 * field), reports what it did, and never reads the whole table again.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { tmpDir } from '../helpers/tmp.js'

const CID_A = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
const CID_B = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function open (dbPath: string, lines: string[]): NodeStore {
  const store = openNodeStore({ path: dbPath, nodeId: 'sweep-test', logger: createLogger({ level: 'info', write: l => { lines.push(l) } }) })
  cleanups.unshift(() => { if (!store.kv.isClosed) store.close() })
  return store
}

/** Rows whose key, as the bytes SQLite holds, is not UTF-8 (a surrogate spelled 0xED 0xA0-0xBF). */
function malformedKeys (store: NodeStore): number {
  return store.kv.prepare("SELECT count(*) FROM kv WHERE instr(CAST(k AS BLOB), X'EDA080') > 0 OR instr(CAST(k AS BLOB), X'EDBFBF') > 0").pluck().get() as number
}

describe('the malformed-text sweep at open', () => {
  it('removes rows whose key is not UTF-8, keeps everything else, and runs once per store', async () => {
    const t = tmpDir('mc-sweep-')
    cleanups.push(t.cleanup)
    const dbPath = path.join(t.dir, 'store.db')
    let store = open(dbPath, [])
    const { records, kv } = store
    await records.mergeFlat(CID_A, { title: 'kept', note: 'kept too' })
    const ridA = records.resolveRoot(CID_A)!
    await records.mergeFlat(CID_B, { title: 'only an orphan will be left' })
    const ridB = records.resolveRoot(CID_B)!
    // What writes used to leave behind for {"k\ud800":"v"}: the field row, its version entry, a schema counter; plus a plain row.
    kv.writeSync(tx => {
      tx.put(`file:${ridA}/k\ud800`, 'v')
      tx.put(`file:${ridA}/bad\udfffvalue`, 'w')
      tx.put(`file:${ridA}/value`, 'x\ud800y') // a value, not a key: reported, left alone
      const ver = JSON.parse(tx.get(`ver:${ridA}`)!) as { g: Record<string, string[]> }
      const v = Object.keys(ver.g)[0]
      ver.g[v].push('k\ud800', 'bad\udfffvalue')
      tx.put(`ver:${ridA}`, JSON.stringify(ver))
      tx.put('idx:schema/k\ud800\x1f\x1fstring\x1f', '1')
      tx.put('plain:\ud800', 'raw row')
      // Record B: every readable field gone, one orphan left.
      for (const k of tx.keys(`file:${ridB}/`, `file:${ridB}0`)) tx.delete(k)
      tx.put(`file:${ridB}/only\ud800`, 'v')
      tx.delete('meta-core:utf8-swept') // a store from before the sweep existed
    })
    expect(malformedKeys(store)).toBe(5)
    // The defect as users met it: the orphan reads back as U+FFFD and a delete of that name finds nothing.
    expect(records.getFlat(ridA)!['k\ufffd\ufffd\ufffd']).toBe('v')
    store.close()

    const lines: string[] = []
    store = open(dbPath, lines)
    expect(malformedKeys(store)).toBe(0)
    expect(store.kv.get('plain:\ufffd\ufffd\ufffd')).toBeUndefined()
    const a = store.records.getFlat(ridA)!
    expect(a.title).toBe('kept')
    expect(a.note).toBe('kept too')
    expect(a.value).toBe('x\ufffd\ufffd\ufffdy')
    expect(Object.keys(a).filter(f => f.includes('\ufffd'))).toEqual([])
    expect(store.kv.get(`ver:${ridA}`)).not.toMatch(/\\ud800|\\udfff/)
    // B had nothing but the orphan: it is no longer a record, and the counter agrees.
    expect(store.records.resolveRoot(ridB)).toBeUndefined()
    expect(store.records.countRecords()).toBe(1)
    const warn = lines.find(l => l.includes('removed rows whose key is not UTF-8'))
    expect(warn).toMatch(/rows=5/)
    expect(warn).toMatch(/emptiedRecords=1/)
    expect(warn).toContain('k\\\\xed\\\\xa0\\\\x80')
    expect(lines.some(l => l.includes('values that are not UTF-8') && l.includes('rows=1'))).toBe(true)
    store.close()

    // Swept once: the next open reads nothing and says nothing.
    const again: string[] = []
    store = open(dbPath, again)
    expect(again.some(l => l.includes('malformed text'))).toBe(false)
  })
})
