/**
 * The private network's cipher (src/mesh/libp2p/xsalsa20.ts): published
 * XSalsa20 vectors, the same keystream as two independent implementations
 * (@noble/ciphers, and the `xsalsa20` package @libp2p/pnet uses, which is
 * what puts it on the wire) whatever the chunking, and the 64-bit block
 * counter past 2^32 blocks.
 */
import { createRequire } from 'node:module'
import { __TESTS, hsalsa, xsalsa20 as nobleXSalsa20 } from '@noble/ciphers/salsa.js'
import { u32 } from '@noble/ciphers/utils.js'
import { describe, expect, it } from 'vitest'
import { salsaSimd } from '../../src/mesh/libp2p/salsa-simd.js'
import { XSalsa20 } from '../../src/mesh/libp2p/xsalsa20.js'
import { prng } from '../../src/mesh/testing/index.js'

const require = createRequire(import.meta.url)
const stockXSalsa20 = require('xsalsa20') as (nonce: Uint8Array, key: Uint8Array) => { update: (input: Uint8Array) => Uint8Array, finalize: () => void }

const ascii = (s: string): Uint8Array => new TextEncoder().encode(s)
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

function randomBytes (rand: () => number, n: number): Uint8Array {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = Math.floor(rand() * 256)
  return b
}

/** Cuts `n` bytes into chunks: sizes around block boundaries, empty ones, and larger ones. */
function chunking (rand: () => number, n: number): number[] {
  const sizes = [0, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 4096, 65536]
  const out: number[] = []
  for (let done = 0; done < n;) {
    const s = Math.min(n - done, sizes[Math.floor(rand() * sizes.length)] + (rand() < 0.3 ? Math.floor(rand() * 64) : 0))
    out.push(s)
    done += s
  }
  return out
}

