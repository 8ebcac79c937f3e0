/**
 * Salsa20/20 four blocks at a time in WebAssembly SIMD: the keystream of
 * four consecutive blocks is computed side by side (each 128-bit lane one
 * block), then XORed over 256 bytes of a scratch memory in place. What the
 * private network's XSalsa20 (xsalsa20.ts) runs for whole groups of four
 * blocks; the rest, and any machine without WebAssembly SIMD, takes the
 * plain JavaScript loop there. The same keystream either way: the tests
 * compare both against published vectors and two other implementations.
 *
 * The module is assembled here from the round schedule below (no binary is
 * shipped): one function, one memory of a fixed size that is never grown
 * and is shared by every instance of XSalsa20 in the process (calls are
 * synchronous, so one scratch area is enough). Nothing is allocated per
 * call or per connection: the memory leak of the `xsalsa20` package cannot
 * happen here.
 */

/** Bytes of the scratch memory: one WebAssembly page. Whole 256-byte groups go through it in slices of this size. */
export const SIMD_SCRATCH_BYTES = 65536
/** Bytes ciphered by one call per group of four blocks. */
export const SIMD_GROUP_BYTES = 256

/**
 * The quarter rounds of a Salsa20 double round, as [a, b, c, r]:
 * `x[a] ^= rotl(x[b] + x[c], r)`, in order (column round, then row round).
 */
const SCHEDULE: ReadonlyArray<readonly [number, number, number, number]> = [
  [4, 0, 12, 7], [8, 4, 0, 9], [12, 8, 4, 13], [0, 12, 8, 18],
  [9, 5, 1, 7], [13, 9, 5, 9], [1, 13, 9, 13], [5, 1, 13, 18],
  [14, 10, 6, 7], [2, 14, 10, 9], [6, 2, 14, 13], [10, 6, 2, 18],
  [3, 15, 11, 7], [7, 3, 15, 9], [11, 7, 3, 13], [15, 11, 7, 18],
  [1, 0, 3, 7], [2, 1, 0, 9], [3, 2, 1, 13], [0, 3, 2, 18],
  [6, 5, 4, 7], [7, 6, 5, 9], [4, 7, 6, 13], [5, 4, 7, 18],
  [11, 10, 9, 7], [8, 11, 10, 9], [9, 8, 11, 13], [10, 9, 8, 18],
  [12, 15, 14, 7], [13, 12, 15, 9], [14, 13, 12, 13], [15, 14, 13, 18]
]

// Opcodes (WebAssembly core and SIMD).
const BLOCK = 0x02; const LOOP = 0x03; const BR = 0x0c; const BR_IF = 0x0d; const END = 0x0b
const LOCAL_GET = 0x20; const LOCAL_SET = 0x21; const LOCAL_TEE = 0x22
const I32_CONST = 0x41; const I32_ADD = 0x6a; const I32_SUB = 0x6b; const I32_GE_U = 0x4f
const SIMD = 0xfd
const V128_LOAD = 0x00; const V128_STORE = 0x0b; const V128_CONST = 0x0c; const I8X16_SHUFFLE = 0x0d
const I32X4_SPLAT = 0x11; const V128_OR = 0x50; const V128_XOR = 0x51
const I32X4_SHL = 0xab; const I32X4_SHR_U = 0xad; const I32X4_ADD = 0xae
const V128 = 0x7b; const I32 = 0x7f; const VOID = 0x40

function uleb (n: number): number[] {
  const out: number[] = []
  do {
    let b = n & 0x7f
    n >>>= 7
    if (n !== 0) b |= 0x80
    out.push(b)
  } while (n !== 0)
  return out
}

function sleb (n: number): number[] {
  const out: number[] = []
  for (;;) {
    const b = n & 0x7f
    n >>= 7
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) { out.push(b); return out }
    out.push(b | 0x80)
  }
}

const simd = (op: number): number[] => [SIMD, ...uleb(op)]
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body]
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()]
const str = (s: string): number[] => vec([...Buffer.from(s, 'utf8')].map(b => [b]))

/** Byte lanes of i8x16.shuffle taking i32 lanes `l` (0–3: the first operand, 4–7: the second). */
function lanes (l: readonly number[]): number[] {
  return l.flatMap(x => [4 * x, 4 * x + 1, 4 * x + 2, 4 * x + 3])
}

/**
 * The function `xor4(ptr, groups, lo, hi, k0…k7, n0, n1)`: XORs the
 * keystream of blocks lo + hi·2^32 onwards over `groups` × 256 bytes of
 * memory from `ptr`, in place. The caller keeps `lo + 4·groups` within 2^32.
 */
