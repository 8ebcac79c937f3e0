/**
 * XSalsa20 as a stream: the keystream of one (key, 24-byte nonce) XORed over
 * a byte stream delivered in chunks of any size, each chunk continuing where
 * the previous one stopped. This is what the private network (pnet) puts on
 * the wire, one instance per direction of a connection.
 *
 * Why not the `xsalsa20` package (what `@libp2p/pnet` uses): its instances
 * live in one shared WebAssembly memory that nothing frees unless `finalize`
 * is called, and a grown memory detaches every other instance's view, which
 * then grows it again on its next update until the process dies (see
 * docs/mesh.md, "Trust"). Here an instance is a few dozen bytes of
 * ordinary objects, gone with its connection. Whole groups of four blocks
 * go through a WebAssembly SIMD kernel (salsa-simd.ts: one module and one
 * fixed 64 KiB page for the whole process, never grown, no state kept
 * between calls), about three times as fast as the JavaScript loop below,
 * which does the rest (and everything where WebAssembly SIMD is missing).
 *
 * Why not `@noble/ciphers`' `xsalsa20` for the keystream: one call per chunk
 * re-derives the subkey and copies its inputs, and its block loop runs at
 * under half the speed of the loop below (64 KiB chunks on this machine:
 * ~300 MB/s against ~740 MB/s, which is what xsalsa20's WebAssembly does);
 * the pnet layer ciphers every byte a node sends or receives. The subkey is
 * derived once per instance, with noble's HSalsa20.
 *
 * The block counter is the full 64 bits of Salsa20 (a JavaScript number,
 * exact to 2^53 blocks: 512 PiB per direction).
 */
import { hsalsa } from '@noble/ciphers/salsa.js'
import { u32 } from '@noble/ciphers/utils.js'
import { SIMD_GROUP_BYTES, SIMD_SCRATCH_BYTES, salsaSimd } from './salsa-simd.js'

export const XSALSA20_KEY_BYTES = 32
export const XSALSA20_NONCE_BYTES = 24
const BLOCK = 64
const TWO_32 = 2 ** 32

/** "expand 32-byte k" as words in host order (what noble's hsalsa takes). */
const SIGMA = u32(new TextEncoder().encode('expand 32-byte k'))
const ZERO_BLOCK = new DataView(new ArrayBuffer(BLOCK))

export class XSalsa20 {
  /** The state words that do not change from block to block: subkey and the nonce's last 8 bytes. */
  private readonly k: Int32Array
  private readonly n0: number
  private readonly n1: number
  /** Index of the next block whose keystream has not been used. */
  private block: number
  /** Keystream of the block a previous chunk ended inside of, and how much of it is used (BLOCK: none left). */
  private readonly pad = new Uint8Array(BLOCK)
  private readonly padView = new DataView(this.pad.buffer)
  private padUsed = BLOCK

  private readonly simd: typeof salsaSimd

  /** `counter`: the first block's index (0 on the wire; other values for tests). `simd: false`: the JavaScript loop only (tests). */
  constructor (key: Uint8Array, nonce: Uint8Array, counter = 0, opts: { simd?: boolean } = {}) {
    if (key.length !== XSALSA20_KEY_BYTES) throw new RangeError(`XSalsa20 key must be ${XSALSA20_KEY_BYTES} bytes, got ${key.length}`)
    if (nonce.length !== XSALSA20_NONCE_BYTES) throw new RangeError(`XSalsa20 nonce must be ${XSALSA20_NONCE_BYTES} bytes, got ${nonce.length}`)
    if (!Number.isSafeInteger(counter) || counter < 0) throw new RangeError('XSalsa20 counter must be a non-negative safe integer')
    // HSalsa20(key, nonce[0..16]) is the Salsa20 key; copies, since hsalsa reads and writes words in place, and
    // word-aligned ones: a nonce read off a relayed connection is a Buffer view at any offset (Buffer#slice is no copy).
    const subkey = new Uint8Array(32)
    hsalsa(SIGMA, u32(Uint8Array.from(key)), u32(Uint8Array.from(nonce.subarray(0, 16))), u32(subkey))
    const sv = new DataView(subkey.buffer)
    this.k = new Int32Array(8)
    for (let i = 0; i < 8; i++) this.k[i] = sv.getInt32(4 * i, true)
    subkey.fill(0)
    const nv = new DataView(nonce.buffer, nonce.byteOffset + 16, 8)
    this.n0 = nv.getInt32(0, true)
    this.n1 = nv.getInt32(4, true)
    this.block = counter
    this.simd = opts.simd === false ? undefined : salsaSimd
  }

