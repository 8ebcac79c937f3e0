/**
 * What the watcher does with entries that are not plain library files:
 * FIFOs, sockets, symlinks leading out of the library or into it, and names
 * that are not valid UTF-8. None of them may stall it, be read or be
 * recorded, and each is told once in the log and counted in its status.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, type Logger } from '../../src/common/index.js'
import { midhashOf, openHarness, type Harness, type HarnessOptions, type SourceKind } from './harness.js'

const open: Harness[] = []
const fifos: string[] = []
const servers: net.Server[] = []

/** Opens every FIFO for writing once: a reader blocked in open() (the defect) is released, so a failing test cannot hang the run. */
function releaseFifos (): void {
  for (const f of fifos.splice(0)) {
    try { fs.closeSync(fs.openSync(f, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)) } catch { /* no reader waiting: nothing to release */ }
  }
}

afterEach(async () => {
  releaseFifos()
  for (const s of servers.splice(0)) s.close()
  while (open.length > 0) await open.pop()!.close()
})

function capture (): { logger: Logger, lines: string[] } {
  const lines: string[] = []
  return { logger: createLogger({ level: 'debug', write: l => { lines.push(l) } }), lines }
}

async function harness (kind: SourceKind, opts: HarnessOptions = {}): Promise<Harness> {
  const h = await openHarness({ source: kind, ...opts })
  open.push(h)
  return h
}

export function mkfifo (p: string): void {
  fs.mkdirSync(path.dirname(p), { recursive: true })
  execFileSync('mkfifo', [p])
  fifos.push(p)
}

async function socketAt (p: string): Promise<void> {
  const s = net.createServer()
  servers.push(s)
  await new Promise<void>((resolve, reject) => { s.once('error', reject); s.listen(p, resolve) })
}

describe.each(['real', 'scripted'] as const)('special entries (%s events)', (kind) => {
  it('a FIFO and a socket are skipped, never opened, logged once and counted; the watcher keeps working', async () => {
    const { logger, lines } = capture()
    const h = await harness(kind, { start: false, logger })
    mkfifo(h.abs('pipe.mkv'))
    mkfifo(h.abs('sub/pipe2.mkv'))
    await socketAt(h.abs('sock.mkv'))
    fs.writeFileSync(h.abs('real.mkv'), 'real bytes')
    await h.watcher.start()
    await h.idle()
    expect(h.events().map(e => `${e.type} ${e.path}`)).toEqual(['add real.mkv'])
    expect(h.watcher.status().skipped).toEqual({ special: 3, outside: 0, unnamable: 0 })
    expect(lines.filter(l => l.includes('not a regular file') && l.includes('pipe.mkv'))).toHaveLength(1)
    expect(lines.some(l => l.includes('not a regular file') && l.includes('sock.mkv') && l.includes('socket'))).toBe(true)

    // A rescan neither opens them nor logs them again; a regular file added later is still recorded.
    await h.watcher.scan()
    expect(lines.filter(l => l.includes('not a regular file') && l.includes('sub/pipe2.mkv'))).toHaveLength(1)
    h.fsd.write('later.mkv', 'later bytes')
    await h.waitEvents(e => e.length === 2, 'the later file')
    // A known file replaced by a FIFO counts as gone (found by a scan: writing to a FIFO to make a hint would block).
    fs.rmSync(h.abs('real.mkv'))
    mkfifo(h.abs('real.mkv'))
    expect(await h.watcher.scan()).toMatchObject({ deleted: 1 })
    await h.idle()
    expect(h.events().at(-1)).toMatchObject({ type: 'delete', path: 'real.mkv' })
  })

  it('a symlink leading outside the library is not read, hashed or recorded; one inside is the file it points to', async () => {
    const { logger, lines } = capture()
    const h = await harness(kind, { start: false, logger })
    const outside = path.join(h.root, 'outside.mkv')
    fs.writeFileSync(outside, 'bytes that live outside the library')
    fs.symlinkSync(outside, h.abs('out.mkv'))
    fs.mkdirSync(h.abs('movies'))
    fs.writeFileSync(h.abs('movies/in.mkv'), 'library bytes')
    fs.symlinkSync('movies/in.mkv', h.abs('alias.mkv'))
    await h.watcher.start()
    await h.idle()
    expect(h.events().map(e => `${e.type} ${e.path}`).sort()).toEqual(['add alias.mkv', 'add movies/in.mkv'])
    expect(h.store.records.getDocument(await midhashOf(outside))).toBeUndefined()
    expect(h.watcher.status().skipped).toEqual({ special: 0, outside: 1, unnamable: 0 })
    expect(lines.some(l => l.includes('leads outside the library') && l.includes('out.mkv'))).toBe(true)
    // The inside link is the same content at another path: one record, one duplicate.
    const doc = h.store.records.getDocument(await midhashOf(h.abs('movies/in.mkv')))!
    expect([doc.metadata.filePath, ...doc.duplicates].sort()).toEqual(['/files/alias.mkv', '/files/movies/in.mkv'])

    // A link re-pointed outside is gone from the library.
    fs.rmSync(h.abs('alias.mkv'))
    fs.symlinkSync(outside, h.abs('alias.mkv'))
    expect(await h.watcher.scan()).toMatchObject({ deleted: 1 })
    await h.idle()
    const after = h.store.records.getDocument(await midhashOf(h.abs('movies/in.mkv')))!
    expect([after.metadata.filePath, ...after.duplicates]).toEqual(['/files/movies/in.mkv'])
    expect(h.store.records.getDocument(await midhashOf(outside))).toBeUndefined()
  })

  it('a name that is not valid UTF-8 is skipped with a warning that names its bytes, and counted', async () => {
    const { logger, lines } = capture()
    const h = await harness(kind, { start: false, logger })
    const bad = Buffer.concat([Buffer.from(h.files + '/movie'), Buffer.from([0xff]), Buffer.from('.mkv')])
    fs.writeFileSync(bad, 'bytes under an unnamable name')
    const badDir = Buffer.concat([Buffer.from(h.files + '/dir'), Buffer.from([0xfe])])
    fs.mkdirSync(badDir)
    fs.writeFileSync(Buffer.concat([badDir, Buffer.from('/inner.mkv')]), 'inner')
    fs.writeFileSync(h.abs('ok.mkv'), 'fine')
    await h.watcher.start()
    await h.idle()
    expect(h.events().map(e => e.path)).toEqual(['ok.mkv'])
    expect(h.watcher.status().skipped).toEqual({ special: 0, outside: 0, unnamable: 2 })
    expect(lines.some(l => l.includes('not valid UTF-8') && l.includes('movie\\\\xff.mkv'))).toBe(true)
    expect(lines.some(l => l.includes('not valid UTF-8') && l.includes('dir\\\\xfe'))).toBe(true)
  })
})
