/**
 * The event-source seam: one contract, run against the OS source and the
 * scripted one. A change made through the driver must be covered by a hint
 * (the path itself, a folder above it, or `''`) within a deadline; nothing is
 * delivered after stop().
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { sleep, waitFor } from '../../src/common/index.js'
import { createFsEventSource, isHiddenPath, type FileEventSource } from '../../src/watcher/index.js'
import { createScriptedEventSource } from '../../src/watcher/testing.js'
import { tmpDir } from '../helpers/tmp.js'
import type { FsDriver, SourceKind } from './harness.js'

interface Rig { root: string, source: FileEventSource, fsd: FsDriver, hints: string[], cleanup: () => Promise<void> }

const rigs: Rig[] = []
afterEach(async () => { while (rigs.length > 0) await rigs.pop()!.cleanup() })

function rig (kind: SourceKind): Rig {
  const t = tmpDir()
  const root = t.dir
  const scripted = kind === 'scripted' ? createScriptedEventSource() : undefined
  const source = scripted ?? createFsEventSource({ root })
  const abs = (rel: string): string => path.join(root, rel)
  const emit = (rel: string): void => { scripted?.emit(rel) }
  const fsd: FsDriver = {
    write (rel, data) { fs.writeFileSync(abs(rel), data); emit(rel) },
    append (rel, data) { fs.appendFileSync(abs(rel), data); emit(rel) },
    remove (rel) { fs.rmSync(abs(rel), { recursive: true }); emit(rel) },
    rename (from, to) { fs.renameSync(abs(from), abs(to)); emit(from); emit(to) },
    mkdir (rel) { fs.mkdirSync(abs(rel)); emit(rel) }
  }
  const r: Rig = { root, source, fsd, hints: [], cleanup: async () => { await source.stop(); t.cleanup() } }
  rigs.push(r)
  return r
}

const covers = (hint: string, rel: string): boolean => hint === '' || hint === rel || rel.startsWith(hint + '/')

async function expectCovered (r: Rig, rel: string): Promise<void> {
  await waitFor(() => r.hints.some(h => covers(h, rel)), { timeoutMs: 5_000, what: `a hint covering ${rel}`, intervalMs: 10 })
}

describe.each(['real', 'scripted'] as const)('file event source contract (%s)', (kind) => {
  it('stop before start is fine, and start and stop are idempotent', async () => {
    const r = rig(kind)
    await r.source.stop()
    expect(r.source.status()).toMatchObject({ kind: kind === 'real' ? 'fs.watch' : 'scripted', watching: 0 })
    await r.source.start(h => { r.hints.push(h) })
    await r.source.start(h => { r.hints.push(h) })
    if (kind === 'real') expect(r.source.status().watching).toBe(1) // one watch on the root, not two
    r.fsd.write('seen.txt', 'x')
    await expectCovered(r, 'seen.txt')
    await r.source.stop()
    await r.source.stop()
    expect(r.source.status().watching).toBe(0)
    // Stopped means stopped: a change now is never hinted.
    r.hints.length = 0
    r.fsd.write('unseen.txt', 'y')
    await sleep(300)
    expect(r.hints).toEqual([])
  })

  it('hints creation, modification and deletion of a file', async () => {
    const r = rig(kind)
    fs.mkdirSync(path.join(r.root, 'a'))
    await r.source.start(h => { r.hints.push(h) })
    r.fsd.write('a/new.txt', 'one')
    await expectCovered(r, 'a/new.txt')
    r.hints.length = 0
    r.fsd.append('a/new.txt', 'two')
    await expectCovered(r, 'a/new.txt')
    r.hints.length = 0
    r.fsd.remove('a/new.txt')
    await expectCovered(r, 'a/new.txt')
  })

  it('hints both ends of a rename, and files in folders created after start', async () => {
    const r = rig(kind)
    await r.source.start(h => { r.hints.push(h) })
    r.fsd.mkdir('late')
    await expectCovered(r, 'late')
    r.fsd.mkdir('late/deeper')
    await expectCovered(r, 'late/deeper')
    await sleep(50) // the new folder's own watch is armed after its parent reports it
    r.hints.length = 0
    r.fsd.write('late/deeper/f.bin', 'x')
    await expectCovered(r, 'late/deeper/f.bin')
    r.hints.length = 0
    r.fsd.rename('late/deeper/f.bin', 'late/g.bin')
    await expectCovered(r, 'late/deeper/f.bin')
    await expectCovered(r, 'late/g.bin')
    r.hints.length = 0
    r.fsd.rename('late', 'renamed')
    await expectCovered(r, 'renamed')
    await sleep(50)
    r.hints.length = 0
    r.fsd.write('renamed/deeper/h.bin', 'y')
    await expectCovered(r, 'renamed/deeper/h.bin')
  })

  it('delivers nothing after stop', async () => {
    const r = rig(kind)
    await r.source.start(h => { r.hints.push(h) })
    await r.source.stop()
    r.fsd.write('after-stop.txt', 'x')
    await sleep(200)
    expect(r.hints).toEqual([])
  })
})

describe('OS event source', () => {
  it('watches one inode per folder, not per file, and leaves hidden folders alone', async () => {
    const r = rig('real')
    for (const d of ['m', 'm/s1', 'm/s2', '.trash', '.trash/inner']) fs.mkdirSync(path.join(r.root, d))
    for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(r.root, 'm/s1', `f${i}`), 'x')
    await r.source.start(h => { r.hints.push(h) })
    expect(r.source.status()).toEqual({ kind: 'fs.watch', watching: 4 }) // root, m, m/s1, m/s2
    fs.writeFileSync(path.join(r.root, '.trash/inner/x'), 'hidden')
    fs.writeFileSync(path.join(r.root, '.hidden-file'), 'hidden')
    fs.writeFileSync(path.join(r.root, 'm/visible'), 'shown')
    await expectCovered(r, 'm/visible')
    await sleep(100)
    expect(r.hints.filter(h => isHiddenPath(h))).toEqual([])
  })
})
