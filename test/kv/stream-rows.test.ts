import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { type EventIdParts, type KvStore, openKv, padEventId, parseEventId, prefixEnd } from '../../src/kv/index.js'
import { decodeEntries, encodeEntries, entryCountOf } from '../../src/kv/stream-rows.js'
import { prng } from '../helpers/prng.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

const T0 = 1_700_000_000_000
const LO = 'ev:s/'

function storeFile (): string {
  const t = tmpDir()
  cleanups.push(t.cleanup)
  return path.join(t.dir, 'stream.db')
}

function open (file: string, opts: { now?: number, retention?: number, trimEvery?: number } = {}): KvStore {
  const kv = openKv({ path: file, now: () => opts.now ?? T0, streamRetention: opts.retention ?? 10_000, trimEvery: opts.trimEvery ?? 10_000 })
  cleanups.push(() => { kv.close() })
  return kv
}

function rows (kv: KvStore): Array<[string, string]> {
  return kv.range(LO, prefixEnd(LO))
}

/** The change log's entries of one 40-field write: kind and version shared, keys under one record. */
function changeEntries (n: number, rid = '01M8R0DNAXEYEB3QW6H8W39SR3'): Array<Record<string, string>> {
  return Array.from({ length: n }, (_, i) => ({ t: 's', k: `file:${rid}/field${i}`, v: '01a23006d55e0000bench' }))
}

/** Serialised as SSE and the change feed do: key order matters. */
const text = (list: ReadonlyArray<Record<string, string>>): string => JSON.stringify(list)

