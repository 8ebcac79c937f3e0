import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { createHash } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { AbortedError } from '../../src/common/index.js'
import { cidRank, decodeCid, NotAFileError, sha256FileCid } from '../../src/cid/index.js'
import { fixturePath, hex, patternBytes, tempDir } from './fixture-files.js'
import type { TempDir } from './fixture-files.js'

let dir: TempDir
beforeAll(async () => { dir = await tempDir() })
afterAll(async () => { await dir.remove() })

describe('sha256FileCid (raw-codec vectors: docs/design/original.md#hash-spellings)', () => {
  it('empty file', async () => {
    const r = await sha256FileCid(await dir.file('empty', new Uint8Array(0)))
    expect(r.cid).toBe('bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku')
    expect(r.size).toBe(0)
    expect(hex(r.digest)).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  })

  it('hello world', async () => {
    const r = await sha256FileCid(await dir.file('hello', new TextEncoder().encode('hello world')))
    expect(r.cid).toBe('bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e')
    expect(r.size).toBe(11)
  })

  it('the 490-byte meta-hash fixture', async () => {
    const r = await sha256FileCid(fixturePath('meta-hash-test.txt'))
    expect(r.cid).toBe('bafkreif6exbiu6xq37kywo6uq6cy2dca7l2mr6z2oioj7zov3n776mkx5q')
    expect(r.size).toBe(490)
    expect(cidRank(r.cid)).toBe(30)
    expect(decodeCid(r.cid)).toMatchObject({ codec: 0x55, mhCode: 0x12 })
  })

  it('multi-chunk files hash every byte in order', async () => {
    for (const n of [1_048_576, 1_048_577, 3 * 1_048_576 + 5]) {
      const bytes = patternBytes(n)
      const r = await sha256FileCid(await dir.file(`pattern-${n}`, bytes))
      expect(r.size).toBe(n)
      expect(hex(r.digest)).toBe(createHash('sha256').update(bytes).digest('hex'))
      expect(r.cid.startsWith('bafkrei')).toBe(true)
    }
  })
})

describe('sha256FileCid failures', () => {
  it('a directory is not a file', async () => {
    const sub = join(dir.path, 'sub')
    await mkdir(sub)
    await expect(sha256FileCid(sub)).rejects.toBeInstanceOf(NotAFileError)
  })

  it('a missing file surfaces the fs error', async () => {
    await expect(sha256FileCid(join(dir.path, 'nope'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('an aborted signal stops the stream', async () => {
    const path = await dir.file('abort', patternBytes(100))
    const ac = new AbortController()
    ac.abort()
    await expect(sha256FileCid(path, { signal: ac.signal })).rejects.toBeInstanceOf(AbortedError)
  })
})
