import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { prefixEnd } from '../../src/kv/index.js'
import {
  DeprecatedFieldError, InvalidAddressError, InvalidFieldError, InvalidValueError, SelfAliasError, UnknownRecordError,
  META_EVENTS, VersionMap, formatHlc, isRecordId, openNodeStore, type NodeStore
} from '../../src/records/index.js'
import { tmpDir } from '../helpers/tmp.js'
import { testCid } from '../helpers/record-ops.js'

// Real CIDs of the original's test vectors (docs/design/original.md#identifiers-cids).
const MID = 'bagacbabaec7v3fu2ygzh3e2sybg3fbzmisry2hbtpmck6vx3yftea6vzq35r4' // midhash of "hello world"
const SHA = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e' // sha2-256 raw of "hello world"
const MID2 = 'bagacbabaeanb7p2mfixg6kcg6agfikkmptdj6g6l5ff3awskjucxghdz6ntd2' // midhash of the 490-byte fixture
const DAGPB = 'bafybeiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' // rank 40 vector

const cleanups: Array<() => void> = []
afterEach(() => { while (cleanups.length > 0) cleanups.pop()!() })

function store (): NodeStore & { file: string } {
  const t = tmpDir()
  const file = path.join(t.dir, 'db', 'meta-core.db')
  const s = openNodeStore({ path: file, nodeId: 'node-a' })
  cleanups.push(() => { s.close(); t.cleanup() })
  return { ...s, file }
}

function keysUnder (s: NodeStore, prefix: string): string[] {
  return s.kv.keys(prefix, prefixEnd(prefix))
}

describe('mint and aliases', () => {
  it('mints a UUIDv7 root with filePath, sizeByte and mtimeNano and indexes it', async () => {
    const s = store()
    const rid = await s.records.mint('/files/watch/a.mkv', 15032385536, 1729872000000000000n)
    expect(isRecordId(rid)).toBe(true)
    expect(s.records.getFlat(rid)).toEqual({ filePath: '/files/watch/a.mkv', sizeByte: '15032385536', mtimeNano: '1729872000000000000' })
    expect(s.kv.get(`idx:roots/${rid}`)).toBe('')
    expect(s.records.countRecords()).toBe(1)
    expect(s.records.listRoots()).toEqual([rid])
  })

  it('registers an alias in the reverse index and the cids key-set, idempotently', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1)
    await s.records.addAlias(rid, MID)
    await s.records.addAlias(rid, MID)
    expect(s.kv.get(`cid:${MID}`)).toBe(rid)
    expect(s.kv.get(`file:${rid}/cids/${MID}`)).toBe('true')
    expect(s.records.resolveRoot(MID)).toBe(rid)
    expect(s.records.resolveRoot(rid)).toBe(rid)
    expect(s.records.resolveRoot(SHA)).toBeUndefined()
  })

  it('registers the alias for any cids/ field written through a plain write, in the same transaction', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1)
    const seen: string[][] = []
    s.kv.onCommit(() => { seen.push(s.kv.keys('cid:', 'cid;')) })
    await s.records.mergeFlat(rid, { title: 'x', [`cids/${SHA}`]: 'true' })
    expect(seen).toEqual([[`cid:${SHA}`]])
    expect(s.records.resolveRoot(SHA)).toBe(rid)
  })

  it('refuses a self-alias and invalid cids', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1)
    await expect(s.records.addAlias(rid, rid)).rejects.toBeInstanceOf(SelfAliasError)
    await expect(s.records.addAlias(rid, 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG')).rejects.toBeInstanceOf(InvalidFieldError)
    await expect(s.records.mergeFlat(rid, { [`cids/midhash256:${MID}`]: 'true' })).rejects.toBeInstanceOf(InvalidFieldError)
    expect(keysUnder(s, `file:${rid}/cids/`)).toEqual([])
  })

  it('does not move a CID owned by another record: the two roots become one record', async () => {
    const s = store()
    const a = await s.records.mint('/files/a', 1, 1, { title: 'first', [`cids/${MID}`]: 'true' })
    const b = await s.records.mint('/files/b', 1, 1, { year: '2001' })
    await s.records.addAlias(b, MID)
    // The alias still leads to the first record's group, and nothing of it was lost.
    expect(s.records.resolveRoot(MID)).toBe(a)
    const doc = s.records.getDocument(MID)!
    expect(doc.metadata.title).toBe('first')
    expect(doc.metadata.year).toBe('2001')
    expect(doc.members).toEqual([a, b])
    expect(s.records.countRecords()).toBe(1)
    expect(s.records.listRoots()).toEqual([a])
    expect(s.records.resolveRoot(b)).toBe(a)
  })
})