function assemble (): Uint8Array {
  // Locals: params 0–13; x0–x15 at 14–29; j0–j15 at 30–45; tmp 46 (v128); g 47 (i32).
  const P = { ptr: 0, groups: 1, lo: 2, hi: 3, k: 4, n: 12 }
  const X = (i: number): number => 14 + i
  const J = (i: number): number => 30 + i
  const TMP = 46
  const G = 47
  const R = 48
  const c: number[] = []
  const get = (i: number): void => { c.push(LOCAL_GET, ...uleb(i)) }
  const set = (i: number): void => { c.push(LOCAL_SET, ...uleb(i)) }
  const i32 = (v: number): void => { c.push(I32_CONST, ...sleb(v | 0)) }
  const splat = (): void => { c.push(...simd(I32X4_SPLAT)) }
  const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
  // The state words that stay the same for every group.
  const fixed: Array<[number, () => void]> = [
    [0, () => { i32(SIGMA[0]) }], [5, () => { i32(SIGMA[1]) }], [10, () => { i32(SIGMA[2]) }], [15, () => { i32(SIGMA[3]) }],
    [1, () => { get(P.k) }], [2, () => { get(P.k + 1) }], [3, () => { get(P.k + 2) }], [4, () => { get(P.k + 3) }],
    [11, () => { get(P.k + 4) }], [12, () => { get(P.k + 5) }], [13, () => { get(P.k + 6) }], [14, () => { get(P.k + 7) }],
    [6, () => { get(P.n) }], [7, () => { get(P.n + 1) }], [9, () => { get(P.hi) }]
  ]
  for (const [i, push] of fixed) { push(); splat(); set(J(i)) }
  c.push(BLOCK, VOID, LOOP, VOID)
  // while (g < groups)
  get(G); get(P.groups); c.push(I32_GE_U, BR_IF, 1)
  // j8: the four blocks' low counter words, lo + 4g + lane.
  get(P.lo); get(G); i32(4); c.push(0x6c /* i32.mul */, I32_ADD); splat()
  c.push(...simd(V128_CONST), ...[0, 1, 2, 3].flatMap(v => [v, 0, 0, 0]), ...simd(I32X4_ADD)); set(J(8))
  for (let i = 0; i < 16; i++) { get(J(i)); set(X(i)) }
  // Ten double rounds.
  i32(10); set(R)
  c.push(LOOP, VOID)
  for (const [a, b, cc, r] of SCHEDULE) {
    get(X(b)); get(X(cc)); c.push(...simd(I32X4_ADD), LOCAL_TEE, ...uleb(TMP))
    i32(r); c.push(...simd(I32X4_SHL))
    get(TMP); i32(32 - r); c.push(...simd(I32X4_SHR_U), ...simd(V128_OR))
    get(X(a)); c.push(...simd(V128_XOR)); set(X(a))
  }
  get(R); i32(1); c.push(I32_SUB, LOCAL_TEE, ...uleb(R), BR_IF, 0, END)
  for (let i = 0; i < 16; i++) { get(X(i)); get(J(i)); c.push(...simd(I32X4_ADD)); set(X(i)) }
  // Transpose each run of four words (lane b: block b) and XOR them over memory, block by block.
  for (let w = 0; w < 16; w += 4) {
    const shuffle = (p: number, q: number, l: number[]): void => { get(p); get(q); c.push(...simd(I8X16_SHUFFLE), ...lanes(l)) }
    // t0 = [x0₀ x1₀ x0₁ x1₁], t1 = [x2₀ x3₀ x2₁ x3₁], t2 = [x0₂ x1₂ x0₃ x1₃], t3 = [x2₂ x3₂ x2₃ x3₃] (reusing x's locals).
    shuffle(X(w), X(w + 1), [0, 4, 1, 5]); set(TMP)
    shuffle(X(w), X(w + 1), [2, 6, 3, 7]); set(X(w + 1))
    shuffle(X(w + 2), X(w + 3), [0, 4, 1, 5]); set(X(w))
    shuffle(X(w + 2), X(w + 3), [2, 6, 3, 7]); set(X(w + 3))
    // Now TMP = t0, X(w) = t1, X(w+1) = t2, X(w+3) = t3.
    const rows: Array<[number, number, number[]]> = [[TMP, X(w), [0, 1, 4, 5]], [TMP, X(w), [2, 3, 6, 7]], [X(w + 1), X(w + 3), [0, 1, 4, 5]],
      [X(w + 1), X(w + 3), [2, 3, 6, 7]]]
    rows.forEach(([p, q, l], b) => {
      const offset = 64 * b + 4 * w
      get(P.ptr) // address for the store
      get(P.ptr); c.push(...simd(V128_LOAD), 4, ...uleb(offset))
      shuffle(p, q, l)
      c.push(...simd(V128_XOR), ...simd(V128_STORE), 4, ...uleb(offset))
    })
  }
  get(P.ptr); i32(256); c.push(I32_ADD); set(P.ptr)
  get(G); i32(1); c.push(I32_ADD); set(G)
  c.push(BR, 0, END, END, END)
  const locals = vec([[...uleb(33), V128], [...uleb(2), I32]])
  const body = [...locals, ...c]
  const func = [...uleb(body.length), ...body]
  const bytes = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, ...vec(Array.from({ length: 14 }, () => [I32])), 0]])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x01, 1, 1]])), // memory: exactly one page, never grown
    ...section(7, vec([[...str('xor4'), 0x00, 0], [...str('memory'), 0x02, 0]])),
    ...section(10, vec([func]))
  ]
  return Uint8Array.from(bytes)
}

interface SalsaSimd {
  /** The scratch memory (SIMD_SCRATCH_BYTES). */
  memory: Uint8Array
  /** XORs the keystream of block `lo + hi·2^32` onwards over `groups` × 256 bytes of `memory` from 0, in place. */
  xor4: (groups: number, lo: number, hi: number, k: Int32Array, n0: number, n1: number) => void
}

/** The part of the WebAssembly JS API used here (this project's TypeScript libs carry no DOM types). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object
  Instance: new (module: object) => { exports: { xor4: (...args: number[]) => void, memory: { buffer: ArrayBuffer } } }
}

function load (): SalsaSimd | undefined {
  try {
    const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly
    const instance = new wasm.Instance(new wasm.Module(assemble()))
    const fn = instance.exports.xor4
    const memory = new Uint8Array(instance.exports.memory.buffer, 0, SIMD_SCRATCH_BYTES)
    return {
      memory,
      xor4: (groups, lo, hi, k, n0, n1) => { fn(0, groups, lo, hi, k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], n0, n1) }
    }
  } catch {
    return undefined // no WebAssembly SIMD here: the JavaScript loop does it all
  }
}

/** The process's one SIMD kernel, or undefined where WebAssembly SIMD is not available. */
export const salsaSimd: SalsaSimd | undefined = load()
