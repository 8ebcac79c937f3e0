/**
 * The event-source seam: one contract, run against the OS source and the
 * scripted one. A change made through the driver must be covered by a hint
 * (the path itself, a folder above it, or `''`) within a deadline; nothing is
 * delivered after stop().
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { createFsEventSource, isHiddenPath, type FileEventSource } from '../../src/watcher/index.js'
import { createScriptedEventSource } from '../../src/watcher/testing.js'
import { tmpDir } from '../helpers/tmp.js'
import type { FsDriver, SourceKind } from './harness.js'

interface Rig { kind: SourceKind, root: string, source: FileEventSource, fsd: FsDriver, hints: string[], cleanup: () => Promise<void> }

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
  const r: Rig = { kind, root, source, fsd, hints: [], cleanup: async () => { await source.stop(); t.cleanup() } }
  rigs.push(r)
  return r
}

const covers = (hint: string, rel: string): boolean => hint === '' || hint === rel || rel.startsWith(hint + '/')

async function expectCovered (r: Rig, rel: string): Promise<void> {
  await waitFor(() => r.hints.some(h => covers(h, rel)), { timeoutMs: 5_000, what: `a hint covering ${rel}`, intervalMs: 10 })
}

/**
 * Makes `change` (to the root's child `name`) and returns once it has been
 * delivered to whoever listens: the scripted source hints inside the driver's
 * call; for the OS, a watch of the test's own on the root hears of it. The
 * OS queues a watcher's events in order and delivers them in that order, to
 * every watch on a folder together: a hint the source was still to give
 * for it would have come by then. What did not come is then known not to.
 */
async function delivered (r: Rig, name: string, change: () => void): Promise<void> {
  if (r.kind === 'scripted') { change(); return }
  let heard = false
  const probe = fs.watch(r.root, { persistent: false }, (_event, n) => { if (n === name) heard = true })
  try {
    change()
    await waitFor(() => heard, { timeoutMs: 5_000, what: `the OS event for ${name}`, intervalMs: 5 })
  } finally {
    probe.close()
  }
}

/** A folder that appeared or moved is armed (again) and then hinted a second time (fs-event-source.ts): changes inside it are hinted from then on. */
async function rearmed (r: Rig, dir: string): Promise<void> {
  if (r.kind === 'real') await waitFor(() => r.hints.filter(h => h === dir).length >= 2, { timeoutMs: 5_000, what: `${dir} armed`, intervalMs: 5 })
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
    await delivered(r, 'unseen.txt', () => { r.fsd.write('unseen.txt', 'y') })
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
    // The new folder's own watch is armed after its parent reports it: the root, late and late/deeper.
    if (kind === 'real') await waitFor(() => r.source.status().watching === 3, { timeoutMs: 5_000, what: 'late/deeper armed', intervalMs: 5 })
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
    // Its old watches follow the folder's inode under the old name: it is armed again under the new one.
    await rearmed(r, 'renamed')
    r.hints.length = 0
    r.fsd.write('renamed/deeper/h.bin', 'y')
    await expectCovered(r, 'renamed/deeper/h.bin')
  })

  it('delivers nothing after stop', async () => {
    const r = rig(kind)
    await r.source.start(h => { r.hints.push(h) })
    await r.source.stop()
    await delivered(r, 'after-stop.txt', () => { r.fsd.write('after-stop.txt', 'x') })
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
    // Written last: the OS delivers a watcher's events in order, so a hint for the hidden ones would have come first.
    await expectCovered(r, 'm/visible')
    expect(r.hints.filter(h => isHiddenPath(h))).toEqual([])
  })
})