describe('fields', () => {
  it('keeps fields named like Object.prototype\'s members: read back, inherited by a new root, exported to peers', async () => {
    const s = store()
    const fields = { constructor: 'c', toString: 't', 'hasOwnProperty/0': 'h', title: 'x' }
    const old = await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true', ...fields })
    expect(s.records.getFlat(old)).toMatchObject(fields)
    const next = await s.records.mint('/files/a', 2, 2, {}, { inheritFrom: old })
    expect(s.records.getFlat(next)).toMatchObject(fields)
    const exported = new Map(s.records.exportRange(undefined, { limit: Infinity }).entries.map(e => [e.key, e.value]))
    for (const [f, v] of Object.entries(fields)) {
      expect(exported.get(`file:${old}/${f}`), f).toBe(v)
      expect(exported.get(`file:${next}/${f}`), f).toBe(v)
    }
  })

  it('merges, replaces (keeping owned fields) and reads single properties', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 10, 20, { [`cids/${MID}`]: 'true' })
    const r1 = await s.records.mergeFlat(MID, { title: 'A', year: '2000' })
    expect(r1).toEqual({ rid, updated: 2, created: false })
    const r2 = await s.records.setFlat(rid, { title: 'B' })
    expect(r2.updated).toBe(2) // title changed, year removed
    expect(s.records.getFlat(rid)).toEqual({ filePath: '/files/a', sizeByte: '10', mtimeNano: '20', [`cids/${MID}`]: 'true', title: 'B' })
    expect(s.records.getProperty(MID, 'title')).toBe('B')
    expect(s.records.getProperty(MID, 'nope')).toBeUndefined()
    await s.records.setProperty(MID, 'fileinfo/duration', '8878.5')
    expect(s.records.getProperty(rid, 'fileinfo/duration')).toBe('8878.5')
    expect(await s.records.deleteProperty(MID, 'fileinfo/duration')).toEqual({ rid, deleted: true })
    expect(await s.records.deleteProperty(MID, 'fileinfo/duration')).toEqual({ rid, deleted: false })
    expect(s.records.getProperty(rid, 'fileinfo/duration')).toBeUndefined()
  })

  it('writes nothing and publishes nothing for a write of the values already held', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x' })
    const before = s.kv.streamLength(META_EVENTS)
    const ver = s.kv.get(`ver:${rid}`)
    const r = await s.records.mergeFlat(rid, { title: 'x', filePath: '/files/a' })
    expect(r.updated).toBe(0)
    expect(s.kv.streamLength(META_EVENTS)).toBe(before)
    expect(s.kv.get(`ver:${rid}`)).toBe(ver)
  })

  it('creates a record when a write names an unknown CID, addressed by that CID afterwards', async () => {
    const s = store()
    const r = await s.records.mergeFlat(SHA, { title: 'gateway record' })
    expect(r.created).toBe(true)
    expect(isRecordId(r.rid)).toBe(true)
    expect(s.records.getFlat(SHA)).toEqual({ title: 'gateway record', [`cids/${SHA}`]: 'true' })
  })

  it('refuses bad addresses, deprecated fields, bad paths and bad values without writing anything', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1)
    const rows = s.kv.count('', '\uffff')
    await expect(s.records.mergeFlat('not-a-cid', { a: 'b' })).rejects.toBeInstanceOf(InvalidAddressError)
    await expect(s.records.mergeFlat(rid, { ok: 'fine', cid_sha256: 'x' })).rejects.toBeInstanceOf(DeprecatedFieldError)
    await expect(s.records.mergeFlat(rid, { midhash256: 'x' })).rejects.toBeInstanceOf(DeprecatedFieldError)
    await expect(s.records.mergeFlat(rid, { canonical_cid: 'x' })).rejects.toBeInstanceOf(DeprecatedFieldError)
    await expect(s.records.mergeFlat(rid, { 'a//b': 'x' })).rejects.toBeInstanceOf(InvalidFieldError)
    await expect(s.records.mergeFlat(rid, { a: 3 as unknown as string })).rejects.toBeInstanceOf(InvalidValueError)
    await expect(s.records.mergeFlat(rid, { a: 'x'.repeat(256 * 1024 + 1) })).rejects.toBeInstanceOf(InvalidValueError)
    await expect(s.records.deleteRoot('../etc')).rejects.toBeInstanceOf(InvalidAddressError)
    expect(s.kv.count('', '\uffff')).toBe(rows)
  })

  it('adds members to pipe-delimited sets once', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1)
    expect((await s.records.addToSet(rid, 'tags', 'a')).added).toBe(true)
    expect((await s.records.addToSet(rid, 'tags', 'b')).added).toBe(true)
    expect((await s.records.addToSet(rid, 'tags', 'a')).added).toBe(false)
    expect(s.records.getProperty(rid, 'tags')).toBe('a|b')
    await expect(s.records.addToSet(rid, 'tags', 'x|y')).rejects.toBeInstanceOf(InvalidValueError)
  })
})

