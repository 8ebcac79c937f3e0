import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import {
  AsyncWriteError, KvStore, SchemaGateError, compareEventIds, entriesOf, openKv, parseEventId, prefixEnd
} from '../../src/kv/index.js'
import { tmpDir } from '../helpers/tmp.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function open (opts: Partial<ConstructorParameters<typeof KvStore>[0]> = {}): { kv: KvStore, file: string } {
  const t = tmpDir()
  const file = path.join(t.dir, 'nested', 'store.db')
  const kv = openKv({ path: file, ...opts })
  cleanups.push(() => { kv.close(); t.cleanup() })
  return { kv, file }
}

function entries (kv: KvStore, stream = 's'): Array<Record<string, string>> {
  return kv.readStream(stream, undefined, 10_000).map(e => e.fields)
}

describe('kv store', () => {
  it('creates the file and its folders, in WAL mode, with the schema sentinel', () => {
    const { kv, file } = open()
    expect(kv.get('meta-core:schema-version')).toBe('2')
    const raw = new Database(file, { readonly: true })
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal')
    const ddl = raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'kv'").pluck().get() as string
    expect(ddl).toMatch(/WITHOUT ROWID/)
    raw.close()
  })

  it('gets, puts, deletes and reads ranges in key order', async () => {
    const { kv } = open()
    await kv.write(tx => { tx.put('a/2', 'two'); tx.put('a/1', 'one'); tx.put('b/1', 'other') })
    expect(kv.get('a/1')).toBe('one')
    expect(kv.prefix('a/')).toEqual([['a/1', 'one'], ['a/2', 'two']])
    expect(kv.keys('a/', prefixEnd('a/'), 1)).toEqual(['a/1'])
    expect(kv.count('a/', prefixEnd('a/'))).toBe(2)
    const deleted = await kv.write(tx => tx.delete('a/1'))
    expect(deleted).toBe(true)
    expect(kv.get('a/1')).toBeUndefined()
    expect(await kv.write(tx => tx.delete('a/1'))).toBe(false)
  })

  it('appends stream entries only when asked, in order, singly or in bulk, in the same transaction', async () => {
    const { kv } = open()
    // Puts and deletes of any key publish nothing: streams belong to the layers above.
    await kv.write(tx => { tx.put('file:R/title', 'x'); tx.put('other:key', 'y'); tx.delete('other:key') })
    expect(kv.streamHead('meta:events')).toBeUndefined()
    expect(await kv.write(tx => tx.put('file:R/title', 'x'))).toBe(false)
    const ids = await kv.write(tx => [
      tx.appendEvent('s', { n: '1' }),
      ...tx.appendEvents('s', [{ n: '2' }, { n: '3' }, { n: '4' }]),
      tx.appendEvent('s', { n: '5' })
    ])
    expect(entries(kv).map(e => e.n)).toEqual(['1', '2', '3', '4', '5'])
    expect(kv.readStream('s', undefined, 10).map(e => e.id)).toEqual(ids)
    for (let i = 1; i < ids.length; i++) expect(compareEventIds(parseEventId(ids[i - 1]), parseEventId(ids[i]))).toBe(-1)
    expect(kv.streamHead('s')).toBe(ids[4])
    // A bulk append that rolls back leaves neither rows nor ids behind.
    await expect(kv.write(tx => { tx.appendEvents('s', [{ n: 'x' }, { n: 'y' }]); throw new Error('no') })).rejects.toThrow('no')
    expect(entries(kv)).toHaveLength(5)
    expect(kv.streamHead('s')).toBe(ids[4])
  })

  it('commits concurrent writes together but rolls back a failing one alone', async () => {
    const { kv } = open()
    const seen: number[] = []
    kv.onCommit(runs => { seen.push(entriesOf(runs).length) })
    const a = kv.write(tx => { tx.put('file:A/x', '1'); tx.appendEvent('s', { key: 'file:A/x' }); return 'a' })
    const b = kv.write(tx => { tx.put('file:B/x', '1'); tx.appendEvent('s', { key: 'file:B/x' }); throw new Error('boom') })
    const c = kv.write(tx => { tx.put('file:C/x', '1'); tx.appendEvent('s', { key: 'file:C/x' }); return 'c' })
    await expect(a).resolves.toBe('a')
    await expect(b).rejects.toThrow('boom')
    await expect(c).resolves.toBe('c')
    expect(kv.get('file:A/x')).toBe('1')
    expect(kv.get('file:B/x')).toBeUndefined()
    expect(kv.get('file:C/x')).toBe('1')
    // One commit carried both surviving writes' events; the failed write's event is gone.
    expect(seen).toEqual([2])
    expect(entries(kv).map(e => e.key)).toEqual(['file:A/x', 'file:C/x'])
  })

  it('runs a batch without savepoints once, and runs it again isolated when one write throws', async () => {
    const { kv } = open()
    const runs = { a: 0, b: 0, c: 0 }
    const hooks: string[] = []
    const heard: string[][] = []
    kv.onCommit(runs => { heard.push(entriesOf(runs).map(e => e.fields.key)) })
    // No failure: every write function runs once.
    await Promise.all([
      kv.write(tx => { runs.a++; tx.put('ok:1', '1') }),
      kv.write(tx => { runs.b++; tx.put('ok:2', '2') })
    ])
    expect(runs).toEqual({ a: 1, b: 1, c: 0 })
    // One failure: the batch rolls back and runs again, each write under its own savepoint; only the second run counts.
    runs.a = runs.b = 0
    const a = kv.write(tx => {
      runs.a++
      tx.put('file:A/x', `run ${runs.a}`)
      tx.addCounter('count:n', 1)
      tx.appendEvent('s', { key: `a${runs.a}` })
      tx.afterCommit(() => hooks.push(`a${runs.a}`))
      return runs.a
    })
    const b = kv.write(tx => {
      runs.b++
      tx.put('file:B/x', '1')
      tx.addCounter('count:n', 10)
      tx.appendEvent('s', { key: 'b' })
      tx.afterCommit(() => hooks.push('b'))
      throw new Error('boom')
    })
    // After the failing one: not reached by the first run; sees what the write before it wrote.
    const c = kv.write(tx => { runs.c++; tx.addCounter('count:n', 1); return tx.get('file:A/x') })
    await expect(a).resolves.toBe(2)
    await expect(b).rejects.toThrow('boom')
    await expect(c).resolves.toBe('run 2')
    expect(runs).toEqual({ a: 2, b: 2, c: 1 })
    expect(kv.get('file:A/x')).toBe('run 2')
    expect(kv.get('file:B/x')).toBeUndefined()
    expect(kv.get('count:n')).toBe('2')
    expect(hooks).toEqual(['a2'])
    expect(entries(kv).map(e => e.key)).toEqual(['a2'])
    expect(heard.at(-1)).toEqual(['a2'])
    // A write alone in its transaction that throws runs once and leaves nothing.
    let alone = 0
    await expect(kv.write(tx => { alone++; tx.put('file:D/x', '1'); throw new Error('alone') })).rejects.toThrow('alone')
    expect(alone).toBe(1)
    expect(kv.get('file:D/x')).toBeUndefined()
    // The store writes on afterwards.
    await kv.write(tx => { tx.put('file:E/x', '1') })
    expect(kv.get('file:E/x')).toBe('1')
  })

  it('runs its close hooks after the queued writes commit, keeps what they write, and goes on past a failing one', async () => {
    const t = tmpDir()
    cleanups.push(() => { t.cleanup() })
    const file = path.join(t.dir, 'hooks.db')
    const warned: string[] = []
    const logger = { debug () {}, info () {}, error () {}, warn (msg: string) { warned.push(msg) }, child () { return logger } }
    const kv = openKv({ path: file, logger: logger })
    const queued = kv.write(tx => { tx.put('queued', 'yes') })
    kv.beforeClose(() => { throw new Error('hook failed') })
    kv.beforeClose(() => { kv.writeSync(tx => { tx.put('hook', `saw ${kv.get('queued') ?? 'nothing'}`) }) })
    kv.close()
    await queued
    expect(warned).toEqual(['a close hook failed'])
    const again = openKv({ path: file })
    expect(again.get('hook')).toBe('saw yes')
    again.close()
  })

  it('reads see only committed state', async () => {
    const { kv } = open()
    const p = kv.write(tx => { tx.put('k', 'v') })
    expect(kv.get('k')).toBeUndefined()
    await p
    expect(kv.get('k')).toBe('v')
  })

  it('refuses asynchronous write functions and rolls them back', async () => {
    const { kv } = open()
    await expect(kv.write(async tx => { tx.put('k', 'v') })).rejects.toBeInstanceOf(AsyncWriteError)
    expect(kv.get('k')).toBeUndefined()
  })

  it('keeps event ids strictly increasing when the clock steps back, across restarts', async () => {
    let now = 1_700_000_000_000
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 's.db')
    let kv = openKv({ path: file, now: () => now })
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push(await kv.write(tx => tx.appendEvent('s', { i: String(i) })))
    now -= 60_000 // the wall clock steps back a minute
    for (let i = 5; i < 10; i++) ids.push(await kv.write(tx => tx.appendEvent('s', { i: String(i) })))
    kv.close()
    kv = openKv({ path: file, now: () => now - 1000 })
    ids.push(await kv.write(tx => tx.appendEvent('s', { i: 'after-restart' })))
    for (let i = 1; i < ids.length; i++) expect(compareEventIds(parseEventId(ids[i - 1]), parseEventId(ids[i]))).toBe(-1)
    expect(kv.get('evhwm:s')).toBe(ids[ids.length - 1])
    expect(kv.readStream('s', parseEventId(ids[8]), 10).map(e => e.fields.i)).toEqual(['9', 'after-restart'])
    kv.close()
  })


  it('gives a bulk append whose sequence numbers run out one row per entry, its ids moving to the next millisecond', async () => {
    const ms = 1_700_000_000_000
    const { kv, file } = open({ now: () => ms })
    kv.close()
    // The last id issued is two short of the largest sequence number of its millisecond.
    const db = new Database(file)
    db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)').run('evhwm:s', `${ms}-9999999997`)
    db.close()
    const kv2 = openKv({ path: file, now: () => ms })
    cleanups.push(() => { kv2.close() })
    const heard: Array<Array<[string, string]>> = []
    kv2.onCommit(runs => { heard.push(entriesOf(runs).map(e => [e.id, e.fields.n])) })
    const ids = await kv2.write(tx => tx.appendEvents('s', ['a', 'b', 'c', 'd'].map(n => ({ n }))))
    expect(ids).toEqual([`${ms}-9999999998`, `${ms}-9999999999`, `${ms + 1}-0`, `${ms + 1}-1`])
    expect(heard).toEqual([ids.map((id, i) => [id, 'abcd'[i]])]) // commit listeners hear the same ids
    expect(kv2.get('evhwm:s')).toBe(`${ms + 1}-1`)
    expect(kv2.keys('ev:s/', prefixEnd('ev:s/'))).toHaveLength(4)
    expect(kv2.readStream('s', undefined, 10).map(e => [e.id, e.fields.n])).toEqual(ids.map((id, i) => [id, 'abcd'[i]]))
    expect(kv2.readStream('s', parseEventId(ids[1]), 10).map(e => e.fields.n)).toEqual(['c', 'd'])
    // The next bulk append packs again, after the last id.
    const next = await kv2.write(tx => tx.appendEvents('s', [{ n: 'e' }, { n: 'f' }]))
    expect(next).toEqual([`${ms + 1}-2`, `${ms + 1}-3`])
  })
  it('trims a stream to its retention every trimEvery appends', async () => {
    const { kv } = open({ streamRetention: 50, trimEvery: 20 })
    for (let i = 0; i < 200; i++) await kv.write(tx => { tx.appendEvent('s', { i: String(i) }) })
    const n = kv.streamLength('s')
    expect(n).toBeGreaterThanOrEqual(50)
    expect(n).toBeLessThan(50 + 20)
    const rows = kv.readStream('s', undefined, 1000)
    expect(rows[rows.length - 1].fields.i).toBe('199')
    expect(kv.streamFirst('s')).toBe(rows[0].id)
    // The low-water mark names the newest id the trims removed: the one just before the oldest retained.
    const lost = kv.streamTrimmedThrough('s')!
    expect(compareEventIds(parseEventId(lost), parseEventId(rows[0].id))).toBe(-1)
    expect(kv.readStream('s', parseEventId(lost), 1)[0].id).toBe(rows[0].id)
  })

  it('packs a bulk append in one row yet reads, resumes, counts and trims entry by entry', async () => {
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 'packed.db')
    let kv = openKv({ path: file, streamRetention: 25, trimEvery: 10 })
    const ids: string[] = []
    for (let w = 0; w < 3; w++) {
      ids.push(...await kv.write(tx => tx.appendEvents('s', Array.from({ length: 7 }, (_, i) => ({ n: `${w}.${i}` })))))
      ids.push(await kv.write(tx => tx.appendEvent('s', { n: `${w}.single` })))
    }
    // Four rows for three bulk appends and three single ones: one row per bulk append.
    expect(kv.keys('ev:s/', prefixEnd('ev:s/')).length).toBe(6)
    expect(kv.streamLength('s')).toBe(24)
    const all = kv.readStream('s', undefined, 1000)
    expect(all.map(e => e.id)).toEqual(ids)
    expect(all.map(e => e.fields.n).slice(0, 9)).toEqual(['0.0', '0.1', '0.2', '0.3', '0.4', '0.5', '0.6', '0.single', '1.0'])
    // From every cursor, inside a packed row or not, the read goes on with the next entry, any limit.
    for (let c = 0; c < ids.length; c++) {
      for (const limit of [1, 3, 100]) {
        expect(kv.readStream('s', parseEventId(ids[c]), limit).map(e => e.id)).toEqual(ids.slice(c + 1, c + 1 + limit))
      }
    }
    // A cursor before the first entry (0-0, as a new client sends) reads from the start.
    expect(kv.readStream('s', { ms: 0, seq: 0 }, 2).map(e => e.id)).toEqual(ids.slice(0, 2))

    // A restart without the high-water mark finds the last id inside the last row.
    await kv.write(tx => tx.appendEvents('s', [{ n: 'a' }, { n: 'b' }, { n: 'c' }]))
    const last = kv.streamHead('s')!
    kv.close()
    const raw = new Database(file)
    raw.prepare("DELETE FROM kv WHERE k = 'evhwm:s'").run()
    raw.close()
    kv = openKv({ path: file, streamRetention: 25, trimEvery: 10, now: () => parseEventId(last).ms })
    cleanups.push(() => { kv.close() })
    expect(kv.streamHead('s')).toBe(last)
    const next = await kv.write(tx => tx.appendEvent('s', { n: 'after' }))
    expect(compareEventIds(parseEventId(last), parseEventId(next))).toBe(-1)

    // 28 entries past a retention of 25: the trim cuts whole rows, at most the excess, and says where it cut.
    await kv.write(tx => tx.appendEvents('s', Array.from({ length: 10 }, (_, i) => ({ n: `t${i}` }))))
    expect(kv.streamLength('s')).toBeGreaterThanOrEqual(25)
    expect(kv.streamLength('s')).toBeLessThan(25 + 8)
    const kept = kv.readStream('s', undefined, 1000)
    expect(kept.length).toBe(kv.streamLength('s'))
    expect(kept[kept.length - 1].fields.n).toBe('t9')
    const lost = kv.streamTrimmedThrough('s')!
    expect(kv.readStream('s', parseEventId(lost), 1)[0].id).toBe(kept[0].id)
    expect(kv.streamFirst('s')).toBe(kept[0].id)
  })

  it('reports no trim for a stream that never lost an entry', async () => {
    const { kv } = open({ streamRetention: 50, trimEvery: 20 })
    for (let i = 0; i < 40; i++) await kv.write(tx => { tx.appendEvent('s', { i: String(i) }) })
    expect(kv.streamLength('s')).toBe(40)
    expect(kv.streamTrimmedThrough('s')).toBeUndefined()
  })

  it('clears a stream but keeps issuing larger ids', async () => {
    const { kv } = open()
    const first = await kv.write(tx => tx.appendEvent('s', { a: '1' }))
    const reset = await kv.write(tx => { tx.clearStream('s'); return tx.appendEvent('s', { type: 'reset' }) })
    expect(kv.readStream('s', undefined, 10).map(e => e.id)).toEqual([reset])
    expect(compareEventIds(parseEventId(first), parseEventId(reset))).toBe(-1)
    expect(kv.streamTrimmedThrough('s')).toBe(first)
  })

  it('applies counters once per commit and drops a rolled-back write\'s deltas', async () => {
    const { kv } = open()
    await Promise.allSettled([
      kv.write(tx => { tx.addCounter('c', 2) }),
      kv.write(tx => { tx.addCounter('c', 5); throw new Error('no') }),
      kv.write(tx => { tx.addCounter('c', 3) })
    ])
    expect(kv.get('c')).toBe('5')
    await kv.write(tx => { tx.addCounter('c', -5) })
    expect(kv.get('c')).toBeUndefined()
  })

  it('runs afterCommit hooks only for writes that committed', async () => {
    const { kv } = open()
    const ran: string[] = []
    await Promise.allSettled([
      kv.write(tx => { tx.afterCommit(() => ran.push('ok')) }),
      kv.write(tx => { tx.afterCommit(() => ran.push('failed')); throw new Error('x') })
    ])
    expect(ran).toEqual(['ok'])
  })

  it('asks the layers above about an unversioned file before stamping it, and refuses it naming the file', () => {
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 'legacy.db')
    const raw = new Database(file)
    raw.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID')
    raw.prepare('INSERT INTO kv VALUES (?, ?)').run('old:X', '')
    raw.close()
    const check = (r: { any: (lo: string, hi: string) => boolean }): string | undefined => (r.any('old:', 'old;') ? 'holds old rows' : undefined)
    expect(() => openKv({ path: file, checkUnversioned: check })).toThrow(SchemaGateError)
    expect(() => openKv({ path: file, checkUnversioned: check })).toThrow(file)
    expect(() => openKv({ path: file, checkUnversioned: check })).toThrow(/holds old rows/)
    // Refused means untouched: still no version, so the next open asks again.
    const after = new Database(file, { readonly: true })
    expect(after.prepare("SELECT v FROM kv WHERE k = 'meta-core:schema-version'").get()).toBeUndefined()
    after.close()
  })

  it('refuses a store with another schema version', () => {
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 'v1.db')
    const raw = new Database(file)
    raw.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID')
    raw.prepare('INSERT INTO kv VALUES (?, ?)').run('meta-core:schema-version', '1')
    raw.close()
    expect(() => openKv({ path: file })).toThrow(/schema version "1".*version "2"/)
  })

  it('stamps an empty store and reopens it', () => {
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 'e.db')
    openKv({ path: file }).close()
    const kv = openKv({ path: file })
    expect(kv.get('meta-core:schema-version')).toBe('2')
    expect(kv.integrityCheck()).toBe('ok')
    kv.close()
  })

  it('rejects writes after close', async () => {
    const { kv } = open()
    kv.close()
    await expect(kv.write(tx => { tx.put('a', 'b') })).rejects.toThrow(/closed/)
    expect(() => kv.get('a')).toThrow(/closed/)
  })

  it('commits writes queued before close', async () => {
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 'q.db')
    const kv = openKv({ path: file })
    const p = kv.write(tx => { tx.put('queued', 'yes') })
    kv.close()
    await p
    const again = openKv({ path: file })
    expect(again.get('queued')).toBe('yes')
    again.close()
  })
})
