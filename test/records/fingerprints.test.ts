/**
 * Range fingerprints (src/records/fingerprints.ts): folded in after the
 * writes that change them, before any read of them; rebuilt at open for a store that predates
 * them (resuming a rebuild a crash interrupted); the digest a read of them.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { newRecordId, openNodeStore, type NodeStore, type RecordId } from '../../src/records/index.js'
import { FP_FOLDED, FP_FORMAT, FP_READY, FP_REBUILD, FP_ROOT, FP_BUCKET, FP_BUCKETS_CURRENT, rootHash, sumHex } from '../../src/records/fingerprints.js'
import { openKv, prefixEnd, type KvStore } from '../../src/kv/index.js'
import { prng } from '../helpers/prng.js'
import { randomRecordOp } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'
import { fingerprintErrors } from './fingerprint-check.js'

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function open (file: string, nodeId = 'nodeA', logs?: string[]): NodeStore {
  const logger = {
    debug () {}, warn () {}, error () {},
    info (msg: string, fields?: Record<string, unknown>) { logs?.push(`${msg} ${JSON.stringify(fields)}`) },
    child () { return logger }
  }
  return openNodeStore({ path: file, nodeId, backgroundCheckpoint: false, logger })
}

function fresh (): string {
  const t = tmpDir()
  cleanups.push(() => { t.cleanup() })
  return path.join(t.dir, 's.db')
}

function rows (s: NodeStore): Array<[string, string]> {
  return s.kv.range(FP_ROOT, prefixEnd(FP_ROOT))
}

/** The bucket rows the root rows make: `<sum> <roots> <keys>` per 4-hex bucket. */
function bucketsOfRoots (kv: KvStore): Map<string, string> {
  const acc = new Map<string, { hashes: string[], keys: number }>()
  for (const [k, v] of kv.range(FP_ROOT, prefixEnd(FP_ROOT))) {
    const b = FP_BUCKET + k.slice(FP_ROOT.length, FP_ROOT.length + 4)
    const e = acc.get(b) ?? { hashes: [], keys: 0 }
    const [h, n] = v.split(' ')
    e.hashes.push(h)
    e.keys += Number(n)
    acc.set(b, e)
  }
  return new Map([...acc].map(([b, e]) => [b, `${sumHex(e.hashes)} ${e.hashes.length} ${e.keys}`]))
}

