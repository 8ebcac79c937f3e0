/**
 * The `meta-core` subcommands: help for each, keygen, id, and status's
 * refusals, through `runCli` in this process (what bin/meta-core.js runs);
 * and the command itself through `npx meta-core` and `npm start`, as a user
 * of a clone types them. `status` against a running mesh is in
 * test/e2e/compose-peers.test.ts.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { withTimeout } from '../../src/common/index.js'
import { parseSwarmKey } from '../../src/mesh/libp2p/index.js'
import { runCli } from '../../src/node/cli.js'
import { OPTIONS } from '../../src/node/index.js'
import { STATUS_OPTIONS } from '../../src/node/status-command.js'
import { freePort, ROOT } from '../helpers/compose.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-cli-')
afterAll(() => { tmp.cleanup() })

async function cli (argv: string[], env: Record<string, string> = {}): Promise<{ code: number, out: string, err: string }> {
  let out = ''
  let err = ''
  const code = await runCli(argv, env, { out: (t) => { out += t }, err: (t) => { err += t } })
  return { code, out, err }
}

describe('meta-core help', () => {
  it('lists the commands, and each command\'s options with their variables', async () => {
    const top = await cli(['help'])
    expect(top.code).toBe(0)
    for (const c of ['start', 'keygen', 'id', 'status']) expect(top.out).toMatch(new RegExp(`^  ${c} `, 'm'))
    const start = await cli(['start', '--help'])
    expect(start.code).toBe(0)
    for (const o of OPTIONS) expect(start.out).toContain(`--${o.flag}`)
    for (const o of OPTIONS) expect(start.out).toContain(o.env ?? '?')
    expect((await cli(['--help'])).out).toContain('Commands:')
    const status = await cli(['status', '--help'])
    for (const o of STATUS_OPTIONS) expect(status.out).toContain(`--${o.flag}`)
    expect((await cli(['help', 'status'])).out).toBe(status.out)
    expect((await cli(['keygen', '--help'])).out).toContain('--if-missing')
    expect((await cli(['id', '--help'])).out).toContain('--create')
    const unknown = await cli(['frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.err).toContain('unknown command "frobnicate"')
    expect((await cli(['help', 'frobnicate'])).code).toBe(2)
  })
})

describe('meta-core keygen', () => {
  it('writes to standard output with -, keeps an existing key with --if-missing, and refuses anything else in its place', async () => {
    const stdout = await cli(['keygen', '-'])
    expect(stdout.code).toBe(0)
    expect(parseSwarmKey(stdout.out)).toBeDefined()
    expect((await cli(['keygen', '-'])).out).not.toBe(stdout.out)

    const file = path.join(tmp.dir, 'keys', 'swarm.key')
    expect((await cli(['keygen', '--if-missing', file])).code).toBe(0)
    const first = fs.readFileSync(file, 'utf8')
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    const again = await cli(['keygen', '--if-missing', file])
    expect(again.code).toBe(0)
    expect(again.out).toContain('kept')
    expect(fs.readFileSync(file, 'utf8')).toBe(first)
    expect((await cli(['keygen', file])).code).toBe(1)

    const notKey = path.join(tmp.dir, 'not-a-key')
    fs.writeFileSync(notKey, 'hello')
    const refused = await cli(['keygen', '--if-missing', notKey])
    expect(refused.code).toBe(1)
    expect(refused.err).toContain('is not a swarm key')
    expect(fs.readFileSync(notKey, 'utf8')).toBe('hello')
    expect((await cli(['keygen'])).code).toBe(2)
    expect((await cli(['keygen', '--force', file])).err).toContain('unknown option --force')
  })
})

describe('meta-core id', () => {
  it('prints the peer id and p2p addresses from the identity key the node would use, creating it only when asked', async () => {
    const swarm = path.join(tmp.dir, 'id-swarm.key')
    expect((await cli(['keygen', swarm])).code).toBe(0)
    const env = { META_CORE_DB_PATH: path.join(tmp.dir, 'id', 'node.db'), META_CORE_SWARM_KEY: swarm,
      META_CORE_P2P_LISTEN: '/ip4/0.0.0.0/tcp/4100,/ip6/::/tcp/4100' }
    const none = await cli(['id'], env)
    expect(none.code).toBe(1)
    expect(none.err).toContain(`no identity key at ${path.join(tmp.dir, 'id', 'node.key')}`)
    expect(none.err).toContain('--create')

    const created = await cli(['id', '--create', '--json'], env)
    expect(created.code, created.err).toBe(0)
    const j = JSON.parse(created.out) as { peerId: string, keyPath: string, created: boolean, addrs: string[] }
    expect(j.peerId).toMatch(/^12D3KooW/)
    expect(j.created).toBe(true)
    expect(j.keyPath).toBe(path.join(tmp.dir, 'id', 'node.key'))
    expect(fs.statSync(j.keyPath).mode & 0o777).toBe(0o600)
    expect(j.addrs).toEqual([`/ip4/0.0.0.0/tcp/4100/p2p/${j.peerId}`, `/ip6/::/tcp/4100/p2p/${j.peerId}`])

    const table = await cli(['id'], env)
    expect(table.code).toBe(0)
    expect(table.out).toContain(`peer id  ${j.peerId}`)
    expect(table.out).toContain(`/ip4/0.0.0.0/tcp/4100/p2p/${j.peerId}`)
    // The same flags as start, validated the same way.
    const bad = await cli(['id', '--p2p-listen', 'nonsense', '--port', '99999'], env)
    expect(bad.code).toBe(2)
    expect(bad.err).toContain('META_CORE_P2P_LISTEN (--p2p-listen)')
    expect(bad.err).toContain('META_CORE_HTTP_PORT (--http-port)')
  })
})

describe('meta-core status', () => {
  it('says when no node answers, and reports every bad option at once', async () => {
    const port = await freePort()
    const down = await cli(['status', '--url', `http://127.0.0.1:${port}`, '--timeout-ms', '2000'])
    expect(down.code).toBe(1)
    expect(down.err).toContain(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`)
    // Without --url it asks where META_CORE_HTTP_HOST/PORT say the node listens (a wildcard host read as loopback).
    const viaEnv = await cli(['status'], { META_CORE_HTTP_HOST: '0.0.0.0', META_CORE_HTTP_PORT: String(port) })
    expect(viaEnv.err).toContain(`cannot reach http://127.0.0.1:${port}`)
    // The flags `start` takes find the node, too.
    for (const flags of [['--http-port', String(port)], ['--port', String(port), '--host', '127.0.0.1'],
      ['--http-host', '0.0.0.0', '--http-port', String(port)]]) {
      const viaFlags = await cli(['status', ...flags, '--timeout-ms', '2000'])
      expect(viaFlags.code, viaFlags.err).toBe(1)
      expect(viaFlags.err).toContain(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`)
    }
    const bad = await cli(['status', '--url', 'ftp://x', '--timeout-ms', '5', '--bogus'])
    expect(bad.code).toBe(2)
    expect(bad.err).toContain('META_CORE_URL (--url) "ftp://x"')
    expect(bad.err).toContain('META_CORE_STATUS_TIMEOUT_MS (--timeout-ms) "5"')
    expect(bad.err).toContain('unknown option --bogus')
  })
})

describe('the command from a clone', () => {
  const run = async (cmd: string, args: string[]): Promise<{ code: number | null, out: string }> => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (b: Buffer) => { out += b.toString() })
    child.stderr.on('data', (b: Buffer) => { out += b.toString() })
    const code = await withTimeout(new Promise<number | null>(resolve => { child.on('exit', resolve) }), 60_000, `${cmd} ${args.join(' ')}`)
    return { code, out }
  }

  it('runs as npx meta-core (the package bin) and as npm start', async () => {
    // --no: the project's own bin or nothing, never a download.
    const npx = await run('npx', ['--no', 'meta-core', 'help', 'keygen'])
    expect(npx.code, npx.out).toBe(0)
    expect(npx.out).toContain('Usage: meta-core keygen')
    const npm = await run('npm', ['start', '--silent', '--', 'help'])
    expect(npm.code, npm.out).toBe(0)
    expect(npm.out).toContain('Usage: meta-core <command>')
  }, 90_000)
})
