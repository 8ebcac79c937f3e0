/**
 * `/health` of a node cut off from its mesh, with real node processes
 * (`node bin/meta-core.js`, mesh over TCP on 127.0.0.1): a node whose only
 * bootstrap peer holds another swarm key reaches nobody, and once that has
 * lasted longer than its window (META_CORE_HEALTH_NO_PEER_MS, short here)
 * its health is `degraded` with the reason, still HTTP 200 (503 with
 * ?strict=1), and `meta-core status` exits 1 saying so; a node of its own
 * mesh that dials it makes it `ok` again.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { writeNewSwarmKey } from '../../src/mesh/libp2p/index.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'

const started: Cli[] = []
const dirs: string[] = []
afterEach(async () => {
  await reapClis(started)
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

/** A node process with its own store and library in `dir`, in the mesh of `key`. */
async function node (dir: string, key: string, env: Record<string, string> = {}): Promise<{ cli: Cli, url: string, p2p: string }> {
  const cli = runCli(['--port', '0', '--log-level', 'warn'], {
    META_CORE_DB_PATH: path.join(dir, 'db', 'm.db'),
    FILES_PATH: path.join(dir, 'files'),
    META_CORE_SWARM_KEY: key,
    META_CORE_P2P_LISTEN: '/ip4/127.0.0.1/tcp/0',
    META_CORE_FULL_HASH: 'none',
    ...env
  })
  started.push(cli)
  const url = await listeningUrl(cli)
  const m = /p2p on (\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/\w+)/.exec(cli.stdout())
  if (m === null) throw new Error(`no p2p address in: ${cli.stdout()}`)
  return { cli, url, p2p: m[1] }
}

interface HealthBody { status: string, redis: boolean, timestamp: string, reasons: Array<{ reason: string, message: string }> }

async function health (url: string, query = ''): Promise<{ code: number, body: HealthBody }> {
  const r = await fetch(`${url}/health${query}`)
  return { code: r.status, body: await r.json() as HealthBody }
}

describe('/health of a node cut off from its mesh', () => {
  it('is degraded with the reason once no peer has been reachable for its window, and ok again once one is', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-health-'))
    dirs.push(root)
    const ours = path.join(root, 'ours.key')
    const theirs = path.join(root, 'theirs.key')
    writeNewSwarmKey(ours)
    writeNewSwarmKey(theirs)
    const stranger = await node(path.join(root, 'stranger'), theirs)
    const alone = await node(path.join(root, 'alone'), ours, { META_CORE_BOOTSTRAP: stranger.p2p, META_CORE_HEALTH_NO_PEER_MS: '1500' })

    await waitFor(async () => (await health(alone.url)).body.status === 'degraded', { timeoutMs: 20_000, what: 'the lone node to report degraded' })
    const h = await health(alone.url)
    expect(h.code).toBe(200)
    expect(h.body).toMatchObject({ status: 'degraded', redis: true, reasons: [{ reason: 'no_peer', message: expect.stringMatching(/^no peer reachable for \d+ s/) }] })
    expect((await health(alone.url, '?strict=1')).code).toBe(503)
    // The node of the other mesh is alone too, but within its one-minute default: ok.
    expect((await health(stranger.url)).body.status).toBe('ok')
    const status = runCli(['status', '--url', alone.url])
    started.push(status)
    expect(await status.exited).toBe(1)
    expect(status.stdout()).toMatch(/^health\s+no peer reachable for \d+ s/m)

    // A node of its own mesh dials it: reachable again.
    await node(path.join(root, 'friend'), ours, { META_CORE_BOOTSTRAP: alone.p2p })
    await waitFor(async () => (await health(alone.url)).body.status === 'ok', { timeoutMs: 20_000, what: 'the node to report ok once a peer is connected' })
    const back = await health(alone.url, '?strict=1')
    expect(back.code).toBe(200)
    expect(back.body.reasons).toEqual([])
  }, 90_000)
})
