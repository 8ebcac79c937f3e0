/**
 * Paths that name something other than a regular library file, on every
 * route that opens a path: POST /file/cid, POST /api/files/register and the
 * byte routes. A FIFO must be refused without being opened (an open blocks
 * one of libuv's four threads until a writer appears; four of them stalled
 * every file route and the watcher for good), and a symlink leading out of
 * the library must be refused by every route alike.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { midhash256 } from '../../src/cid/index.js'
import { withTimeout } from '../../src/common/index.js'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

let h: ApiHarness
const fifos: string[] = []

beforeEach(async () => { h = await startApi() })
afterEach(async () => {
  // Releases any reader blocked in open() (the defect), so a failing test cannot hang the run.
  for (const f of fifos.splice(0)) {
    try { fs.closeSync(fs.openSync(f, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)) } catch { /* nobody waiting */ }
  }
  await h.close()
})

function mkfifo (rel: string): string {
  const p = path.join(h.filesPath, rel)
  fs.mkdirSync(path.dirname(p), { recursive: true })
  execFileSync('mkfifo', [p])
  fifos.push(p)
  return p
}

function put (rel: string, data: string): string {
  const p = path.join(h.filesPath, rel)
  fs.mkdirSync(path.dirname(p), { recursive: true })
  fs.writeFileSync(p, data)
  return p
}

/** Every answer must come well within this: a blocked open never would. */
const DEADLINE_MS = 10_000

async function inject (opts: InjectOptions): Promise<LightMyRequestResponse> {
  return await withTimeout(h.app.inject(opts), DEADLINE_MS, 'an answer from the API')
}

describe('FIFOs under FILES_PATH', () => {
  it('POST /file/cid refuses a FIFO with 400 not_a_file, and file routes keep answering', async () => {
    mkfifo('pipe.mkv')
    const replies = await Promise.all([1, 2, 3, 4, 5, 6].map(async () => await inject({ method: 'POST', url: '/file/cid', payload: { path: 'pipe.mkv' } })))
    for (const r of replies) expect([r.statusCode, r.json().error]).toEqual([400, 'not_a_file'])
    expect(replies[0].json().message).toMatch(/fifo/)

    // The thread pool is free: hashing, serving and file info of a real file still work.
    put('real.mkv', 'real bytes')
    const hashed = await inject({ method: 'POST', url: '/file/cid', payload: { path: 'real.mkv' } })
    expect(hashed.statusCode).toBe(200)
    const mid = (await midhash256(path.join(h.filesPath, 'real.mkv'))).cid
    await h.store.records.mint('/files/real.mkv', 10, 1n, { [`cids/${mid}`]: 'true' })
    expect((await inject({ url: `/file/${mid}` })).body).toBe('real bytes')
    expect((await inject({ url: `/api/file/${mid}/info` })).json()).toMatchObject({ exists: true, size: 10 })
  })

  it('a record whose filePath is a FIFO has no servable copy: 404, promptly', async () => {
    mkfifo('movies/pipe.mkv')
    const cid = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
    await h.store.records.mint('/files/movies/pipe.mkv', 0, 1n, { [`cids/${cid}`]: 'true' })
    const rs = await Promise.all([1, 2, 3, 4, 5].map(async () => await inject({ url: `/file/${cid}` })))
    for (const r of rs) expect([r.statusCode, r.json().error]).toEqual([404, 'unknown_cid'])
    expect((await inject({ url: `/api/file/${cid}/info` })).json()).toEqual({ exists: false })
    expect((await inject({ method: 'HEAD', url: `/api/file/${cid}` })).statusCode).toBe(404)
  })

  it('POST /api/files/register refuses a FIFO under plugin/ with 400 not_a_file', async () => {
    mkfifo('plugin/pipe.srt')
    const rs = await Promise.all([1, 2, 3, 4, 5].map(async () => await inject({ method: 'POST', url: '/api/files/register',
      payload: { path: 'plugin/pipe.srt' } })))
    for (const r of rs) expect([r.statusCode, r.json().error]).toEqual([400, 'not_a_file'])
    put('plugin/ok.srt', 'subtitle')
    expect((await inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/ok.srt' } })).statusCode).toBe(201)
  })
})

describe('symlinks: every route agrees', () => {
  it('a link leading outside FILES_PATH is refused by register and by POST /file/cid, and never recorded', async () => {
    const outside = path.join(h.dir, 'outside.srt')
    fs.writeFileSync(outside, 'not part of the library')
    fs.mkdirSync(path.join(h.filesPath, 'plugin'))
    fs.symlinkSync(outside, path.join(h.filesPath, 'plugin', 'out.srt'))
    const reg = await inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/out.srt' } })
    expect([reg.statusCode, reg.json().error]).toEqual([400, 'invalid_path'])
    expect(reg.json().message).toMatch(/outside/)
    const sha = await inject({ method: 'POST', url: '/file/cid', payload: { path: 'plugin/out.srt' } })
    expect([sha.statusCode, sha.json().error]).toEqual([400, 'invalid_path'])
    const mid = (await midhash256(outside)).cid
    expect((await inject({ url: `/api/meta/${mid}` })).statusCode).toBe(404)
    expect(h.store.records.countRecords()).toBe(0)
  })

  it('a link inside FILES_PATH is the file it points to: registered, hashed and served', async () => {
    put('plugin/real.srt', 'subtitle bytes')
    fs.symlinkSync('real.srt', path.join(h.filesPath, 'plugin', 'alias.srt'))
    const reg = await inject({ method: 'POST', url: '/api/files/register', payload: { path: 'plugin/alias.srt' } })
    expect(reg.statusCode).toBe(201)
    const { cid } = reg.json<{ cid: string }>()
    expect(cid).toBe((await midhash256(path.join(h.filesPath, 'plugin', 'real.srt'))).cid)
    expect((await inject({ url: `/file/${cid}` })).body).toBe('subtitle bytes')
    expect((await inject({ method: 'POST', url: '/file/cid', payload: { path: 'plugin/alias.srt' } })).json().path).toBe('plugin/real.srt')
  })
})