describe('stream rows: the compact form of packed rows', () => {
  it('gives back the same entries, keys in order, through the store and by itself', async () => {
    const kv = open(storeFile())
    const tricky = [
      { z: 'same', k: 'file:R/title', e: '', u: 'naïve ~ café', s: '😀~a', constructor: 'c1', toString: 'x1', n: '~3~[' },
      { z: 'same', k: 'file:R/year', e: '', u: 'naïve ~ crème', s: '😁~b', constructor: 'c2', toString: 'y2', n: '~3~]' },
      { z: 'same', k: 'file:R/', e: '', u: 'naïve', s: '😀~a', constructor: 'c1', toString: 'z3', n: '~3~' }
    ]
    const change = changeEntries(40)
    await kv.write(tx => { tx.appendEvents('s', tricky); tx.appendEvents('s', change) })
    const [a, b] = rows(kv)
    // Both rows are compact and say their entry count first.
    expect(a[1].startsWith('~3~[')).toBe(true)
    expect(b[1].startsWith('~40~[')).toBe(true)
    expect(text(kv.readStream('s', undefined, 100).map(e => e.fields))).toBe(text([...tricky, ...change]))

    // The layout: the field names once, the shared values once, each common prefix once, the rest by column.
    const [keys, same, prefix, cols] = JSON.parse(b[1].slice('~40~'.length)) as [string[], Record<string, string>, Record<string, string>,
      Record<string, string[]>]
    expect(keys).toEqual(['t', 'k', 'v'])
    expect(same).toEqual({ t: 's', v: '01a23006d55e0000bench' })
    expect(prefix).toEqual({ k: 'file:01M8R0DNAXEYEB3QW6H8W39SR3/field' })
    expect(cols.k).toEqual(change.map((_, i) => String(i)))
    // A quarter of the array's bytes, or less.
    expect(b[1].length).toBeLessThan(text(change).length / 4)

    // Shared values go to `same` even when empty; a prefix never splits a surrogate pair; fields named like Object's own properties stay fields.
    const [, same3, prefix3] = JSON.parse(a[1].slice('~3~'.length)) as [string[], Record<string, string>, Record<string, string>]
    expect(same3).toEqual({ z: 'same', e: '' })
    expect(prefix3).toEqual({ k: 'file:R/', u: 'naïve', constructor: 'c', n: '~3~' })
    expect(Object.hasOwn(prefix3, 's')).toBe(false)
    expect(Object.hasOwn(prefix3, 'toString')).toBe(false)
    for (const e of decodeEntries(a[1])) expect(Object.keys(e)).toEqual(['z', 'k', 'e', 'u', 's', 'constructor', 'toString', 'n'])
    expect(text(decodeEntries(encodeEntries(tricky)))).toBe(text(tricky))
    expect(entryCountOf(b[1])).toBe(40)
  })

  it('takes as each field\'s prefix the longest one its values share, short of a split surrogate pair', () => {
    const rand = prng(21)
    const alphabet = ['a', 'b', 'é', '😀', '~']
    const word = (): string => Array.from({ length: Math.floor(rand() * 6) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('')
    for (let round = 0; round < 300; round++) {
      const stem = word()
      const entries = Array.from({ length: 2 + Math.floor(rand() * 6) }, () => ({ k: stem + word(), t: 's' }))
      const row = encodeEntries(entries)
      expect(text(decodeEntries(row))).toBe(text(entries))
      const values = entries.map(e => e.k)
      if (values.every(v => v === values[0])) continue
      let p = 0
      while (values.every(v => p < v.length && v.charCodeAt(p) === values[0].charCodeAt(p))) p++
      const c = values[0].charCodeAt(p - 1)
      if (p > 0 && c >= 0xd800 && c <= 0xdbff) p--
      const [, , prefix] = JSON.parse(row.slice(row.indexOf('~', 1) + 1)) as [string[], Record<string, string>, Record<string, string>]
      expect(prefix.k ?? '', JSON.stringify(values)).toBe(values[0].slice(0, p))
    }
  })

  it('keeps the JSON array for entries whose keys differ, in set or in order', async () => {
    const kv = open(storeFile())
    const differentSets: Array<Record<string, string>> = [{ a: '1', b: '2' }, { a: '1' }]
    const differentOrder: Array<Record<string, string>> = [{ a: '1', b: '2' }, { b: '2', a: '1' }]
    const extraKey: Array<Record<string, string>> = [{ a: '1' }, { a: '1', b: '2' }]
    const protoKey = [JSON.parse('{"__proto__":"x","a":"1"}') as Record<string, string>, JSON.parse('{"__proto__":"y","a":"2"}') as Record<string, string>]
    await kv.write(tx => { for (const list of [differentSets, differentOrder, extraKey, protoKey]) tx.appendEvents('s', list) })
    const stored = rows(kv)
    expect(stored.map(([, v]) => v.charAt(0))).toEqual(['[', '[', '[', '['])
    expect(stored.map(([, v]) => v)).toEqual([differentSets, differentOrder, extraKey, protoKey].map(text))
    expect(text(kv.readStream('s', undefined, 100).map(e => e.fields))).toBe(text([...differentSets, ...differentOrder, ...extraKey, ...protoKey]))
    expect(kv.streamLength('s')).toBe(8)
  })

  it('reads on from every cursor inside and between compact rows, any limit', async () => {
    let now = T0
    const file = storeFile()
    const kv = openKv({ path: file, now: () => now })
    cleanups.push(() => { kv.close() })
    const ids: string[] = []
    for (let w = 0; w < 4; w++) {
      ids.push(...await kv.write(tx => tx.appendEvents('s', changeEntries(12, `R${w}`))))
      if (w === 1) ids.push(await kv.write(tx => tx.appendEvent('s', { t: 'd', k: 'file:R1', v: 'x' })))
      now += 5
    }
    expect(rows(kv).map(([, v]) => v.slice(0, 4))).toEqual(['~12~', '~12~', '{"t"', '~12~', '~12~'])
    const all = kv.readStream('s', undefined, 1000)
    expect(all.map(e => e.id)).toEqual(ids)
    expect(all[24].fields).toEqual({ t: 'd', k: 'file:R1', v: 'x' })
    expect(all[25].fields).toEqual({ t: 's', k: 'file:R2/field0', v: '01a23006d55e0000bench' })
    for (let c = 0; c < ids.length; c++) {
      for (const limit of [1, 5, 100]) {
        expect(kv.readStream('s', parseEventId(ids[c]), limit).map(e => e.id)).toEqual(ids.slice(c + 1, c + 1 + limit))
      }
    }
    // Cursors that name no entry: past a row's last sequence number, between two rows' milliseconds, before everything.
    const firstOf = (i: number): EventIdParts => parseEventId(ids[i])
    expect(kv.readStream('s', { ms: firstOf(0).ms, seq: 500 }, 2).map(e => e.id)).toEqual(ids.slice(12, 14))
    expect(kv.readStream('s', { ms: firstOf(25).ms - 1, seq: 99 }, 2).map(e => e.id)).toEqual(ids.slice(25, 27))
    expect(kv.readStream('s', { ms: 0, seq: 0 }, 3).map(e => e.id)).toEqual(ids.slice(0, 3))
    expect(kv.readStream('s', parseEventId(ids[ids.length - 1]), 10)).toEqual([])
  })

  it('counts compact rows by their entries for the length and the trim', async () => {
    const kv = open(storeFile(), { retention: 30, trimEvery: 12 })
    for (let w = 0; w < 6; w++) await kv.write(tx => { tx.appendEvents('s', changeEntries(12, `R${w}`)) })
    // 72 entries, retention 30: the trims cut whole 12-entry rows, never more than the excess.
    const n = kv.streamLength('s')
    expect(n).toBe(36)
    expect(rows(kv).length).toBe(3)
    const kept = kv.readStream('s', undefined, 1000)
    expect(kept.length).toBe(36)
    expect(kept[0].fields.k).toBe('file:R3/field0')
    const lost = parseEventId(kv.streamTrimmedThrough('s')!)
    // The low-water mark is the last entry of the last row cut: its first id plus 11.
    expect(kv.readStream('s', lost, 1)[0].id).toBe(kept[0].id)
    expect(lost.seq).toBe(parseEventId(kept[0].id).seq - 1)
  })

  it('reads, counts, trims and recovers its head over rows of all three forms, earlier builds\' included', async () => {
    const file = storeFile()
    // A store written by an earlier build: an array row, a single row, then rows of this build.
    let kv = open(file, { now: T0 })
    await kv.write(tx => { tx.appendEvent('s', { boot: '1' }) })
    kv.close()
    const legacyArray = [{ t: 's', k: 'file:A/x', v: '1' }, { t: 's', k: 'file:A/y', v: '1' }, { t: 's', k: 'file:A/z', v: '1' }]
    const legacySingle = { type: 'set', key: 'file:A/x', ts: '5' }
    const raw = new Database(file)
    const put = raw.prepare('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)')
    put.run(LO + padEventId({ ms: T0 + 10, seq: 0 }), JSON.stringify(legacyArray))
    put.run(LO + padEventId({ ms: T0 + 20, seq: 0 }), JSON.stringify(legacySingle))
    raw.prepare("DELETE FROM kv WHERE k = 'evhwm:s'").run()
    raw.close()

    // Without a high-water mark the head is the last legacy row's id; new rows follow it.
    kv = open(file, { now: T0 + 30, retention: 20, trimEvery: 1000 })
    expect(kv.streamHead('s')).toBe(`${T0 + 20}-0`)
    const compact = changeEntries(12)
    await kv.write(tx => { tx.appendEvents('s', compact) })
    // A legacy array after the compact row, as a mixed history could hold.
    kv.close()
    const raw2 = new Database(file)
    raw2.prepare('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)').run(LO + padEventId({ ms: T0 + 40, seq: 0 }), JSON.stringify(legacyArray))
    raw2.close()
    kv = open(file, { now: T0 + 40, retention: 20, trimEvery: 1000 })
    const expected = [{ boot: '1' }, ...legacyArray, legacySingle, ...compact, ...legacyArray]
    const all = kv.readStream('s', undefined, 1000)
    expect(text(all.map(e => e.fields))).toBe(text(expected))
    expect(kv.streamLength('s')).toBe(20)
    for (let c = 0; c < all.length; c++) {
      expect(kv.readStream('s', parseEventId(all[c].id), 4).map(e => e.id)).toEqual(all.slice(c + 1, c + 5).map(e => e.id))
    }

    // Without the high-water mark again, the head is found inside the legacy array row.
    kv.close()
    const raw3 = new Database(file)
    raw3.prepare("DELETE FROM kv WHERE k = 'evhwm:s'").run()
    raw3.close()
    kv = open(file, { now: T0 + 40, retention: 10, trimEvery: 1 })
    expect(kv.streamHead('s')).toBe(`${T0 + 40}-2`)
    // 22 entries past a retention of 10: whole rows of 1, 3 and 1 entries go; the 12-entry compact row stays (17 > the excess of 12).
    const last = await kv.write(tx => tx.appendEvents('s', [{ k: 'p' }, { k: 'q' }]))
    expect(last).toEqual([`${T0 + 40}-3`, `${T0 + 40}-4`])
    expect(kv.streamLength('s')).toBe(17)
    expect(kv.streamTrimmedThrough('s')).toBe(`${T0 + 20}-0`)
    expect(text(kv.readStream('s', undefined, 100).map(e => e.fields))).toBe(text([...compact, ...legacyArray, { k: 'p' }, { k: 'q' }]))
  })

  it('recovers the last id from a compact row when the high-water mark is gone, and trims over mixed forms', async () => {
    const file = storeFile()
    let kv = open(file, { now: T0 })
    await kv.write(tx => { tx.appendEvent('s', { k: 'single' }) })
    const ids = await kv.write(tx => tx.appendEvents('s', changeEntries(15)))
    kv.close()
    const raw = new Database(file)
    expect((raw.prepare('SELECT v FROM kv WHERE k = ?').pluck().get(LO + padEventId(parseEventId(ids[0]))) as string).startsWith('~15~')).toBe(true)
    raw.prepare("DELETE FROM kv WHERE k = 'evhwm:s'").run()
    raw.close()
    // The clock stands still: the next id must still follow the 15th entry of the compact row.
    kv = open(file, { now: T0, retention: 16, trimEvery: 1 })
    expect(kv.streamHead('s')).toBe(ids[14])
    const next = await kv.write(tx => tx.appendEvents('s', [{ k: 'a' }, { k: 'b' }]))
    expect(next).toEqual([`${T0}-16`, `${T0}-17`])
    // 18 entries past a retention of 16: the trim cuts the single row (1) and stops before the compact one (15 > the excess).
    expect(kv.streamLength('s')).toBe(17)
    expect(kv.streamTrimmedThrough('s')).toBe(`${T0}-0`)
    expect(kv.readStream('s', undefined, 100).map(e => e.id)).toEqual([...ids, ...next])
  })
})
