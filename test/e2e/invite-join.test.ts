/**
 * One invite, over the real command (`node bin/meta-core.js`, separate
 * processes on 127.0.0.1): `meta-core invite` on a running node prints one
 * line and says it is a secret; `meta-core join <invite>` on a fresh folder
 * writes the key and the bootstrap list beside the store and joins, and a
 * plain `start` of that folder later is still in the mesh; an invite of
 * another mesh is refused for a node already in one; a mistyped invite is
 * refused with what is wrong, and no output or log line ever holds an invite.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { parseSwarmKey, writeNewSwarmKey } from '../../src/mesh/libp2p/index.js'
import { testCid } from '../helpers/record-ops.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-invite-')
const clis: Cli[] = []
afterAll(async () => {
  await reapClis(clis)
  tmp.cleanup()
})

const folder = (name: string): string[] => [
  '--db-path', path.join(tmp.dir, name, 'db', 'meta-core.db'),
  '--files-path', path.join(tmp.dir, name, 'files'),
  '--http-port', '0',
  '--p2p-listen', '/ip4/127.0.0.1/tcp/0',
  '--enable-file-watcher=false',
  '--log-level', 'debug'
]

function run (args: string[], env: Record<string, string> = {}): Cli {
  const c = runCli(args, env)
  clis.push(c)
  return c
}

async function json (url: string, init?: RequestInit): Promise<any> {
  const r = await fetch(url, init)
  return r.status === 404 ? undefined : await r.json()
}

describe('meta-core invite and join', () => {
  it('joins a fresh folder to the mesh of an invite, and keeps it there across a plain restart', async () => {
    const key = path.join(tmp.dir, 'swarm.key')
    writeNewSwarmKey(key)
    const a = run(['start', ...folder('a'), '--swarm-key', key, '--node-name', 'first'])
    const aUrl = await listeningUrl(a)
    const made = run(['invite', '--url', aUrl, '--swarm-key', key, '--db-path', path.join(tmp.dir, 'a', 'db', 'meta-core.db')])
    expect(await made.exited).toBe(0)
    const invite = made.stdout().trim()
    expect(invite).toMatch(/^meta-core-invite\.1\.\S+$/)
    expect(made.stdout().split('\n').filter(Boolean)).toHaveLength(1)
    expect(made.stderr()).toContain('This invite holds the mesh\'s swarm key')
    const aId = (await json(`${aUrl}/api/mesh`)).self.peerId as string
    expect(made.stderr()).toMatch(new RegExp(`/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${aId}`))

    const b = run(['join', invite, ...folder('b')])
    const bUrl = await listeningUrl(b)
    expect(b.stdout()).toContain('joining the mesh of the invite from first')
    const keyFile = path.join(tmp.dir, 'b', 'db', 'meta-core.swarm.key')
    expect(parseSwarmKey(fs.readFileSync(keyFile, 'utf8'))?.meshId).toBe(parseSwarmKey(fs.readFileSync(key, 'utf8'))?.meshId)
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(fs.readFileSync(path.join(tmp.dir, 'b', 'db', 'meta-core.bootstrap'), 'utf8')).toContain(`/p2p/${aId}`)
    await waitFor(async () => (await json(`${bUrl}/api/mesh`)).peers.some((p: any) => p.peerId === aId && p.connected), { timeoutMs: 15_000, what: 'the joined node connected to the inviting one' })
    expect((await fetch(`${aUrl}/meta/${testCid(1)}`, { method: 'PATCH', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'before the restart' }) })).status).toBe(200)
    await waitFor(async () => (await fetch(`${bUrl}/api/meta/${testCid(1)}`)).status === 200, { timeoutMs: 10_000, what: 'a write on the inviting node on the joined one' })

    // Stopped, then started with no mesh option at all: the key and the bootstrap list beside its store keep it in.
    b.child.kill('SIGTERM')
    expect(await b.exited).toBe(0)
    expect((await fetch(`${aUrl}/meta/${testCid(2)}`, { method: 'PATCH', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'while it was away' }) })).status).toBe(200)
    const again = run(['start', ...folder('b')])
    const againUrl = await listeningUrl(again)
    await waitFor(async () => (await fetch(`${againUrl}/api/meta/${testCid(2)}`)).status === 200,
      { timeoutMs: 15_000, what: 'the restarted node back in the mesh' })

    // Nothing it printed or logged holds the invite, nor the key.
    const hex = Buffer.from(parseSwarmKey(fs.readFileSync(key, 'utf8'))!.secret).toString('hex')
    for (const c of [a, b, again]) for (const text of [c.stdout(), c.stderr()]) {
      expect(text).not.toContain(invite.slice(20, 60))
      expect(text).not.toContain(hex)
    }

    // The invite command refuses to pair a key with a node of another mesh.
    const other = path.join(tmp.dir, 'other.key')
    writeNewSwarmKey(other)
    const otherInvite = run(['invite', '--url', aUrl, '--swarm-key', other, '--db-path', path.join(tmp.dir, 'a', 'db', 'meta-core.db')])
    expect(await otherInvite.exited).toBe(1)
    expect(otherInvite.stderr()).toContain('not in mesh')
    again.child.kill('SIGTERM')
    expect(await again.exited).toBe(0)
  }, 90_000)

  it('refuses a mistyped or cut invite with what is wrong, never showing it', async () => {
    const key = path.join(tmp.dir, 'k2.key')
    writeNewSwarmKey(key)
    const a = run(['start', ...folder('c'), '--swarm-key', key])
    const aUrl = await listeningUrl(a)
    const made = run(['invite', '--url', aUrl, '--swarm-key', key, '--db-path', path.join(tmp.dir, 'c', 'db', 'meta-core.db')])
    expect(await made.exited).toBe(0)
    const invite = made.stdout().trim()
    const cases: Array<[string[], string]> = [
      [['join', invite.slice(0, -4), ...folder('d')], 'cut short: its checksum has 4 of its 8 digits'],
      [['join', invite.slice(0, 40) + (invite[40] === 'x' ? 'y' : 'x') + invite.slice(41), ...folder('d')], 'its checksum does not match'],
      [['start', '--invite', 'meta-core-invite.1.', ...folder('d')], 'cut short'],
      [['start', invite, ...folder('d')], 'unexpected argument: an invite (not shown'],
      [['join', ...folder('d')], 'give the invite']
    ]
    for (const [args, message] of cases) {
      const c = run(args)
      expect(await c.exited, c.stderr()).toBe(2)
      expect(c.stderr()).toContain(message)
      expect(c.stderr()).not.toContain(invite.slice(19, 50))
    }
    // Nothing was written for an invite that was refused.
    expect(fs.existsSync(path.join(tmp.dir, 'd'))).toBe(false)
    // A node in a mesh already (b, joined above) is refused this other mesh's invite, and told how to leave its own.
    const b = run(['join', invite, ...folder('b')])
    expect(await b.exited).toBe(1)
    expect(b.stderr()).toContain('this node is in another mesh already')
    expect(b.stderr()).toContain('move that key file away to leave its mesh')
  }, 60_000)
})
