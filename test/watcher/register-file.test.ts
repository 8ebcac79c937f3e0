import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { InvalidInputError, MetaCoreError } from '../../src/common/index.js'
import { FileNotFoundError, InvalidPathError, checkRegisterPath } from '../../src/watcher/index.js'
import { midhashOf, openHarness, shapes, type Harness } from './harness.js'

const open: Harness[] = []
afterEach(async () => { while (open.length > 0) await open.pop()!.close() })

/** A box with ENABLE_FILE_WATCHER=false: nothing watches, registerFile does the work. */
async function disabled (): Promise<Harness> {
  const h = await openHarness({ source: 'none' })
  open.push(h)
  return h
}

describe('registerFile (POST /api/files/register)', () => {
  it('records a file under plugin/ with the watcher disabled: created, then known', async () => {
    const h = await disabled()
    expect(h.watcher.status()).toMatchObject({ enabled: false, active: false })
    fs.mkdirSync(h.abs('plugin/posters'), { recursive: true })
    fs.writeFileSync(h.abs('plugin/posters/p.jpg'), 'poster bytes')
    const cid = await midhashOf(h.abs('plugin/posters/p.jpg'))

    const first = await h.watcher.registerFile('plugin/posters/p.jpg')
    expect(first).toEqual({ root: h.store.records.resolveRoot(cid), cid, created: true, path: 'plugin/posters/p.jpg', size: 12 })
    expect(h.store.records.getFlat(cid)).toMatchObject({ filePath: '/files/plugin/posters/p.jpg', sizeByte: '12', 'holders/node-test': 'true' })
    expect(shapes(h.events())).toEqual([{ type: 'add', path: 'plugin/posters/p.jpg', size: '12', midhash256: cid }])

    const again = await h.watcher.registerFile('./plugin//posters/p.jpg')
    expect(again).toEqual({ ...first, created: false })
    expect(h.events()).toHaveLength(1)
    expect(h.store.records.countRecords()).toBe(1)
  })

  it('a second path with known content is added as a duplicate, not a new root', async () => {
    const h = await disabled()
    fs.mkdirSync(h.abs('plugin'), { recursive: true })
    fs.writeFileSync(h.abs('plugin/a.srt'), 'subtitle')
    fs.writeFileSync(h.abs('plugin/b.srt'), 'subtitle')
    const a = await h.watcher.registerFile('plugin/a.srt')
    const b = await h.watcher.registerFile('plugin/b.srt')
    expect(b).toMatchObject({ root: a.root, cid: a.cid, created: false })
    expect(h.store.records.getDocument(a.cid)!.duplicates).toEqual(['/files/plugin/b.srt'])
  })

  it('refuses bad paths with InvalidPathError (400) and missing files with FileNotFoundError (404)', async () => {
    const h = await disabled()
    fs.mkdirSync(h.abs('plugin/dir'), { recursive: true })
    fs.writeFileSync(h.abs('outside.txt'), 'not under plugin')
    for (const bad of ['', '/plugin/x', '../plugin/x', 'plugin/../outside.txt', 'plugin/a/../../outside.txt', 'outside.txt', 'watch/x', 'plugin', 'plugin/',
      'plugin/dir', 'plugin/dir/']) {
      const err = await h.watcher.registerFile(bad).catch((e: unknown) => e)
      expect(err, bad).toBeInstanceOf(InvalidPathError)
      expect(err).toBeInstanceOf(InvalidInputError)
      expect((err as MetaCoreError).code).toBe('invalid_path')
    }
    const missing = await h.watcher.registerFile('plugin/nope.jpg').catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(FileNotFoundError)
    expect((missing as MetaCoreError).code).toBe('not_found')
    expect(h.events()).toEqual([])
    expect(h.store.records.countRecords()).toBe(0)
  })

  it('normalises what it accepts', () => {
    expect(checkRegisterPath('plugin/a/./b.jpg')).toBe('plugin/a/b.jpg')
    expect(checkRegisterPath('./plugin//x')).toBe('plugin/x')
    expect(() => checkRegisterPath(42)).toThrow(InvalidPathError)
  })

  it('with the watcher running, a registered file is not announced twice', async () => {
    const h = await openHarness({ source: 'real' })
    open.push(h)
    await h.idle()
    fs.mkdirSync(h.abs('plugin'), { recursive: true })
    fs.writeFileSync(h.abs('plugin/cover.jpg'), 'cover')
    const r = await h.watcher.registerFile('plugin/cover.jpg')
    expect(r.created).toBe(true)
    await h.idle()
    await h.watcher.scan()
    expect(shapes(h.events())).toEqual([{ type: 'add', path: 'plugin/cover.jpg', size: '5', midhash256: r.cid }])
  })
})
