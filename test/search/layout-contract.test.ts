/**
 * Search reads record rows with SQL of its own, so it names the record
 * layout in one module (search-schema.ts) while the record layer keeps the
 * key grammar private. This checks the two agree, on the constants and on a
 * real store: a layout change in records that search did not follow fails here.
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { prefixEnd } from '../../src/common/index.js'
import { FILE, GRP, ROOTS, fieldKey } from '../../src/records/layout.js'
import { openNodeStore, recordRows } from '../../src/records/index.js'
import { FIELD_AT, FILE_PREFIX, GRP_PREFIX, ROOTS_HI, ROOTS_LO } from '../../src/search/search-schema.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

describe('search\'s names for the record layout', () => {
  it('match the record layer\'s', () => {
    expect(ROOTS_LO).toBe(ROOTS)
    expect(ROOTS_HI).toBe(prefixEnd(ROOTS))
    expect(GRP_PREFIX).toBe(GRP)
    expect(FILE_PREFIX).toBe(FILE)
    const rid = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
    expect(fieldKey(rid, 'title')).toBe(`${FILE}${rid}/title`)
    expect(fieldKey(rid, 'title').slice(FIELD_AT - 1)).toBe('title')
  })

  it('select the live roots and the fields recordRows reports on a real store', async () => {
    const t = tmpDir()
    const s = openNodeStore({ path: path.join(t.dir, 's.db'), nodeId: 'n' })
    cleanups.push(() => { s.close(); t.cleanup() })
    const a = await s.records.mint('/files/a', 1, 1, { title: 'A' })
    const b = await s.records.mint('/files/b', 1, 1, { title: 'B' })
    await s.records.deleteRoot(b)
    const roots = s.kv.prepare(`SELECT substr(k, ${ROOTS_LO.length + 1}) FROM kv WHERE k >= ? AND k < ?`).pluck().all(ROOTS_LO, ROOTS_HI)
    expect(roots).toEqual(recordRows.liveRoots(s.kv, undefined, 10))
    expect(roots).toEqual([a])
    const fields = s.kv.prepare(`SELECT substr(k, ${FIELD_AT}), v FROM kv WHERE k >= ? AND k < ?`).raw()
      .all(`${FILE_PREFIX}${a}/`, `${FILE_PREFIX}${a}0`) as Array<[string, string]>
    expect(Object.fromEntries(fields)).toEqual(recordRows.fields(s.kv, a))
  })
})
