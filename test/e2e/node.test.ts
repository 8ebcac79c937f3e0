/**
 * Whole nodes on 127.0.0.1: the composition root with the real store,
 * search, watcher and API, driven over HTTP only.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { midhash256 } from '../../src/cid/index.js'
import { silentLogger, waitFor, withTimeout } from '../../src/common/index.js'
import { parseConfig, startNode, type NodeConfig, type RunningNode } from '../../src/node/index.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'
import { openSse, type SseClient } from '../helpers/sse-client.js'

const TOKEN = 'e2e-token-0123456789'
const dirs: string[] = []
const nodes: RunningNode[] = []
const clis: Cli[] = []
const streams: SseClient[] = []

afterEach(async () => {
  for (const s of streams.splice(0)) s.close()
  for (const n of nodes.splice(0)) await n.stop()
  await reapClis(clis)
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

function tmp (): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-'))
  dirs.push(d)
  return d
}

async function config (dir: string, extra: string[] = []): Promise<NodeConfig> {
  const r = await parseConfig(['--port', '0', '--db-path', path.join(dir, 'db', 'm.db'), '--files-path', path.join(dir, 'files'), ...extra], {})
  if (r.kind !== 'config') throw new Error('config')
  return r.config
}

describe('a node over HTTP', () => {
  it('registers, describes, serves and announces a file; survives a restart', async () => {
    const dir = tmp()
    const cfg = await config(dir, ['--api-token', TOKEN, '--enable-file-watcher=false'])
    let node = await startNode(cfg, { logger: silentLogger })
    nodes.push(node)
    const auth = { authorization: `Bearer ${TOKEN}` }
    const events = await openSse(`${node.url}/api/events/files`, auth)
    streams.push(events)
    const meta = await openSse(`${node.url}/api/events/meta`, auth)
    streams.push(meta)

    const file = path.join(cfg.filesPath, 'plugin', 'posters', 'p.png')
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, Buffer.alloc(5000, 7))
    const { cid } = await midhash256(file)

    const reg = await fetch(`${node.url}/api/files/register`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'plugin/posters/p.png' }) })
    expect(reg.status).toBe(201)
    expect(await reg.json()).toMatchObject({ cid, created: true })
    await events.waitForEvents(1)
    expect(events.events[0].event).toBe('add')
    expect(JSON.parse(events.events[0].data)).toMatchObject({ path: 'plugin/posters/p.png', midhash256: cid })

    // Writes need the token; the public CID surface does not.
    expect((await fetch(`${node.url}/meta/${cid}`, { method: 'PATCH', headers: { 'content-type': 'application/json' },
      body: '{"title":"x"}' })).status).toBe(401)
    const w = await fetch(`${node.url}/meta/${cid}`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Poster' }) })
    expect(w.status).toBe(200)
    await waitFor(() => meta.events.some(e => e.data.includes('/title')), { timeoutMs: 5000, what: 'the title set event' })

    const doc = await (await fetch(`${node.url}/api/meta/${cid}`)).json()
    expect(doc).toMatchObject({ cid, canonical_cid: cid, metadata: { title: 'Poster', filePath: '/files/plugin/posters/p.png' } })
    const part = await fetch(`${node.url}/file/${cid}`, { headers: { range: 'bytes=10-19' } })
    expect(part.status).toBe(206)
    expect(part.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await part.arrayBuffer()).equals(Buffer.alloc(10, 7))).toBe(true)

    const found = await (await fetch(`${node.url}/api/metadata/search`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'poster' }) })).json()
    expect(found).toMatchObject({ count: 1, total: 1 })

    // Stop ends the event streams; a restart on the same file has everything.
    await node.stop()
    nodes.splice(0)
    await waitFor(() => events.ended && meta.ended, { timeoutMs: 5000, what: 'streams to end on stop' })
    node = await startNode(cfg, { logger: silentLogger })
    nodes.push(node)
    const again = await (await fetch(`${node.url}/api/meta/${cid}`)).json() as { metadata: Record<string, string> }
    expect(again.metadata.title).toBe('Poster')
  }, 60_000)

  it('loses no acknowledged write when the process is killed', async () => {
    const dir = tmp()
    const env = { META_CORE_DB_PATH: path.join(dir, 'db', 'm.db'), FILES_PATH: path.join(dir, 'files'), ENABLE_FILE_WATCHER: 'false',
      META_CORE_LOG_LEVEL: 'warn' }
    const first = runCli(['--port', '0'], env)
    clis.push(first)
    const url = await listeningUrl(first)
    const rids: string[] = []
    await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      const cid = (await midhash256FromText(dir, `f${i}`)).cid
      const r = await fetch(`${url}/meta/${cid}`, { method: 'PATCH', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title: `t${i}` }) })
      expect(r.status).toBe(200)
      rids.push(((await r.json()) as { hashId: string }).hashId)
    }))
    first.child.kill('SIGKILL')
    await withTimeout(first.exited, 10_000, 'the killed node to exit')

    const second = runCli(['--port', '0'], env)
    clis.push(second)
    const url2 = await listeningUrl(second)
    const list = await (await fetch(`${url2}/meta`)).json() as { count: number, hashIds: string[] }
    expect(list.count).toBe(50)
    expect([...list.hashIds].sort()).toEqual([...rids].sort())
    second.child.kill('SIGTERM')
    expect(await withTimeout(second.exited, 15_000, 'a clean stop')).toBe(0)
  }, 90_000)
})

async function midhash256FromText (dir: string, text: string): Promise<{ cid: string }> {
  const f = path.join(dir, `in-${text}`)
  fs.writeFileSync(f, text)
  return await midhash256(f)
}