describe('XSalsa20 stream', () => {
  it('matches the published vectors (Go x/crypto salsa20_test.go, xSalsa20TestData)', () => {
    const key = ascii('this is 32-byte key for xsalsa20')
    const nonce = ascii('24-byte nonce for xsalsa')
    expect(hex(new XSalsa20(key, nonce).update(ascii('Hello world!')))).toBe('002d4513843fc240c401e541')
    expect(hex(new XSalsa20(key, nonce).update(new Uint8Array(64)))).toBe(
      '4848297feb1fb52fb66d81609bd547fabcbe7026edc8b5e5e449d088bfa69c08' +
      '8f5d8da1d791267c2c195a7f8cae9c4b4050d08ce6d3a151ec265f3a58e47648')
  })

  it('gives the keystream of one-shot XSalsa20 (noble) and of @libp2p/pnet\'s cipher however the stream is chunked', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const rand = prng(seed)
      const key = randomBytes(rand, 32)
      const nonce = randomBytes(rand, 24)
      // Input at odd offsets of a larger buffer, as network buffers come.
      const backing = randomBytes(rand, 200_003)
      const data = backing.subarray(3)
      const copy = data.slice()
      const expected = nobleXSalsa20(key, nonce, data)
      const ours = new XSalsa20(key, nonce)
      const stock = stockXSalsa20(nonce, key)
      const got = new Uint8Array(data.length)
      const gotStock = new Uint8Array(data.length)
      let at = 0
      for (const size of chunking(rand, data.length)) {
        got.set(ours.update(data.subarray(at, at + size)), at)
        gotStock.set(stock.update(data.subarray(at, at + size)), at)
        at += size
      }
      stock.finalize()
      expect(hex(got), `seed ${seed}`).toBe(hex(expected))
      expect(hex(gotStock), `seed ${seed}`).toBe(hex(expected))
      expect(hex(data), 'the input is left alone').toBe(hex(copy))
    }
  })

  it('deciphers what it ciphers, chunked differently on each side', () => {
    const rand = prng(99)
    const key = randomBytes(rand, 32)
    const nonce = randomBytes(rand, 24)
    const plain = randomBytes(rand, 70_000)
    const sender = new XSalsa20(key, nonce)
    const receiver = new XSalsa20(key, nonce)
    const wire: Uint8Array[] = []
    let at = 0
    for (const size of chunking(rand, plain.length)) {
      wire.push(sender.update(plain.subarray(at, at + size)))
      at += size
    }
    const joined = Buffer.concat(wire)
    const back: Uint8Array[] = []
    at = 0
    for (const size of chunking(rand, joined.length)) {
      back.push(receiver.update(joined.subarray(at, at + size)))
      at += size
    }
    expect(Buffer.concat(back).equals(plain)).toBe(true)
    expect(Buffer.from(joined).equals(plain)).toBe(false)
  })

  it('ciphers in place and into a larger buffer at an offset, the same bytes as update', () => {
    const rand = prng(5)
    const key = randomBytes(rand, 32)
    const nonce = randomBytes(rand, 24)
    const data = randomBytes(rand, 50_001)
    const expected = nobleXSalsa20(key, nonce, data)
    // In place, in chunks at odd offsets of the one buffer (as the private network deciphers what the transport hands it).
    const inPlace = new XSalsa20(key, nonce)
    const work = new Uint8Array(data.length + 5)
    work.set(data, 5)
    let at = 0
    for (const size of chunking(rand, data.length)) {
      const view = work.subarray(5 + at, 5 + at + size)
      inPlace.xorInto(view, view, 0)
      at += size
    }
    expect(hex(work.subarray(5))).toBe(hex(expected))
    // Parts joined into one output at their offsets (as it ciphers a list of buffers into the one it writes).
    const joined = new XSalsa20(key, nonce)
    const out = new Uint8Array(data.length + 9)
    at = 0
    for (const size of chunking(rand, data.length)) {
      joined.xorInto(data.subarray(at, at + size), out.subarray(9), at)
      at += size
    }
    expect(hex(out.subarray(9))).toBe(hex(expected))
    expect(() => { joined.xorInto(new Uint8Array(10), new Uint8Array(12), 3) }).toThrow(RangeError)
  })

  it('counts blocks in 64 bits: the blocks from 2^32 - 1 on are Salsa20\'s, not a wrap to block 0', () => {
    const rand = prng(7)
    const key = randomBytes(rand, 32)
    const nonce = randomBytes(rand, 24)
    // Reference: noble's Salsa20 core (its test hook takes the counter's high word) under the HSalsa20 subkey.
    const subkey = new Uint32Array(8)
    hsalsa(u32(ascii('expand 32-byte k')), u32(key.slice()), u32(nonce.slice(0, 16)), subkey)
    const block = (lo: number, hi: number): string => {
      const out = new Uint32Array(16)
      __TESTS.salsaCore(u32(ascii('expand 32-byte k')), subkey, u32(nonce.slice(16)), out, lo, 20, hi)
      return hex(new Uint8Array(out.buffer))
    }
    const start = 2 ** 32 - 1
    // Three blocks from 2^32 - 1, in chunks that straddle the block boundaries.
    const s = new XSalsa20(key, nonce, start)
    const ks = hex(Buffer.concat([s.update(new Uint8Array(100)), s.update(new Uint8Array(92))]))
    expect(ks).toBe(block(0xffffffff, 0) + block(0, 1) + block(1, 1))
    expect(ks.slice(128, 256)).not.toBe(hex(new XSalsa20(key, nonce).update(new Uint8Array(64))))
  })

  it('gives the same keystream through the SIMD kernel as through the JavaScript loop, across the counter\'s 2^32 boundary too', () => {
    const rand = prng(11)
    const key = randomBytes(rand, 32)
    const nonce = randomBytes(rand, 24)
    expect(salsaSimd, 'WebAssembly SIMD on this Node').toBeDefined()
    for (const start of [0, 2 ** 32 - 9, 2 ** 32 - 4, 2 ** 32 - 1, 2 ** 40 + 3]) {
      const data = randomBytes(rand, 300_000)
      const fast = new XSalsa20(key, nonce, start)
      const slow = new XSalsa20(key, nonce, start, { simd: false })
      const a: Uint8Array[] = []
      const b: Uint8Array[] = []
      let at = 0
      for (const size of chunking(rand, data.length).map(n => n * 3)) {
        a.push(fast.update(data.subarray(at, at + size)))
        b.push(slow.update(data.subarray(at, at + size)))
        at += size
      }
      expect(hex(Buffer.concat(a)), `from block ${start}`).toBe(hex(Buffer.concat(b)))
    }
    // And against noble from block 0, in one update of many groups (more than the kernel's scratch memory at once).
    const big = randomBytes(rand, 200_000)
    expect(hex(new XSalsa20(key, nonce).update(big))).toBe(hex(nobleXSalsa20(key, nonce, big)))
  })

  it('takes a key and a nonce that are Buffer views at odd offsets (a nonce read off a relayed connection)', () => {
    const rand = prng(7)
    const key = randomBytes(rand, 32)
    const nonce = randomBytes(rand, 24)
    // Buffer#slice is a view, not a copy: the cipher must not assume its input word-aligned.
    const keyView = Buffer.concat([Buffer.alloc(1), Buffer.from(key)]).subarray(1)
    const nonceView = Buffer.concat([Buffer.alloc(3), Buffer.from(nonce)]).subarray(3)
    expect(nonceView.byteOffset % 4).not.toBe(0)
    const data = randomBytes(rand, 1000)
    expect(hex(new XSalsa20(keyView, nonceView).update(data))).toBe(hex(nobleXSalsa20(key, nonce, data)))
  })

  it('refuses keys and nonces of the wrong size', () => {
    expect(() => new XSalsa20(new Uint8Array(31), new Uint8Array(24))).toThrow(RangeError)
    expect(() => new XSalsa20(new Uint8Array(32), new Uint8Array(8))).toThrow(RangeError)
  })
})