describe('documents', () => {
  it('hoists cids, derives canonical_cid by rank, lists duplicates, never stores canonical_cid', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'T', [`cids/${MID}`]: 'true' })
    expect(s.records.getDocument(MID)!.canonical_cid).toBe(MID)
    await s.records.addAlias(MID, SHA)
    expect(s.records.getDocument(MID)!.canonical_cid).toBe(SHA)
    await s.records.addAlias(MID, DAGPB)
    await s.records.addDuplicatePath(MID, '/files/copy/a')
    const doc = s.records.getDocument(SHA)!
    expect(doc.rid).toBe(rid)
    expect(doc.canonical_cid).toBe(DAGPB)
    expect([...doc.cids].sort()).toEqual([DAGPB, MID, SHA].sort())
    expect(doc.duplicates).toEqual(['/files/copy/a'])
    expect(doc.metadata.title).toBe('T')
    expect(s.kv.keys('', '\uffff').filter(k => k.includes('canonical'))).toEqual([])
    expect(s.records.getDocument(MID2)).toBeUndefined()
  })

  it('serves the same document as JSON text, for a single root and for a group', async () => {
    const s = store()
    await s.records.mint('/files/a', 1, 1, { title: 'T "quoted" ✓', 'x/y': '\n', [`cids/${MID}`]: 'true' })
    await s.records.addDuplicatePath(MID, '/files/dup')
    const same = (addr: string): void => {
      const { metadataJson, ...rest } = s.records.getDocumentJson(addr)!
      const { metadata, ...expected } = s.records.getDocument(addr)!
      expect(JSON.parse(metadataJson)).toEqual(metadata)
      expect(rest).toEqual(expected)
    }
    same(MID)
    const b = await s.records.mint('/files/b', 1, 1, { year: '1999', [`cids/${SHA}`]: 'true' })
    await s.records.addAlias(b, MID)
    same(SHA)
    expect(s.records.getDocumentJson(MID2)).toBeUndefined()
    // A deleted root (here the whole group) reads as absent through either path.
    await s.records.deleteRoot(b)
    expect(s.records.getDocument(MID)).toBeUndefined()
    expect(s.records.getDocumentJson(MID)).toBeUndefined()
    expect(s.records.getDocumentJson(SHA)).toBeUndefined()
    s.close()
    expect(() => s.records.getDocumentJson(MID)).toThrow(/closed/)
  })

  it('nests the document for people, with the cids key-set hoisted into an array', async () => {
    const s = store()
    await s.records.mint('/files/a', 1, 1, {
      title: 'T',
      'fileinfo/streamdetails/video/0/codec': 'h264',
      'streams/0/language': 'eng',
      [`cids/${MID}`]: 'true',
      [`cids/${SHA}`]: 'true'
    })
    expect(s.records.getNestedDocument(MID)).toEqual({
      title: 'T',
      filePath: '/files/a',
      sizeByte: '1',
      mtimeNano: '1',
      fileinfo: { streamdetails: { video: [{ codec: 'h264' }] } },
      streams: [{ language: 'eng' }],
      cids: [MID, SHA].sort(),
      canonical_cid: SHA,
      duplicates: []
    })
    expect(s.records.getNestedDocument(MID2)).toBeUndefined()
  })
})

