import { describe, expect, it } from 'vitest'
import {
  DeprecatedFieldError, InvalidFieldError, MAX_FIELD_BYTES, checkWritableField, classifyValue, flatten, generaliseField, nest, validateFieldPath
} from '../../src/records/index.js'
import { schemaCounterKey } from '../../src/records/schema-type.js'

describe('field paths', () => {
  it('accepts ordinary paths', () => {
    for (const f of ['title', 'fileinfo/duration', 'stream/0', 'cids/bafkreiabc', 'titles/eng',
      'ünïcode/名前']) expect(() => { validateFieldPath(f) }).not.toThrow()
  })

  it('refuses empty segments, control characters and overlong names', () => {
    for (const f of ['', '/title', 'title/', 'a//b', 'a\nb', 'a\u0000b', 'a\u001fb', 'x'.repeat(513)]) {
      expect(() => { validateFieldPath(f) }, JSON.stringify(f)).toThrow(InvalidFieldError)
    }
    expect(() => { validateFieldPath(42) }).toThrow(InvalidFieldError)
  })

  it('refuses a __proto__ path segment, which objects cannot hold as a property; other names of Object.prototype are fields like any', () => {
    for (const f of ['__proto__', '__proto__/x', 'a/__proto__', 'a/__proto__/b']) {
      expect(() => { validateFieldPath(f) }, f).toThrow(InvalidFieldError)
      expect(() => { checkWritableField(f) }, f).toThrow(InvalidFieldError)
    }
    for (const f of ['__proto__x', 'a/x__proto__', 'constructor', 'toString', 'a/hasOwnProperty',
      'valueOf/0']) expect(() => { validateFieldPath(f) }, f).not.toThrow()
  })

  it('refuses a name whose key would pass the 1 KiB peers enforce, counted in UTF-8 bytes', () => {
    // 496 × 2 bytes = 992: `file:` + root id + `/` + name is exactly 1024 bytes.
    expect(() => { validateFieldPath('é'.repeat(496)) }).not.toThrow()
    expect(() => { validateFieldPath('é'.repeat(497)) }).toThrow(InvalidFieldError)
    expect(() => { validateFieldPath('名'.repeat(400)) }).toThrow(InvalidFieldError)
    expect(MAX_FIELD_BYTES + 'file:'.length + 26 + 1).toBe(1024)
  })

  it('refuses the deprecated fields with a typed error', () => {
    for (const f of ['cid_sha256', 'cid_', 'midhash256', 'canonical_cid', 'canonical_cid/x']) {
      expect(() => { checkWritableField(f) }, f).toThrow(DeprecatedFieldError)
    }
    expect(() => { checkWritableField('my_cid_sha') }).not.toThrow()
    expect(() => { checkWritableField('x/midhash256') }).not.toThrow()
  })
})

describe('flatten and nest', () => {
  it('nests paths, turns numeric segments into arrays and keeps values as strings', () => {
    const flat = {
      title: 'Inception',
      'fileinfo/duration': '8878.5',
      'fileinfo/streamdetails/video/0/codec': 'h264',
      'streams/0/language': 'eng',
      'streams/1/language': 'fre'
    }
    expect(nest(flat)).toEqual({
      title: 'Inception',
      fileinfo: { duration: '8878.5', streamdetails: { video: [{ codec: 'h264' }] } },
      streams: [{ language: 'eng' }, { language: 'fre' }]
    })
  })

  it('fills holes in sparse arrays with null and keeps a leaf that is also a branch under ""', () => {
    expect(nest({ 'a/0': 'x', 'a/2': 'z' })).toEqual({ a: ['x', null, 'z'] })
    expect(nest({ a: 'leaf', 'a/b': 'branch' })).toEqual({ a: { '': 'leaf', b: 'branch' } })
  })

  it('round-trips through flatten', () => {
    const flat = { a: 'leaf', 'a/b': 'branch', 'list/0/x': '1', 'list/1/x': '2', 'deep/k/v': '' }
    expect(flatten(nest(flat))).toEqual(flat)
  })

  it('flattens null to "" and numbers to strings, as clients of the original expect', () => {
    expect(flatten({ a: null, b: 3, c: [true, { d: undefined }] })).toEqual({ a: '', b: '3', 'c/0': 'true', 'c/1/d': '' })
  })
})

