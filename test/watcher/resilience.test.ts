import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AbortedError, createLogger, type Logger } from '../../src/common/index.js'
import { FilesPathUnavailableError } from '../../src/watcher/index.js'
import { midhashOf, openHarness, shapes, type Harness, type HarnessOptions } from './harness.js'

const open: Harness[] = []
afterEach(async () => { while (open.length > 0) await open.pop()!.close() })

async function harness (opts: HarnessOptions = {}): Promise<Harness> {
  const h = await openHarness({ source: 'scripted', ...opts })
  open.push(h)
  return h
}

function capture (): { logger: Logger, lines: string[] } {
  const lines: string[] = []
  return { logger: createLogger({ level: 'debug', write: l => { lines.push(l) } }), lines }
}

describe('safety net', () => {
  it('the periodic rescan finds changes whose OS events were dropped', async () => {
    const h = await harness({ rescanIntervalMs: 300 })
    await h.idle()
    // Written behind the source's back: no hint at all.
    fs.writeFileSync(h.abs('silent.mkv'), 'no event for this one')
    const evs = await h.waitEvents(e => e.length === 1, 'the rescan to find the file', 10_000)
    expect(shapes(evs)).toEqual([{ type: 'add', path: 'silent.mkv', size: '21', midhash256: await midhashOf(h.abs('silent.mkv')) }])
    expect(h.watcher.status().lastScan).toMatch(/^\d{4}-\d\d-\d\dT/)
  })

  it('a manual scan reports what it found', async () => {
    const h = await harness()
    await h.idle() // the initial scan of the empty library is over: the next scan is the first to see these
    for (const rel of ['a', 'b', 'c', 'd']) fs.writeFileSync(h.abs(rel), `content ${rel}`)
    expect(await h.watcher.scan()).toEqual({ fileCount: 4, added: 4, changed: 0, deleted: 0, renamed: 0 })
    // As many bytes as before: the rewrite shows in its mtime, set past the first one's whatever the disk's timestamp granularity.
    const first = fs.statSync(h.abs('a')).mtimeMs
    fs.writeFileSync(h.abs('a'), 'changed a')
    fs.utimesSync(h.abs('a'), new Date(), new Date(first + 1_000))
    fs.rmSync(h.abs('b'))
    fs.renameSync(h.abs('c'), h.abs('c2'))
    expect(await h.watcher.scan()).toEqual({ fileCount: 3, added: 0, changed: 1, deleted: 1, renamed: 1 })
    expect(await h.watcher.scan()).toEqual({ fileCount: 3, added: 0, changed: 0, deleted: 0, renamed: 0 })
  })

  it('scan requests made while a scan runs share one follow-up scan', async () => {
    const h = await harness({ start: false })
    fs.writeFileSync(h.abs('x'), 'x')
    await h.watcher.start()
    const [a, b, c] = await Promise.all([h.watcher.scan(), h.watcher.scan(), h.watcher.scan()])
    expect(a).toEqual(b)
    expect(b).toEqual(c)
    await h.idle()
    expect(h.events()).toHaveLength(1)
  })
})