describe('duplicates', () => {
  it('removes a duplicate, promotes one when filePath goes, and reports the last copy', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true' })
    await s.records.addDuplicatePath(MID, '/files/c')
    await s.records.addDuplicatePath(MID, '/files/b')
    await s.records.addDuplicatePath(MID, '/files/a') // its own filePath: not a duplicate
    expect(s.records.duplicatesOf(MID)).toEqual(['/files/b', '/files/c'])
    expect(await s.records.removeFilePath(MID, '/files/c')).toEqual({ kind: 'duplicate-removed', rid })
    expect(await s.records.removeFilePath(MID, '/files/a')).toEqual({ kind: 'promoted', rid, promoted: '/files/b' })
    expect(s.records.getProperty(rid, 'filePath')).toBe('/files/b')
    expect(s.records.duplicatesOf(MID)).toEqual([])
    expect(await s.records.removeFilePath(MID, '/files/b')).toEqual({ kind: 'last-copy', rid })
    expect(await s.records.removeFilePath(MID, '/files/zzz')).toEqual({ kind: 'not-found' })
    await expect(s.records.addDuplicatePath(MID2, '/files/x')).rejects.toBeInstanceOf(UnknownRecordError)
  })
})

describe('releaseCopy (holders)', () => {
  it('deletes the record when this node was its last holder', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true', 'holders/node-a': 'true' })
    expect(await s.records.releaseCopy(MID, '/files/a', 'node-a')).toEqual({ kind: 'deleted', rid })
    expect(s.records.resolveRoot(MID)).toBeUndefined()
  })

  it('only drops this node\'s holder member while another node holds the content', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true', 'holders/node-a': 'true', 'holders/node-b': 'true' })
    expect(await s.records.releaseCopy(MID, '/files/a', 'node-a')).toEqual({ kind: 'released', rid })
    const flat = s.records.getFlat(MID)!
    expect(flat['holders/node-a']).toBeUndefined()
    expect(flat['holders/node-b']).toBe('true')
  })

  it('a duplicate row the caller did not count is promoted: the record, its fields and the holder stay', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true', 'holders/node-a': 'true', title: 'T' })
    await s.records.addDuplicatePath(MID, '/files/c')
    await s.records.addDuplicatePath(MID, '/files/b')
    expect(await s.records.releaseCopy(MID, '/files/a', 'node-a')).toEqual({ kind: 'kept', rid, promoted: '/files/b', localPaths: ['/files/b', '/files/c'] })
    expect(s.records.getFlat(MID)).toMatchObject({ filePath: '/files/b', title: 'T', 'holders/node-a': 'true' })
    expect(s.records.duplicatesOf(MID)).toEqual(['/files/c'])
    // A duplicate goes while the caller knows the filePath holds a copy: nothing else changes.
    expect(await s.records.releaseCopy(MID, '/files/c', 'node-a', { copies: [{ path: '/files/b' }] })).toEqual({ kind: 'kept', rid, localPaths: [] })
    expect(s.records.getFlat(MID)).toMatchObject({ filePath: '/files/b', 'holders/node-a': 'true' })
  })

  it('promotes the copy the caller knows, with its size and mtime, and records the known copies the record lost', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true', 'holders/node-a': 'true' })
    await s.records.addDuplicatePath(MID, '/files/0-unconfirmed')
    const copies = [{ path: '/files/b', sizeByte: '7', mtimeNano: '9' }, { path: '/files/c' }]
    const r = await s.records.releaseCopy(MID, '/files/a', 'node-a', { copies })
    expect(r).toEqual({ kind: 'kept', rid, promoted: '/files/b', localPaths: ['/files/b', '/files/0-unconfirmed', '/files/c'] })
    expect(s.records.getFlat(MID)).toMatchObject({ filePath: '/files/b', sizeByte: '7', mtimeNano: '9', 'holders/node-a': 'true' })
    expect(s.records.duplicatesOf(MID)).toEqual(['/files/0-unconfirmed', '/files/c'])
  })

  it('a promoted duplicate takes its size and mtime from the caller when it knows them', async () => {
    const s = store()
    await s.records.mint('/files/a', 1, 1, { [`cids/${MID}`]: 'true', 'holders/node-a': 'true' })
    await s.records.addDuplicatePath(MID, '/files/b')
    await s.records.releaseCopy(MID, '/files/a', 'node-a', { copies: [{ path: '/files/b', sizeByte: '5', mtimeNano: '6' }] })
    expect(s.records.getFlat(MID)).toMatchObject({ filePath: '/files/b', sizeByte: '5', mtimeNano: '6' })
    expect(s.records.duplicatesOf(MID)).toEqual([])
  })

  it('never deletes a record that had no holders (written through the API)', async () => {
    const s = store()
    const r = await s.records.mergeFlat(SHA, { title: 'gateway' })
    expect(await s.records.releaseCopy(SHA, '/files/x', 'node-a')).toEqual({ kind: 'released', rid: r.rid })
    expect(s.records.getFlat(SHA)!.title).toBe('gateway')
    expect(await s.records.releaseCopy(MID2, '/files/x', 'node-a')).toEqual({ kind: 'not-found' })
  })
})

