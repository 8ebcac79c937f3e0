/**
 * A store file belongs to one meta-core node process, and only to
 * meta-core. Real node processes (the CLI) on one store: the second is
 * refused with the owner named and the first keeps serving; a crash
 * (SIGKILL) never leaves the store locked. Another application's SQLite
 * file is refused and left byte for byte as it was.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { withTimeout } from '../../src/common/index.js'
import { ForeignStoreError, StoreInUseError, openKv } from '../../src/kv/index.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'

const started: Cli[] = []
const dirs: string[] = []
afterEach(async () => {
  await reapClis(started)
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

function tmp (): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-own-'))
  dirs.push(d)
  return d
}

function cli (dir: string, files: string, extra: string[] = []): Cli {
  const c = runCli(['--port', '0', '--log-level', 'warn', '--db-path', path.join(dir, 'data', 'meta-core.db'), '--files-path', path.join(dir, files), ...extra])
  started.push(c)
  return c
}

const CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'

describe('one node process per store', () => {
  it('a second node on the same store is refused with the owner named; the first keeps its records; a SIGKILL frees the store', async () => {
    const dir = tmp()
    fs.mkdirSync(path.join(dir, 'files'))
    fs.writeFileSync(path.join(dir, 'files', 'a.mkv'), 'first node file')
    const first = cli(dir, 'files')
    const url = await listeningUrl(first)
    const put = await fetch(`${url}/meta/${CID}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"title":"kept"}' })
    expect(put.status).toBe(200)

    // The shape: another folder, the same (default-named) store.
    const second = cli(dir, 'elsewhere')
    const code = await withTimeout(second.exited, 30_000, 'the second node to exit')
    expect(code).not.toBe(0)
    const msg = second.stderr()
    expect(msg).toContain('is in use by another meta-core process')
    expect(msg).toContain(`pid ${String(first.child.pid)}`)
    expect(msg).toContain(`listening on ${url}`)
    expect(second.stdout()).not.toContain('listening on')

    // The first node lost nothing: its file record and the API record are there, a rescan changes nothing.
    const scan = await fetch(`${url}/api/watchers/scan?wait=true`, { method: 'POST' })
    expect(((await scan.json()) as { summary: unknown }).summary).toMatchObject({ fileCount: 1, deleted: 0 })
    expect(((await (await fetch(`${url}/api/files/tuples?summary=1`)).json()) as { count: number }).count).toBe(1)
    expect((await (await fetch(`${url}/meta/${CID}/title`)).text())).toBe('kept')

    // A crash leaves nothing stuck: after SIGKILL the next node takes the store at once.
    first.child.kill('SIGKILL')
    await first.exited
    const third = cli(dir, 'files')
    const url3 = await listeningUrl(third)
    expect((await (await fetch(`${url3}/meta/${CID}/title`)).text())).toBe('kept')
  }, 90_000)

  it('in one process too: a second open of an open store is refused, and a closed store opens again', () => {
    const dir = tmp()
    const file = path.join(dir, 'store.db')
    const kv = openKv({ path: file, backgroundCheckpoint: false })
    let err: unknown
    try { openKv({ path: file }) } catch (e) { err = e }
    expect(err).toBeInstanceOf(StoreInUseError)
    expect((err as StoreInUseError).owner?.pid).toBe(process.pid)
    kv.close()
    openKv({ path: file }).close()
  })
})

describe('a database that is not a meta-core store', () => {
  function foreign (dir: string): string {
    const file = path.join(dir, 'data', 'meta-core.db')
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const db = new Database(file)
    db.exec('CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE albums (id INTEGER PRIMARY KEY)')
    const ins = db.prepare('INSERT INTO photos (name) VALUES (?)')
    for (let i = 0; i < 50; i++) ins.run(`photo ${i}`)
    db.close()
    return file
  }
  const digest = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex')

  it('is refused with a clear message and a non-zero exit, and left untouched', async () => {
    const dir = tmp()
    const file = foreign(dir)
    const before = digest(file)
    const listing = fs.readdirSync(path.dirname(file)).sort()
    const c = cli(dir, 'files')
    const code = await withTimeout(c.exited, 30_000, 'the node to exit')
    expect(code).not.toBe(0)
    expect(c.stderr()).toContain('is not a meta-core store')
    expect(c.stderr()).toContain('albums, photos')
    expect(digest(file)).toBe(before)
    expect(fs.readdirSync(path.dirname(file)).sort()).toEqual(listing) // no WAL, no lock file, nothing beside it
  }, 60_000)

  it('refuses a file that is not SQLite, and a kv table of another shape; an empty file is a new store', () => {
    const dir = tmp()
    const text = path.join(dir, 'notes.txt')
    fs.writeFileSync(text, 'just some text, long enough to not be an empty database file at all'.repeat(20))
    expect(() => openKv({ path: text })).toThrow(ForeignStoreError)
    const other = path.join(dir, 'other.db')
    const db = new Database(other)
    db.exec('CREATE TABLE kv (key TEXT, value BLOB, ttl INTEGER)')
    db.close()
    expect(() => openKv({ path: other })).toThrow(/columns \(key, value, ttl\)/)
    const empty = path.join(dir, 'empty.db')
    fs.writeFileSync(empty, '')
    openKv({ path: empty }).close()
  })
})
