import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const fixturePath = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url))

export function loadJsonFixture<T> (name: string): T {
  return JSON.parse(readFileSync(fixturePath(name), 'utf8')) as T
}

/** byte i = (7·i + 3) mod 256, the pattern the midhash vectors use. */
export function patternBytes (n: number): Uint8Array {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = (7 * i + 3) & 0xff
  return b
}

/** Bytes of a named midhash vector input (see midhash-vectors.json $comment). */
export async function vectorInput (name: string): Promise<Uint8Array> {
  if (name === 'empty') return new Uint8Array(0)
  if (name === 'hello world') return new TextEncoder().encode('hello world')
  if (name === 'meta-hash-test.txt') return new Uint8Array(await readFile(fixturePath('meta-hash-test.txt')))
  const zeros = /^zeros-(\d+)$/.exec(name)
  if (zeros !== null) return new Uint8Array(Number(zeros[1]))
  const pattern = /^pattern-(\d+)$/.exec(name)
  if (pattern !== null) return patternBytes(Number(pattern[1]))
  throw new Error(`unknown vector input ${name}`)
}

export interface TempDir { path: string, file: (name: string, bytes: Uint8Array) => Promise<string>, remove: () => Promise<void> }

export async function tempDir (): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), 'meta-core-cid-'))
  return {
    path,
    file: async (name, bytes) => {
      const p = join(path, name)
      await writeFile(p, bytes)
      return p
    },
    remove: async () => { await rm(path, { recursive: true, force: true }) }
  }
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