describe('deleteRoot', () => {
  it('removes every key, alias, duplicate and index entry, leaves a root tombstone, and is idempotent', async () => {
    const s = store()
    const keep = await s.records.mint('/files/keep', 1, 1, { [`cids/${MID2}`]: 'true', title: 'keep' })
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x', [`cids/${MID}`]: 'true', [`cids/${SHA}`]: 'true' })
    await s.records.addDuplicatePath(rid, '/files/dup')
    const before = s.kv.streamHead(META_EVENTS)
    const r = await s.records.deleteRoot(SHA)
    expect(r).toEqual({ rid, deleted: 6 })
    // One del per removed key, and the root tombstone's own row.
    const logged = s.records.readChangeLog(before, 100)
    expect(logged.map(e => `${e.op} ${e.key}`).sort()).toEqual([
      `del file:${rid}`, `del file:${rid}/cids/${MID}`, `del file:${rid}/cids/${SHA}`,
      `del file:${rid}/filePath`, `del file:${rid}/mtimeNano`, `del file:${rid}/sizeByte`, `del file:${rid}/title`
    ].sort())
    const vmAfter = VersionMap.parse(s.kv.get(`ver:${rid}`))
    for (const e of logged) expect(e.version).toBe(vmAfter.root)
    expect(keysUnder(s, `file:${rid}/`)).toEqual([])
    expect(s.kv.get(`cid:${MID}`)).toBeUndefined()
    expect(s.kv.get(`cid:${SHA}`)).toBeUndefined()
    expect(keysUnder(s, `dup:${rid}/`)).toEqual([])
    expect(s.kv.get(`idx:roots/${rid}`)).toBeUndefined()
    expect(s.records.countRecords()).toBe(1)
    expect(s.records.listRoots()).toEqual([keep])
    const vm = VersionMap.parse(s.kv.get(`ver:${rid}`))
    expect(vm.root).toBeDefined()
    expect(vm.fields.size).toBe(0)
    expect(await s.records.deleteRoot(SHA)).toEqual({ rid: undefined, deleted: 0 })
    expect(await s.records.deleteRoot(rid)).toEqual({ rid: undefined, deleted: 0 })
    expect(s.records.readChangeLog(before, 100)).toHaveLength(7)
    // Schema counters went back down with the fields.
    const schema = Object.fromEntries(s.kv.prefix('idx:schema/'))
    expect(schema['idx:schema/title\u001f\u001fstring\u001f']).toBe('1')
  })

  it('lets a newer write with a cids/ member revive a deleted root; without one the root stays no record', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x' })
    await s.records.deleteRoot(rid)
    await s.records.mergeFlat(rid, { title: 'back' })
    expect(s.records.getFlat(rid)).toBeUndefined()
    expect(s.records.countRecords()).toBe(0)
    await s.records.applyRemote([{ key: `file:${rid}/cids/${testCid(1)}`, value: 'true', hlc: formatHlc({ ms: Date.now() + 5, counter: 0 }), origin: 'peer' }])
    expect(s.records.getFlat(rid)).toEqual({ title: 'back', [`cids/${testCid(1)}`]: 'true' })
    expect(s.records.countRecords()).toBe(1)
  })
})

describe('versions and counters', () => {
  it('keeps a version beside every file: key, never under file:, and tombstones deletes', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x' })
    const vm = VersionMap.parse(s.kv.get(`ver:${rid}`))
    expect([...vm.fields.keys()].sort()).toEqual(['filePath', 'mtimeNano', 'sizeByte', 'title'])
    const v1 = vm.fields.get('title')!
    expect(v1.endsWith('node-a')).toBe(true)
    await s.records.deleteProperty(rid, 'title')
    const vm2 = VersionMap.parse(s.kv.get(`ver:${rid}`))
    expect(vm2.fields.get('title')! > v1).toBe(true)
    expect(s.kv.get(`file:${rid}/title`)).toBeUndefined()
    // Nothing but record fields under file:.
    for (const k of keysUnder(s, 'file:')) expect(k.startsWith(`file:${rid}/`)).toBe(true)
  })

  it('maintains per-field value-type counters in the write transaction', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { year: '2001' })
    await s.records.mergeFlat(rid, { year: 'unknown' })
    const c = Object.fromEntries(s.kv.prefix('idx:schema/year'))
    expect(c).toEqual({ 'idx:schema/year\u001f\u001fstring\u001f': '1' })
  })

  it('persists the clock so versions keep increasing after a restart', async () => {
    const t = tmpDir()
    cleanups.push(t.cleanup)
    const file = path.join(t.dir, 's.db')
    let s = openNodeStore({ path: file, nodeId: 'n1', now: () => 2_000_000_000_000 })
    const rid = await s.records.mint('/files/a', 1, 1)
    const v1 = VersionMap.parse(s.kv.get(`ver:${rid}`)).fields.get('filePath')!
    s.close()
    s = openNodeStore({ path: file, nodeId: 'n1', now: () => 1_000_000_000_000 }) // the wall clock went back
    await s.records.mergeFlat(rid, { filePath: '/files/b' })
    const v2 = VersionMap.parse(s.kv.get(`ver:${rid}`)).fields.get('filePath')!
    expect(v2 > v1).toBe(true)
    s.close()
  })
})