  /** `input` XORed with the next `input.length` bytes of the keystream, in a new array (`input` is left alone). */
  update (input: Uint8Array): Uint8Array {
    const out = new Uint8Array(input.length)
    this.xorInto(input, out, 0)
    return out
  }

  /**
   * Writes `input` XORed with the next `input.length` bytes of the keystream
   * to `out` from offset `at`. `out` may be `input` itself (at its offset):
   * each word is read before it is written, so ciphering in place is exact.
   */
  xorInto (input: Uint8Array, out: Uint8Array, at: number): void {
    const len = input.length
    if (at < 0 || at + len > out.length) throw new RangeError('XSalsa20 output too short')
    let i = 0
    // The rest of a block a previous chunk began.
    for (; this.padUsed < BLOCK && i < len; i++) out[at + i] = input[i] ^ this.pad[this.padUsed++]
    let whole = (len - i) >>> 6
    const simd = this.simd
    if (simd !== undefined) {
      // Groups of four blocks through the SIMD kernel's scratch memory; the low counter word never wraps inside a call.
      while (whole >= 4) {
        const lo = this.block % TWO_32
        const groups = Math.min(whole >>> 2, SIMD_SCRATCH_BYTES / SIMD_GROUP_BYTES, Math.floor((TWO_32 - lo) / 4))
        if (groups === 0) break
        const n = groups * SIMD_GROUP_BYTES
        simd.memory.set(input.subarray(i, i + n))
        simd.xor4(groups, lo | 0, (this.block / TWO_32) | 0, this.k, this.n0, this.n1)
        out.set(simd.memory.subarray(0, n), at + i)
        this.block += groups * 4
        i += n
        whole -= groups * 4
      }
    }
    if (whole > 0) {
      xorBlocks(this.k, this.n0, this.n1, this.block, whole,
        new DataView(input.buffer, input.byteOffset + i, whole * BLOCK), new DataView(out.buffer, out.byteOffset + at + i, whole * BLOCK))
      this.block += whole
      i += whole * BLOCK
    }
    if (i < len) {
      // A block this chunk only begins: keep its keystream for the next chunk.
      xorBlocks(this.k, this.n0, this.n1, this.block, 1, ZERO_BLOCK, this.padView)
      this.block++
      this.padUsed = 0
      for (; i < len; i++) out[at + i] = input[i] ^ this.pad[this.padUsed++]
    }
  }
}

/**
 * Salsa20/20: XORs `blocks` keystream blocks, from block index `counter`, of
 * the state (subkey `k`, nonce words `n0`, `n1`) over `src` into `dst`.
 * Words are read and written little-endian through DataViews, so any byte
 * offset and either host byte order work. The rounds are unrolled and the
 * state kept in locals: this loop is the whole cost of the pnet layer.
 */