describe('range fingerprints', () => {
  it('follow every write and merge, and equal what a rebuild at open makes', async () => {
    const file = fresh()
    const s = open(file)
    const rand = prng(42)
    const known: RecordId[] = []
    for (let i = 0; i < 300; i++) await randomRecordOp(s, rand, known, i)
    // Remote entries too: a newer version of a key, a tombstone for a key never held, a root tombstone.
    const rid = known[0]
    await s.records.applyRemote([
      { key: `file:${rid}/title`, value: 'remote', hlc: s.records.hlc.now(), origin: 'nodeB' },
      { key: `file:${rid}/never`, value: null, hlc: s.records.hlc.now(), origin: 'nodeB' },
      { key: `file:${known[1]}`, value: null, hlc: s.records.hlc.now(), origin: 'nodeB' },
      { key: `file:${newRecordId()}/title`, value: 'x', hlc: s.records.hlc.now(), origin: 'nodeB' }
    ])
    expect(fingerprintErrors(s)).toEqual([])
    const digest = s.records.digest()
    const before = rows(s)
    expect(digest.keys).toBeGreaterThan(100)
    s.kv.writeSync(tx => { tx.delete(FP_READY) })
    s.close()
    const logs: string[] = []
    const again = open(file, 'nodeA', logs)
    cleanups.push(() => { again.close() })
    expect(logs.some(l => l.startsWith('range fingerprints built'))).toBe(true)
    expect(rows(again)).toEqual(before)
    expect(again.records.digest()).toEqual(digest)
  })

  it('resume a rebuild that was interrupted, and a store that predates them is rebuilt at open', async () => {
    const file = fresh()
    const s = open(file)
    for (let i = 0; i < 2_500; i++) await s.records.mint(`/f/${i}`, i, i, { title: `t${i}` })
    const digest = s.records.digest()
    const before = rows(s)
    // As an older store: no fingerprint rows at all.
    s.kv.writeSync(tx => {
      for (const [k] of rows(s)) tx.delete(k)
      tx.delete(FP_READY)
    })
    s.close()
    const a = open(file)
    expect(rows(a)).toEqual(before)
    expect(a.records.digest()).toEqual(digest)
    // Interrupted after the first batch: the rows of the roots after the mark are gone, the mark says where to go on.
    const all = a.kv.keys('ver:', prefixEnd('ver:')).map(k => k.slice(4))
    const mark = all[1999]
    a.kv.writeSync(tx => {
      tx.delete(FP_READY)
      tx.put(FP_REBUILD, `${FP_FORMAT} ${mark}`)
    })
    a.close()
    const b = open(file)
    cleanups.push(() => { b.close() })
    expect(rows(b)).toEqual(before)
    expect(b.records.digest()).toEqual(digest)
    expect(b.kv.get(FP_REBUILD)).toBeUndefined()
    // Rows of an older format (a root's hash without its id), or a rebuild of one left midway: rebuilt from scratch.
    b.kv.writeSync(tx => {
      for (const [k, v] of rows(b)) if (k.startsWith(FP_ROOT)) tx.put(k, `${'0'.repeat(32)}${v.slice(32)}`)
      tx.put(FP_READY, '1')
      tx.put(FP_REBUILD, mark)
    })
    b.close()
    const c = open(file)
    cleanups.push(() => { c.close() })
    expect(rows(c)).toEqual(before)
    expect(c.records.digest()).toEqual(digest)
    expect(c.kv.get(FP_READY)).toBe(FP_FORMAT)
  })

  it('give equal digests for equal ranges and different ones when a value, a version or a key differs', async () => {
    const a = open(fresh(), 'nodeA')
    const b = open(fresh(), 'nodeB')
    cleanups.push(() => { a.close(); b.close() })
    expect(a.records.digest()).toEqual(b.records.digest())
    const rid = await a.records.mint('/f/a', 1, 1, { title: 'x' })
    const entries = a.records.exportRoot(rid)
    await b.records.applyRemote(entries)
    expect(b.records.digest()).toEqual(a.records.digest())
    expect(b.records.rangeRoots('')).toEqual(a.records.rangeRoots(''))
    // A newer version of the same value: the ranges differ.
    await b.records.applyRemote([{ key: `file:${rid}/title`, value: 'x', hlc: b.records.hlc.now(), origin: 'nodeB' }])
    expect(b.records.digest().digest).not.toBe(a.records.digest().digest)
    expect(b.records.digest().keys).toBe(a.records.digest().keys)
    // A root's hash covers its values too (equal versions with another value only a corrupt store holds).
    const ver = a.kv.get(`ver:${rid}`)!
    expect(rootHash(rid, ver, { title: 'x' })).not.toBe(rootHash(rid, ver, { title: 'y' }))
    expect(rootHash(rid, ver, { a: '1', b: '2' })).toBe(rootHash(rid, ver, new Map([['b', '2'], ['a', '1']])))
    // Two roots of equal content hash apart: one on each side would otherwise leave a range's sum equal.
    const other = newRecordId()
    expect(rootHash(other, ver, { title: 'x' })).not.toBe(rootHash(rid, ver, { title: 'x' }))
  })

  it('keep the buckets in memory, write them when the store closes, and sum them from the root rows after a crash', async () => {
    const file = fresh()
    const s = open(file)
    const rand = prng(7)
    const known: RecordId[] = []
    for (let i = 0; i < 400; i++) await randomRecordOp(s, rand, known, i)
    const digest = s.records.digest()
    // Open: the bucket rows are not current (a crash now must not leave them trusted).
    expect(s.kv.get(FP_BUCKETS_CURRENT)).toBeUndefined()
    s.close()
    let kv = openKv({ path: file, backgroundCheckpoint: false })
    expect(kv.get(FP_BUCKETS_CURRENT)).toBe(FP_FORMAT)
    const written = new Map(kv.range(FP_BUCKET, prefixEnd(FP_BUCKET)))
    expect(written.size).toBeGreaterThan(50)
    expect(written).toEqual(bucketsOfRoots(kv))
    // As after a crash: writes since the rows were written (one bucket's row is stale), and no mark.
    kv.writeSync(tx => {
      tx.put(`${FP_BUCKET}0000`, `${'f'.repeat(32)} 7 70`)
      tx.delete(FP_BUCKETS_CURRENT)
    })
    kv.close()
    const again = open(file)
    expect(again.records.digest()).toEqual(digest)
    expect(fingerprintErrors(again)).toEqual([])
    expect(again.kv.get(FP_BUCKETS_CURRENT)).toBeUndefined()
    await randomRecordOp(again, rand, known, 400)
    const after = again.records.digest()
    again.close()
    kv = openKv({ path: file, backgroundCheckpoint: false })
    expect(new Map(kv.range(FP_BUCKET, prefixEnd(FP_BUCKET)))).toEqual(bucketsOfRoots(kv))
    kv.close()
    // A clean close: the next open takes the rows as they are.
    const third = open(file)
    cleanups.push(() => { third.close() })
    expect(third.records.digest()).toEqual(after)
    expect(fingerprintErrors(third)).toEqual([])
  })

  it('are folded in after the writes, and after a crash from the change log (or rebuilt when the log no longer reaches back)', async () => {
    const s = open(fresh())
    cleanups.push(() => { s.close() })
    const rand = prng(11)
    const known: RecordId[] = []
    for (let i = 0; i < 200; i++) await randomRecordOp(s, rand, known, i)
    // Written, not folded yet: the root rows lag the writes until a read folds them in.
    const mark = s.kv.get(FP_FOLDED)
    expect(s.records.digest().keys).toBeGreaterThan(0)
    expect(s.kv.get(FP_FOLDED)).not.toBe(mark)
    expect(fingerprintErrors(s)).toEqual([])
    for (let i = 200; i < 260; i++) await randomRecordOp(s, rand, known, i)
    // A crash now: a copy of the file and its log as they are (no close, nothing folded since the last read).
    const stale = rows(s)
    const logs: string[] = []
    const logger = { debug () {}, warn () {}, error () {}, info (msg: string) { logs.push(msg) }, child () { return logger } }
    const crashCopy = (): string => {
      const to = fresh()
      for (const suffix of ['', '-wal']) if (fs.existsSync(s.kv.path + suffix)) fs.copyFileSync(s.kv.path + suffix, to + suffix)
      return to
    }
    const copy = crashCopy()
    const want = s.records.digest()
    const crashed = openNodeStore({ path: copy, nodeId: 'nodeA', backgroundCheckpoint: false, logger })
    cleanups.push(() => { crashed.close() })
    expect(logs.some(l => l.startsWith('range fingerprints: folded in the roots changed since the last fold'))).toBe(true)
    expect(rows(crashed)).not.toEqual(stale)
    expect(crashed.records.digest()).toEqual(want)
    expect(fingerprintErrors(crashed)).toEqual([])
    // The change log trimmed past the mark: the rows are rebuilt.
    for (let i = 260; i < 300; i++) await randomRecordOp(s, rand, known, i)
    const last = s.records.digest()
    for (let i = 300; i < 320; i++) await randomRecordOp(s, rand, known, i)
    const copy2 = crashCopy()
    const final = s.records.digest()
    expect(final).not.toEqual(last)
    const trimmed = openKv({ path: copy2, backgroundCheckpoint: false })
    trimmed.writeSync(tx => { tx.put(FP_FOLDED, '1-0'); tx.put('evlow:meta:events', '9999999999999-0') })
    // As the crash left it: the mark of a clean close is not there.
    expect(trimmed.get(FP_BUCKETS_CURRENT)).toBeUndefined()
    trimmed.close()
    logs.length = 0
    const rebuilt = openNodeStore({ path: copy2, nodeId: 'nodeA', backgroundCheckpoint: false, logger })
    cleanups.push(() => { rebuilt.close() })
    expect(logs.some(l => l.startsWith('range fingerprints built'))).toBe(true)
    expect(rebuilt.records.digest()).toEqual(final)
    expect(fingerprintErrors(rebuilt)).toEqual([])
  })
})