describe('reads of a group', () => {
  it('merge members per key by version, count once, and route writes to the canonical root', async () => {
    const s = store()
    const a = await s.records.mint('/files/a', 1, 1, { title: 'old', [`cids/${MID}`]: 'true' })
    const b = await s.records.mint('/files/b', 1, 1, { title: 'new', [`cids/${SHA}`]: 'true' })
    await s.records.addAlias(b, MID) // joins a's group
    expect(s.records.getFlat(SHA)!.title).toBe('new')
    await s.records.mergeFlat(SHA, { title: 'newest' })
    expect(s.kv.get(`file:${a}/title`)).toBe('newest') // landed on the canonical root
    expect(s.records.getFlat(MID)!.title).toBe('newest')
    await s.records.deleteProperty(MID, 'title')
    expect(s.records.getFlat(MID)!.title).toBeUndefined()
    expect(s.kv.get(`cid:${SHA}`)).toBe(a)
    // A field deleted through the record is deleted on every root of the group.
    await s.records.deleteProperty(SHA, 'year')
    // A peer's newer tombstone for b's copy of the shared CID splits the group again.
    const hlc = (BigInt(Date.now() + 1000) << 16n).toString(16).padStart(16, '0')
    await s.records.applyRemote([{ key: `file:${b}/cids/${MID}`, value: null, hlc, origin: 'node-b' }])
    expect(s.records.countRecords()).toBe(2)
    expect(s.records.resolveRoot(SHA)).toBe(b)
    expect(s.records.resolveRoot(MID)).toBe(a)
    expect(s.records.resolveRoot(b)).toBe(b)
    expect(s.kv.prefix('idx:grp')).toEqual([])
    expect(s.records.listRoots()).toEqual([a, b])
  })
})

describe('events', () => {
  it('publishes one set per field of a minted record and one del per deleted key', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x', year: '2001', genre: 'Drama' })
    const evs = (): string[] => s.records.readChangeLog(undefined, 100).map(e => `${e.op} ${e.key}`)
    expect(evs().sort()).toEqual([
      `set file:${rid}/filePath`, `set file:${rid}/genre`, `set file:${rid}/mtimeNano`, `set file:${rid}/sizeByte`,
      `set file:${rid}/title`, `set file:${rid}/year`
    ])
    // setFlat drops the unnamed client fields: one del each, one set for the changed value, nothing for the rest.
    await s.records.setFlat(rid, { title: 'y' })
    expect(evs().slice(6).sort()).toEqual([`del file:${rid}/genre`, `del file:${rid}/year`, `set file:${rid}/title`])
    await s.records.deleteProperty(rid, 'title')
    await s.records.deleteProperty(rid, 'title') // already gone: no event
    expect(evs().slice(9)).toEqual([`del file:${rid}/title`])
  })

  it('logs each change with the version it wrote, in a compact row', async () => {
    const s = store()
    const rid = await s.records.mint('/files/a', 1, 1, { title: 'x' })
    const head = s.kv.streamHead(META_EVENTS)
    await s.records.mergeFlat(rid, { title: 'y' })
    const logged = s.records.readChangeLog(head, 100)
    expect(logged.map(e => `${e.op} ${e.key}`)).toEqual([`set file:${rid}/title`])
    expect(logged[0].version).toBe(VersionMap.parse(s.kv.get(`ver:${rid}`)).fields.get('title'))
    // The stored row is compact: set/delete, key and version, no timestamp (the id carries it).
    const raw = s.kv.readStream(META_EVENTS, undefined, 100).at(-1)!
    expect(raw.fields).toEqual({ t: 's', k: `file:${rid}/title`, v: logged[0].version })
  })
})
