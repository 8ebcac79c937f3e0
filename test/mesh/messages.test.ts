import { deflateRawSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import {
  decodeMessage, encodeMessage, MAX_MESSAGE_BYTES, WireError, WIRE_VERSION, type Message
} from '../../src/mesh/index.js'
import type { RemoteEntry } from '../../src/records/index.js'

const RID = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
const ORIGIN = '12D3KooWRm8J3iL796zPFi2EtGGtUJn58AG67gcqzMFHZnnsTzqD'
const HLC = '018f3a2b4c5d0001'

function envelope (body: unknown, flags = 0): Uint8Array {
  const json = Buffer.from(JSON.stringify(body))
  return new Uint8Array([WIRE_VERSION, flags, ...json])
}

function record (fields: number): RemoteEntry[] {
  return Array.from({ length: fields }, (_, i) => ({ key: `file:${RID}/field${i}`, value: `value number ${i}`, hlc: HLC, origin: ORIGIN }))
}

describe('wire messages', () => {
  it('round-trips every message type', () => {
    const entries: RemoteEntry[] = [
      { key: `file:${RID}`, value: null, hlc: '018f3a2b4c5d0000', origin: ORIGIN },
      { key: `file:${RID}/title`, value: 'Ünïcode "quoted" ✓', hlc: HLC, origin: ORIGIN },
      { key: `file:${RID}/gone`, value: null, hlc: HLC, origin: 'node-abc' }
    ]
    const messages: Message[] = [
      { t: 'push', origin: ORIGIN, epoch: 1_700_000_000_000, seq: 7, entries },
      { t: 'pull', log: 'abcd', cursor: '1700000000000-3', maxBytes: 1024 },
      { t: 'pull', log: null, cursor: null, maxBytes: MAX_MESSAGE_BYTES },
      { t: 'snap', after: `file:${RID}/title`, maxBytes: 5000 },
      { t: 'changes', log: 'abcd', entries, next: '1-2', head: '1-9', gap: false },
      { t: 'snapshot', log: 'abcd', entries: [], next: null, head: null },
      { t: 'error', code: 'busy', message: 'too many pulls', retryAfterMs: 250 }
    ]
    for (const m of messages) {
      const back = decodeMessage(encodeMessage(m))
      if ('entries' in m) {
        // Entries come back grouped by root (root tombstone first), then by version.
        expect(new Set((back as typeof m).entries.map(e => JSON.stringify(e)))).toEqual(new Set(m.entries.map(e => JSON.stringify(e))))
        expect({ ...back, entries: [] }).toEqual({ ...m, entries: [] })
      } else {
        expect(back).toEqual(m)
      }
    }
  })

  it('names a record written in one go by its root and version once', () => {
    const entries = record(40)
    const naive = Buffer.byteLength(JSON.stringify(entries))
    const raw = entries.reduce((n, e) => n + e.key.length + (e.value?.length ?? 0), 0)
    const bytes = encodeMessage({ t: 'push', origin: ORIGIN, epoch: 1, seq: 1, entries })
    expect(bytes.length).toBeLessThan(raw)
    expect(bytes.length).toBeLessThan(naive / 5)
    const text = Buffer.from(JSON.stringify(decodeMessage(bytes))).toString()
    expect(text.length).toBeGreaterThan(0)
  })

  it('refuses bytes that are not a message of this wire version within the limits', () => {
    const push = (b: unknown): unknown => ({ t: 'push', o: ORIGIN, e: 1, s: 1, b })
    const block = (r: unknown, v: unknown = [[HLC, 0]], o: unknown = [ORIGIN]): unknown => ({ o, v, r })
    const bad: Array<[string, Uint8Array]> = [
      ['empty', new Uint8Array()],
      ['wire version 2', new Uint8Array([2, 0, ...Buffer.from('{}')])],
      ['unknown flag', envelope({ t: 'pull', l: null, c: null, m: 1 }, 4)],
      ['not JSON', new Uint8Array([WIRE_VERSION, 0, ...Buffer.from('{nope')])],
      ['not UTF-8', new Uint8Array([WIRE_VERSION, 0, 0xff, 0xfe])],
      ['an array body', envelope([1, 2])],
      ['unknown type', envelope({ t: 'gossip' })],
      ['over 1 MiB', new Uint8Array(MAX_MESSAGE_BYTES + 1).fill(32)],
      ['a deflate bomb', new Uint8Array([WIRE_VERSION, 1, ...deflateRawSync(Buffer.alloc(64 * 1024 * 1024, 32))])],
      ['bad deflate', new Uint8Array([WIRE_VERSION, 1, 1, 2, 3, 4])],
      ['bad origin', envelope({ t: 'push', o: 'no spaces allowed', e: 1, s: 1, b: block([]) })],
      ['negative seq', envelope({ t: 'push', o: ORIGIN, e: 1, s: -1, b: block([]) })],
      ['fractional epoch', envelope({ t: 'push', o: ORIGIN, e: 1.5, s: 1, b: block([]) })],
      ['no block', envelope(push(undefined))],
      ['bad hlc', envelope(push(block([[RID, -1, [[0, 'f', 'v']]]], [['not-an-hlc', 0]])))],
      ['origin index out of range', envelope(push(block([[RID, -1, [[0, 'f', 'v']]]], [[HLC, 3]])))],
      ['version index out of range', envelope(push(block([[RID, -1, [[9, 'f', 'v']]]])))],
      ['root version out of range', envelope(push(block([[RID, 5, []]])))],
      ['root id with a slash', envelope(push(block([[`${RID}/x`, -1, [[0, 'f', 'v']]]])))],
      ['odd field group', envelope(push(block([[RID, -1, [[0, 'f']]]])))],
      ['empty field name', envelope(push(block([[RID, -1, [[0, '', 'v']]]])))],
      ['number value', envelope(push(block([[RID, -1, [[0, 'f', 42]]]])))],
      ['key over 1 KiB', envelope(push(block([[RID, -1, [[0, 'é'.repeat(600), 'v']]]])))],
      ['value over 256 KiB', envelope(push(block([[RID, -1, [[0, 'f', 'v'.repeat(256 * 1024 + 1)]]]])))],
      ['page size 0', envelope({ t: 'pull', l: 'x', c: null, m: 0 })],
      ['page size over 1 MiB', envelope({ t: 'snap', a: null, m: MAX_MESSAGE_BYTES + 1 })],
      ['long cursor', envelope({ t: 'pull', l: 'x', c: 'c'.repeat(500), m: 10 })],
      ['gap not boolean', envelope({ t: 'changes', l: 'x', b: block([]), n: null, h: null, g: 'yes' })],
      ['unknown error code', envelope({ t: 'error', c: 'teapot', m: 'x' })]
    ]
    for (const [what, bytes] of bad) {
      expect(() => decodeMessage(bytes), what).toThrow(WireError)
    }
  })
})
