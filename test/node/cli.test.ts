/**
 * The real CLI as a child process (`node bin/meta-core.js`,
 * what `npm start` runs): it listens on an ephemeral port and prints it,
 * serves, stops cleanly on SIGTERM, and refuses bad configuration fast.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor, withTimeout } from '../../src/common/index.js'
import { listeningUrl, reapClis, runCli, type Cli } from '../helpers/node-cli.js'

const started: Cli[] = []
const dirs: string[] = []
afterEach(async () => {
  await reapClis(started)
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

function tmp (): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-'))
  dirs.push(d)
  return d
}

describe('meta-core CLI', () => {
  it('listens on --port 0, prints the real port, serves, and exits 0 on SIGTERM', async () => {
    const dir = tmp()
    const cli = runCli(['--port', '0', '--log-level', 'warn'], { META_CORE_DB_PATH: path.join(dir, 'db', 'm.db'), FILES_PATH: path.join(dir, 'files') })
    started.push(cli)
    const url = await listeningUrl(cli)
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(url).not.toMatch(/:0$/)
    await waitFor(() => cli.stdout().includes('store: '), { timeoutMs: 5000, what: 'the store line' })
    expect(cli.stdout()).toContain(`store: ${path.join(dir, 'db', 'm.db')}`)
    const health = await fetch(`${url}/health`)
    expect(health.status, cli.stderr()).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok' })
    const w = await fetch(`${url}/meta/bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku`, {
      method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'x' })
    })
    expect(w.status, await w.text()).toBe(200)
    cli.child.kill('SIGTERM')
    expect(await withTimeout(cli.exited, 15_000, 'the node to exit after SIGTERM'), cli.stderr()).toBe(0)
    expect(fs.existsSync(path.join(dir, 'files'))).toBe(true)
  }, 60_000)

  it('keygen writes a new swarm key (mode 0600) and never overwrites one; a node with it joins a mesh and prints its peer id', async () => {
    const dir = tmp()
    const keyFile = path.join(dir, 'keys', 'swarm.key')
    const gen = runCli(['keygen', keyFile])
    started.push(gen)
    expect(await withTimeout(gen.exited, 30_000, 'keygen'), gen.stderr()).toBe(0)
    const text = fs.readFileSync(keyFile, 'utf8')
    expect(text).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}\n$/)
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600)
    const again = runCli(['keygen', keyFile])
    started.push(again)
    expect(await withTimeout(again.exited, 30_000, 'keygen over an existing key')).toBe(1)
    expect(again.stderr()).toContain('already exists')
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(text)

    const node = runCli(['--port', '0', '--log-level', 'warn', '--swarm-key', keyFile, '--p2p-listen', '/ip4/127.0.0.1/tcp/0'], {
      META_CORE_DB_PATH: path.join(dir, 'db', 'm.db'), FILES_PATH: path.join(dir, 'files')
    })
    started.push(node)
    const url = await listeningUrl(node)
    await waitFor(() => /mesh \w+: peer id 12D3KooW\w+, p2p on \/ip4\/127\.0\.0\.1\/tcp\/[1-9]/.test(node.stdout()), { timeoutMs: 5000, what: 'the mesh line' })
    const mesh = await (await fetch(`${url}/api/mesh`)).json() as { enabled: boolean, self: { peerId: string, addrs: string[] } }
    expect(mesh.enabled).toBe(true)
    expect(mesh.self.addrs[0]).toContain(mesh.self.peerId)
    // The identity key sits beside the store, private.
    expect(fs.statSync(path.join(dir, 'db', 'm.key')).mode & 0o777).toBe(0o600)
    node.child.kill('SIGTERM')
    expect(await withTimeout(node.exited, 15_000, 'the node to exit after SIGTERM'), node.stderr()).toBe(0)
  }, 60_000)

  it('fails fast with a clear message on bad configuration', async () => {
    const bad = runCli(['--port', '70000', '--http-host', '0.0.0.0'])
    started.push(bad)
    expect(await withTimeout(bad.exited, 30_000, 'the CLI to refuse bad config')).toBe(2)
    expect(bad.stderr()).toContain('invalid META_CORE_HTTP_PORT (--http-port) "70000"')
    expect(bad.stderr()).toContain('0.0.0.0 is not a loopback address')
    expect(bad.stdout()).not.toContain('listening')

    const help = runCli(['--help'])
    started.push(help)
    expect(await withTimeout(help.exited, 30_000, '--help')).toBe(0)
    expect(help.stdout()).toContain('META_CORE_HTTP_PORT')
  }, 60_000)

  it('says what is wrong when FILES_PATH is a file or the store path a folder, and creates nothing', async () => {
    const dir = tmp()
    fs.writeFileSync(path.join(dir, 'library.txt'), 'a file, not a folder')
    fs.mkdirSync(path.join(dir, 'store-folder'))
    const bad = runCli(['--port', '0', '--files-path', path.join(dir, 'library.txt'), '--db-path', path.join(dir, 'store-folder')])
    started.push(bad)
    expect(await withTimeout(bad.exited, 30_000, 'the CLI to refuse the paths')).toBe(2)
    expect(bad.stderr()).toContain(`FILES_PATH (--files-path) ${path.join(dir, 'library.txt')} is a file, not a folder`)
    expect(bad.stderr()).toContain(`META_CORE_DB_PATH (--db-path) ${path.join(dir, 'store-folder')} is a folder`)
    expect(bad.stderr()).not.toContain('EEXIST')
    expect(fs.readdirSync(dir).sort()).toEqual(['library.txt', 'store-folder'])
    expect(fs.readdirSync(path.join(dir, 'store-folder'))).toEqual([])

    const below = runCli(['--port', '0', '--files-path', path.join(dir, 'library.txt', 'movies'), '--db-path', path.join(dir, 'db', 'm.db')])
    started.push(below)
    expect(await withTimeout(below.exited, 30_000, 'the CLI to refuse the path')).toBe(2)
    expect(below.stderr()).toContain(`cannot be created: ${path.join(dir, 'library.txt')} is a file, not a folder`)
  }, 60_000)

  it('names an unknown META_CORE_ variable at start, with the nearest known one, and runs on the options it knows', async () => {
    const dir = tmp()
    const cli = runCli(['--port', '0', '--log-level', 'warn'], {
      META_CORE_DB_PATH: path.join(dir, 'db', 'm.db'),
      FILES_PATH: path.join(dir, 'files'),
      META_CORE_HTTP_PROT: '9100',
      META_CORE_FULLHASH: 'none',
      META_CORE_SETTLE_MS: '500',
      // A retired option is no typo: it has a warning of its own.
      META_CORE_TOMBSTONE_RETENTION_MS: '60000'
    })
    started.push(cli)
    const url = await listeningUrl(cli)
    const warnings = cli.stderr().split('\n').filter(l => l.includes('warning'))
    expect(cli.stdout() + cli.stderr()).toContain('META_CORE_TOMBSTONE_RETENTION_MS (--tombstone-retention-ms) is set but no longer does anything')
    expect(warnings).toEqual([
      'meta-core: warning: META_CORE_FULLHASH is not a meta-core variable and is ignored (did you mean META_CORE_FULL_HASH?)',
      'meta-core: warning: META_CORE_HTTP_PROT is not a meta-core variable and is ignored (did you mean META_CORE_HTTP_PORT?)'
    ])
    // The typo changed nothing: the node took --port 0, not 9100, and full hashing stayed on.
    expect(url).not.toMatch(/:9100$/)
    const w = await (await fetch(`${url}/api/watchers`)).json() as { watchers: Array<{ fullHash: { algorithms: string[] } }> }
    expect(w.watchers[0].fullHash.algorithms).toEqual(['sha2-256', 'ipfs'])
  }, 60_000)
})
