/**
 * A holder killed (SIGKILL, no goodbye) while it streams a file to another
 * node's client: A and B are `meta-core` processes holding the same 24 MiB
 * file, C (in this process) has none. C's client reads a little of the
 * file, the holder serving it is killed, and the client still gets every
 * byte, the rest from the other holder.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import type { RunningNode } from '../../src/node/index.js'
import { meshTestState, startMeshNode, swarmKeyIn } from '../helpers/mesh-nodes.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'
import { meshCliEnv, readAcross } from '../helpers/peer-bytes.js'

const SIZE = 24 * 1024 * 1024
const REL = 'plugin/movie.mp4'
/** One whole-second mtime for both copies: the record holds one size and mtime for them (location fields replicate). */
const MTIME_S = 1_700_000_000

const state = meshTestState()
const clis: Cli[] = []
const holders: Array<{ cli: Cli, url: string, peerId: string }> = []
let c: RunningNode
let content: Buffer
let cid: string

async function startHolder (dir: string, key: string, bootstrap?: string): Promise<{ cli: Cli, url: string, peerId: string, addr: string }> {
  const file = path.join(dir, 'files', REL)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  fs.utimesSync(file, MTIME_S, MTIME_S)
  const cli = runCli([], meshCliEnv(dir, key, bootstrap))
  clis.push(cli)
  const url = await listeningUrl(cli)
  const self = ((await (await fetch(`${url}/api/mesh`)).json()) as { self: unknown }).self as { peerId: string, addrs: string[] }
  const reg = await fetch(`${url}/api/files/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: REL }) })
  expect([200, 201]).toContain(reg.status)
  cid = ((await reg.json()) as { cid: string }).cid
  return { cli, url, peerId: self.peerId, addr: self.addrs[0] }
}

beforeAll(async () => {
  content = randomBytes(SIZE)
  const key = swarmKeyIn(state.dir())
  const a = await startHolder(path.join(state.dir(), 'a'), key)
  const b = await startHolder(path.join(state.dir(), 'b'), key, a.addr)
  holders.push(a, b)
  c = await startMeshNode({ dir: path.join(state.dir(), 'c'), swarmKey: key, bootstrap: [a.addr, b.addr] })
  state.nodes.push(c)
  await waitFor(async () => {
    const r = await fetch(`${c.url}/api/meta/${cid}`)
    if (r.status !== 200) return false
    const m = ((await r.json()) as { metadata: Record<string, string> }).metadata
    return m[`holders/${a.peerId}`] === 'true' && m[`holders/${b.peerId}`] === 'true'
  }, { timeoutMs: 20_000, what: 'C to learn the record and both holders' })
}, 90_000)

afterAll(async () => {
  await reapClis(clis)
  await state.cleanup()
}, 30_000)

describe('a holder killed mid-stream', () => {
  it('leaves the client with every byte, the rest from the other holder', async () => {
    const r = await fetch(`${c.url}/file/${cid}`)
    expect(r.status).toBe(200)
    const serving = holders.find(h => h.peerId === r.headers.get('x-meta-core-served-by'))!
    const other = holders.find(h => h !== serving)!
    const body = await readAcross(r, 2 * 1024 * 1024, async () => {
      serving.cli.child.kill('SIGKILL')
      await serving.cli.exited
    })
    expect(body.length).toBe(SIZE)
    expect(createHash('sha256').update(body).digest('hex')).toBe(createHash('sha256').update(content).digest('hex'))
    const fromOther = c.mesh.bytes!.figures().find(f => f.peerId === other.peerId)
    expect(fromOther?.bytesFetched).toBeGreaterThan(0)
  }, 60_000)
})
