/**
 * The byte protocol's frames (src/mesh/bytes-wire.ts): what a peer may send
 * as a request or a header, and everything else refused before it is used.
 */
import { describe, expect, it } from 'vitest'
import { BytesWireError, decodeHeader, decodeRequest, encodeFrame, splitFrame, MAX_FRAME_BYTES, type BytesRequest } from '../../src/mesh/bytes-wire.js'

const CID = 'bagacbabaeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const req: BytesRequest = { v: 1, cid: CID, offset: 100, length: 50 }

describe('byte protocol frames', () => {
  it('round-trips a request and a header, split off the bytes that follow', () => {
    const wire = Buffer.concat([encodeFrame(req), Buffer.from('tail')])
    expect(splitFrame(wire.subarray(0, 3))).toBeUndefined()
    expect(splitFrame(wire.subarray(0, wire.length - 6))).toBeUndefined()
    const f = splitFrame(wire)!
    expect(decodeRequest(f.json)).toEqual(req)
    expect(f.rest.toString()).toBe('tail')
    const h = splitFrame(Buffer.from(encodeFrame({ ok: true, size: 120, mtimeMs: 1.5, length: 20, ext: '.mp4' })))!
    expect(decodeHeader(h.json, req)).toEqual({ ok: true, size: 120, mtimeMs: 1.5, length: 20, ext: '.mp4' })
    expect(decodeHeader({ ok: false, code: 'busy', message: 'later', retryAfterMs: 10_000_000 }, req)).toEqual({ ok: false, code: 'busy', message: 'later',
      retryAfterMs: 60_000 })
  })

  it('refuses oversized frames, bad requests and headers that would misplace bytes', () => {
    const big = Buffer.alloc(8)
    big.writeUInt32BE(MAX_FRAME_BYTES + 1, 0)
    expect(() => splitFrame(big)).toThrow(BytesWireError)
    const notJson = Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from('{x')])
    expect(() => splitFrame(notJson)).toThrow(BytesWireError)
    for (const bad of [null, { ...req, v: 2 }, { ...req, cid: 'Qm..' }, { ...req, cid: 'b' + 'a'.repeat(300) }, { ...req, offset: -1 }, { ...req, length: 1.5 },
      { ...req, offset: 2 ** 60 }]) {
      expect(() => decodeRequest(bad)).toThrow(BytesWireError)
    }
    // The holder must send min(length, size - offset) bytes: more, or fewer, is refused.
    expect(() => decodeHeader({ ok: true, size: 120, mtimeMs: 1, length: 50, ext: '' }, req)).toThrow(/20 expected/)
    expect(() => decodeHeader({ ok: true, size: 1000, mtimeMs: 1, length: 49, ext: '' }, req)).toThrow(BytesWireError)
    expect(() => decodeHeader({ ok: false, code: 'nope', message: '' }, req)).toThrow(BytesWireError)
    expect(decodeHeader({ ok: true, size: 1000, mtimeMs: 1, length: 50, ext: '/etc/passwd' }, req)).toMatchObject({ ext: '' })
  })
})