describe('schema classification', () => {
  it('generalises key-set members, array indices and language codes', () => {
    expect(generaliseField('cids/bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku')).toEqual({ field: 'cids/<cid>', keyHint: '' })
    expect(generaliseField('stream/3')).toEqual({ field: 'stream/<n>', keyHint: '' })
    expect(generaliseField('titles/eng')).toEqual({ field: 'titles/<lang>', keyHint: 'language-code' })
  })

  it('classifies primitive types and hints', () => {
    expect(classifyValue('12')).toEqual({ prim: 'int', hint: '' })
    expect(classifyValue('1729872000')).toEqual({ prim: 'int', hint: 'timestamp' })
    expect(classifyValue('8878.5')).toEqual({ prim: 'float', hint: '' })
    expect(classifyValue('true')).toEqual({ prim: 'bool', hint: '' })
    expect(classifyValue('{"a":1}')).toEqual({ prim: 'json-object', hint: '' })
    expect(classifyValue('[1]')).toEqual({ prim: 'json-array', hint: '' })
    expect(classifyValue('[not json')).toEqual({ prim: 'string', hint: '' })
    expect(classifyValue('')).toEqual({ prim: 'undefined', hint: '' })
    expect(classifyValue('bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku')).toEqual({ prim: 'string', hint: 'cid' })
    expect(classifyValue('2024-01-02')).toEqual({ prim: 'string', hint: 'timestamp' })
    // Each pattern is tried only where the first character allows it: the edges of those shortcuts.
    expect(classifyValue('-12')).toEqual({ prim: 'int', hint: '' })
    expect(classifyValue('-0.5')).toEqual({ prim: 'float', hint: '' })
    expect(classifyValue('.5')).toEqual({ prim: 'float', hint: '' })
    expect(classifyValue('1e5')).toEqual({ prim: 'float', hint: '' })
    expect(classifyValue('QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG')).toEqual({ prim: 'string', hint: 'cid' })
    expect(classifyValue('Qm')).toEqual({ prim: 'string', hint: '' })
    expect(classifyValue('banana')).toEqual({ prim: 'string', hint: '' })
    expect(classifyValue('2024-01-02T10:00:00Z')).toEqual({ prim: 'string', hint: 'timestamp' })
    expect(classifyValue('-2024-01-02')).toEqual({ prim: 'string', hint: '' })
    expect(classifyValue('12 Monkeys')).toEqual({ prim: 'string', hint: '' })
  })

  it('names a cids/ member\'s counter as the generalised field does', () => {
    const cid = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
    const g = generaliseField(`cids/${cid}`)
    expect(schemaCounterKey(`cids/${cid}`, 'true')).toBe(`idx:schema/${g.field}\u001f${g.keyHint}\u001fbool\u001f`)
    // Not a CID: generalised like any other field.
    expect(schemaCounterKey('cids/12', 'x')).toBe('idx:schema/cids/<n>\u001f\u001fstring\u001f')
  })

  it('gives each value type its own counter key, the same on every call', () => {
    const values = ['', 'true', '12', '1729872000', '8878.5', '[1]', '{"a":1}', 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku', '2024-01-02', 'text']
    const seen = new Set<string>()
    for (const v of values) {
      const t = classifyValue(v)
      for (let i = 0; i < 2; i++) {
        expect(schemaCounterKey('titles/fra', v)).toBe(`idx:schema/titles/<lang>\u001flanguage-code\u001f${t.prim}\u001f${t.hint}`)
        expect(schemaCounterKey('stream/3/codec', v)).toBe(`idx:schema/stream/<n>/codec\u001f\u001f${t.prim}\u001f${t.hint}`)
      }
      seen.add(schemaCounterKey('size', v))
    }
    expect(seen.size).toBe(values.length)
  })
})