function xorBlocks (k: Int32Array, n0: number, n1: number, counter: number, blocks: number, src: DataView, dst: DataView): void {
  // `| 0` everywhere: V8 then keeps the whole state in int32 registers (without it, a third slower).
  const j0 = 0x61707865; const j5 = 0x3320646e; const j10 = 0x79622d32; const j15 = 0x6b206574
  const j1 = k[0] | 0; const j2 = k[1] | 0; const j3 = k[2] | 0; const j4 = k[3] | 0
  const j11 = k[4] | 0; const j12 = k[5] | 0; const j13 = k[6] | 0; const j14 = k[7] | 0
  const j6 = n0 | 0; const j7 = n1 | 0
  for (let b = 0, p = 0; b < blocks; b++, p += BLOCK) {
    const c = counter + b
    const j8 = c | 0 // low word (ToInt32 is the value modulo 2^32)
    const j9 = (c / TWO_32) | 0 // high word
    let x0 = j0; let x1 = j1; let x2 = j2; let x3 = j3; let x4 = j4; let x5 = j5; let x6 = j6; let x7 = j7
    let x8 = j8; let x9 = j9; let x10 = j10; let x11 = j11; let x12 = j12; let x13 = j13; let x14 = j14; let x15 = j15
    let u: number
    for (let r = 0; r < 20; r += 2) {
      // Column round.
      u = x0 + x12 | 0; x4 ^= u << 7 | u >>> 25
      u = x4 + x0 | 0; x8 ^= u << 9 | u >>> 23
      u = x8 + x4 | 0; x12 ^= u << 13 | u >>> 19
      u = x12 + x8 | 0; x0 ^= u << 18 | u >>> 14
      u = x5 + x1 | 0; x9 ^= u << 7 | u >>> 25
      u = x9 + x5 | 0; x13 ^= u << 9 | u >>> 23
      u = x13 + x9 | 0; x1 ^= u << 13 | u >>> 19
      u = x1 + x13 | 0; x5 ^= u << 18 | u >>> 14
      u = x10 + x6 | 0; x14 ^= u << 7 | u >>> 25
      u = x14 + x10 | 0; x2 ^= u << 9 | u >>> 23
      u = x2 + x14 | 0; x6 ^= u << 13 | u >>> 19
      u = x6 + x2 | 0; x10 ^= u << 18 | u >>> 14
      u = x15 + x11 | 0; x3 ^= u << 7 | u >>> 25
      u = x3 + x15 | 0; x7 ^= u << 9 | u >>> 23
      u = x7 + x3 | 0; x11 ^= u << 13 | u >>> 19
      u = x11 + x7 | 0; x15 ^= u << 18 | u >>> 14
      // Row round.
      u = x0 + x3 | 0; x1 ^= u << 7 | u >>> 25
      u = x1 + x0 | 0; x2 ^= u << 9 | u >>> 23
      u = x2 + x1 | 0; x3 ^= u << 13 | u >>> 19
      u = x3 + x2 | 0; x0 ^= u << 18 | u >>> 14
      u = x5 + x4 | 0; x6 ^= u << 7 | u >>> 25
      u = x6 + x5 | 0; x7 ^= u << 9 | u >>> 23
      u = x7 + x6 | 0; x4 ^= u << 13 | u >>> 19
      u = x4 + x7 | 0; x5 ^= u << 18 | u >>> 14
      u = x10 + x9 | 0; x11 ^= u << 7 | u >>> 25
      u = x11 + x10 | 0; x8 ^= u << 9 | u >>> 23
      u = x8 + x11 | 0; x9 ^= u << 13 | u >>> 19
      u = x9 + x8 | 0; x10 ^= u << 18 | u >>> 14
      u = x15 + x14 | 0; x12 ^= u << 7 | u >>> 25
      u = x12 + x15 | 0; x13 ^= u << 9 | u >>> 23
      u = x13 + x12 | 0; x14 ^= u << 13 | u >>> 19
      u = x14 + x13 | 0; x15 ^= u << 18 | u >>> 14
    }
    dst.setInt32(p, src.getInt32(p, true) ^ (x0 + j0), true)
    dst.setInt32(p + 4, src.getInt32(p + 4, true) ^ (x1 + j1), true)
    dst.setInt32(p + 8, src.getInt32(p + 8, true) ^ (x2 + j2), true)
    dst.setInt32(p + 12, src.getInt32(p + 12, true) ^ (x3 + j3), true)
    dst.setInt32(p + 16, src.getInt32(p + 16, true) ^ (x4 + j4), true)
    dst.setInt32(p + 20, src.getInt32(p + 20, true) ^ (x5 + j5), true)
    dst.setInt32(p + 24, src.getInt32(p + 24, true) ^ (x6 + j6), true)
    dst.setInt32(p + 28, src.getInt32(p + 28, true) ^ (x7 + j7), true)
    dst.setInt32(p + 32, src.getInt32(p + 32, true) ^ (x8 + j8), true)
    dst.setInt32(p + 36, src.getInt32(p + 36, true) ^ (x9 + j9), true)
    dst.setInt32(p + 40, src.getInt32(p + 40, true) ^ (x10 + j10), true)
    dst.setInt32(p + 44, src.getInt32(p + 44, true) ^ (x11 + j11), true)
    dst.setInt32(p + 48, src.getInt32(p + 48, true) ^ (x12 + j12), true)
    dst.setInt32(p + 52, src.getInt32(p + 52, true) ^ (x13 + j13), true)
    dst.setInt32(p + 56, src.getInt32(p + 56, true) ^ (x14 + j14), true)
    dst.setInt32(p + 60, src.getInt32(p + 60, true) ^ (x15 + j15), true)
  }
}