describe('unreadable entries and a missing library', () => {
  it('logs and skips entries it cannot read, and records the rest', async () => {
    const { logger, lines } = capture()
    const h = await harness({ start: false, logger })
    fs.symlinkSync('loop', h.abs('loop')) // ELOOP on stat
    fs.symlinkSync('nowhere', h.abs('dangling')) // nothing there: not a file, not an error
    fs.writeFileSync(h.abs('real.txt'), 'readable')
    fs.symlinkSync('real.txt', h.abs('link.txt'))
    await h.watcher.start()
    await h.idle()
    expect(h.events().map(e => `${e.type} ${e.path}`).sort()).toEqual(['add link.txt', 'add real.txt'])
    expect(lines.some(l => l.includes('unreadable entry skipped') && l.includes('"loop"'))).toBe(true)
    // A symlinked file is the same content at another path: one record, one duplicate.
    expect(h.store.records.countRecords()).toBe(1)
  })

  it.skipIf(process.getuid?.() === 0)('skips a file it has no permission to read', async () => {
    const { logger, lines } = capture()
    const h = await harness({ start: false, logger })
    fs.writeFileSync(h.abs('secret.bin'), 'no access')
    fs.chmodSync(h.abs('secret.bin'), 0)
    fs.writeFileSync(h.abs('open.bin'), 'access')
    await h.watcher.start()
    await h.idle()
    expect(h.events().map(e => e.path)).toEqual(['open.bin'])
    expect(lines.some(l => l.includes('unreadable file skipped') && l.includes('secret.bin'))).toBe(true)
    fs.chmodSync(h.abs('secret.bin'), 0o644)
  })

  it('fails a scan when FILES_PATH disappears, instead of deleting every record', async () => {
    const h = await harness()
    h.fsd.write('a.mkv', 'a')
    h.fsd.write('b/c.mkv', 'c')
    await h.waitEvents(e => e.length === 2, 'two adds')
    await h.idle()
    const away = path.join(h.root, 'unmounted')
    fs.renameSync(h.files, away)
    await expect(h.watcher.scan()).rejects.toBeInstanceOf(FilesPathUnavailableError)
    await h.idle()
    expect(h.events()).toHaveLength(2)
    expect(h.store.records.countRecords()).toBe(2)
    fs.renameSync(away, h.files)
    expect(await h.watcher.scan()).toEqual({ fileCount: 2, added: 0, changed: 0, deleted: 0, renamed: 0 })
  })
})

describe('start and stop', () => {
  it('stop is idempotent, fine before start, and aborts a scan in progress', async () => {
    const h = await harness({ start: false, clock: 'virtual' })
    const time = h.time!
    await h.watcher.stop()
    await h.watcher.stop()
    await h.watcher.start()
    await h.watcher.start()
    await h.idle() // the initial scan of the empty library
    for (let i = 0; i < 50; i++) fs.writeFileSync(h.abs(`f${i}`), `file ${i}`)
    // One file's hash is held: the scan, which waits for every file it found, cannot finish before stop.
    const release = time.reads.holdHash('/f7')
    // The outcome is observed at once: the scan may reject while stop is still running.
    const scan = h.watcher.scan().then(() => 'done', (e: unknown) => e)
    expect(await time.advance(60_000, () => time.reads.hashed.some(p => p.endsWith('/f7')))).toBe(true)
    expect(h.watcher.status().isScanning).toBe(true)
    await h.wait(Promise.all([h.watcher.stop(), h.watcher.stop()]))
    expect(await scan).toBeInstanceOf(AbortedError)
    const n = h.events().length
    expect(n).toBeLessThan(50)
    expect(h.events().map(e => e.path)).not.toContain('f7')
    // Nothing is written after stop returned: it left no timer behind, and no time or I/O brings anything.
    expect(time.clock.pending).toBe(0)
    await time.advance(10 * 60_000)
    expect(h.events()).toHaveLength(n)
    expect(h.watcher.status()).toMatchObject({ active: false, isScanning: false })
    // And it starts again, finishing the work.
    release()
    await h.watcher.start()
    await h.idle()
    expect(h.events()).toHaveLength(50)
    expect(h.store.records.countRecords()).toBe(50)
  })

  it('live events flow again after a stop and a start', async () => {
    const h = await harness({ source: 'real' })
    h.fsd.write('before.txt', 'before')
    await h.waitEvents(e => e.length === 1, 'the first add')
    await h.watcher.stop()
    await h.watcher.start()
    await h.idle()
    h.fsd.write('after.txt', 'after')
    await h.waitEvents(e => e.length === 2, 'an add after the restart')
    expect(h.events().map(e => e.path)).toEqual(['before.txt', 'after.txt'])
  })

  it('creates FILES_PATH when it is missing', async () => {
    const h = await harness({ start: false })
    fs.rmSync(h.files, { recursive: true })
    await h.watcher.start()
    expect(fs.statSync(h.files).isDirectory()).toBe(true)
  })
})
