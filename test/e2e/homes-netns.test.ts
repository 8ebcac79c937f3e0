/**
 * A mesh across two homes behind NAT, in network namespaces this test makes
 * and removes (test/helpers/netns.ts: a "public" namespace with a relay
 * member, two homes each behind its own masquerading router, two members in
 * each on a home bridge, addresses only inside the namespaces). Every node
 * is a separate `meta-core` process (`ip netns exec … node bin/meta-core.js`).
 *
 * - the relay member announces its address (META_CORE_ANNOUNCE) and prints an
 *   invite (`meta-core invite`); one node in each home joins from it
 *   (`meta-core join`), the other is given the swarm key only: it finds its
 *   home's nodes by mDNS, with no bootstrap address;
 * - a write in home A is readable in home B within 2 s, through the relay;
 * - a 24 MiB file only in home B is served by a node in home A with the same
 *   SHA-256, and so are ranges of it;
 * - with the relay stopped, each home keeps replicating inside; the writes
 *   made meanwhile on both sides are on every node within 30 s of its return;
 * - nodes with another swarm key, one in home A and one beside the relay on
 *   the "internet", receive nothing and cannot use the relay.
 *
 * Linux and root only (CI runs as root); elsewhere it skips with one line
 * saying why.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { newSwarmKeyText } from '../../src/mesh/libp2p/index.js'
import { HomesNet, netnsProblem, sockJson, sockRequest, WAN, type Host } from '../helpers/netns.js'
import { listeningUrl, type Cli } from '../helpers/node-cli.js'
import { testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'

const BIN = path.resolve(import.meta.dirname, '../../bin/meta-core.js')
const problem = netnsProblem()
if (problem !== undefined) console.log(`test/e2e/homes-netns.test.ts skipped: ${problem}`)

const FILE_BYTES = 24 * 1024 * 1024
const HOME_A: Host[] = ['a1', 'a2']
const HOME_B: Host[] = ['b1', 'b2']
const MEMBERS: Host[] = ['relay', ...HOME_A, ...HOME_B]

describe.skipIf(problem !== undefined)('a mesh across two homes behind NAT (network namespaces)', () => {
  let tmp: ReturnType<typeof tmpDir>
  let net: HomesNet
  const running = new Map<Host, Cli>()
  const socks = new Map<Host, string>()
  const peerIds = new Map<Host, string>()
  let key: string
  let otherKey: string
  let invite: string

  const argsOf = (host: Host, extra: string[]): string[] => [
    '--db-path', path.join(tmp.dir, host, 'db', 'meta-core.db'),
    '--files-path', path.join(tmp.dir, host, 'files'),
    '--http-port', '9000',
    '--p2p-listen', '/ip4/0.0.0.0/tcp/4001',
    '--enable-file-watcher=false',
    '--anti-entropy-ms', '5000',
    '--node-name', host,
    '--log-level', 'info',
    ...extra
  ]

  const start = async (host: Host, args: string[]): Promise<void> => {
    const cli = net.run(host, [BIN, ...args])
    running.set(host, cli)
    await listeningUrl(cli)
    if (!socks.has(host)) socks.set(host, await net.forward(host, 9000))
    peerIds.set(host, (await sockJson(sock(host), 'GET', '/api/mesh')).body.self.peerId)
  }

  const stop = async (host: Host): Promise<void> => {
    const cli = running.get(host)
    cli?.child.kill('SIGTERM')
    expect(await cli?.exited).toBe(0)
    running.delete(host)
  }

  const sock = (host: Host): string => socks.get(host)!
  const mesh = async (host: Host): Promise<any> => (await sockJson(sock(host), 'GET', '/api/mesh')).body
  const write = async (host: Host, cid: string, title: string): Promise<void> => {
    expect((await sockJson(sock(host), 'PATCH', `/meta/${cid}`, { title })).status).toBe(200)
  }
  const has = async (host: Host, cid: string): Promise<boolean> => (await sockJson(sock(host), 'GET', `/api/meta/${cid}`)).status === 200
  const connectedTo = async (host: Host, other: Host): Promise<any> => (await mesh(host)).peers.find((p: any) => p.peerId === peerIds.get(other) && p.connected)

  beforeAll(async () => {
    tmp = tmpDir('mc-homes-')
    net = new HomesNet(tmp.dir)
    net.build()
    key = path.join(tmp.dir, 'swarm.key')
    fs.writeFileSync(key, newSwarmKeyText(), { mode: 0o600 })
    otherKey = path.join(tmp.dir, 'other.key')
    fs.writeFileSync(otherKey, newSwarmKeyText(), { mode: 0o600 })
  }, 30_000)

  afterAll(async () => {
    if (process.env.DEBUG_NETNS !== undefined) for (const [h, c] of running) console.log(`--- ${h}\n${c.stdout()}\n${c.stderr().slice(-6000)}`)
    await net?.destroy()
    tmp?.cleanup()
  }, 30_000)

  it('the relay member prints an invite; a node in each home joins from it, the other finds it by mDNS alone', async () => {
    await start('relay', argsOf('relay', ['--swarm-key', key, '--announce', `/ip4/${WAN}.1/tcp/4001`]))
    const printed = net.run('relay', [BIN, 'invite', '--http-port', '9000', '--db-path', path.join(tmp.dir, 'relay', 'db', 'meta-core.db'), '--swarm-key', key])
    expect(await printed.exited).toBe(0)
    invite = printed.stdout().trim()
    expect(invite).toMatch(/^meta-core-invite\.1\.\S+$/)
    expect(printed.stderr()).toContain('holds the mesh\'s swarm key')
    expect(printed.stderr()).toContain(`/ip4/${WAN}.1/tcp/4001/p2p/${peerIds.get('relay')}`)
    // Nodes of another mesh: one in home A, one on the "internet" beside the relay, both trying the relay.
    const relayAddr = `/ip4/${WAN}.1/tcp/4001/p2p/${peerIds.get('relay')}`
    await Promise.all([
      start('a3', argsOf('a3', ['--swarm-key', otherKey, '--bootstrap', `/ip4/${net.addr('a1')}/tcp/4001,/ip4/${WAN}.1/tcp/4001`, '--relay-via', relayAddr])),
      start('stranger', argsOf('stranger', ['--swarm-key', otherKey, '--bootstrap', relayAddr, '--relay-via', relayAddr]))
    ])
    // One node of each home joins from the invite (a fresh folder); the other gets the key file only.
    await Promise.all([
      ...['a1', 'b1'].map(async h => { await start(h as Host, ['join', invite, ...argsOf(h as Host, [])]) }),
      ...['a2', 'b2'].map(async h => { await start(h as Host, argsOf(h as Host, ['--swarm-key', key])) })
    ])
    expect(running.get('a1')!.stdout()).toContain('joining the mesh of the invite from relay')
    expect(fs.readFileSync(path.join(tmp.dir, 'a1', 'db', 'meta-core.bootstrap'), 'utf8')).toContain(relayAddr)
    for (const [x, y] of [['a1', 'a2'], ['b1', 'b2']] as Array<[Host, Host]>) {
      await waitFor(async () => (await connectedTo(y, x))?.lan === true, { timeoutMs: 20_000, what: `${y} to find ${x} on its LAN` })
      expect((await connectedTo(y, x)).route).toBe('direct')
    }
    expect((await mesh('a2')).reach).toMatchObject({ mdns: true })
  }, 90_000)

  it('a write in home A is readable in home B within 2 s, through the relay', async () => {
    // The homes reach each other through the relay: each home's nodes hold reservations there.
    await waitFor(async () => {
      for (const h of [...HOME_A, ...HOME_B]) if ((await mesh(h)).reach.relays[0] !== peerIds.get('relay')) return false
      return true
    }, { timeoutMs: 30_000, what: 'every home node to hold a reservation on the relay' })
    // Each home node learns the other home's nodes and their relayed addresses from the relay, and dials them through it.
    await waitFor(async () => {
      for (const [x, y] of [['a1', 'b1'], ['a1', 'b2'], ['a2', 'b1'], ['a2', 'b2']] as Array<[Host, Host]>) {
        const p = await connectedTo(x, y)
        if (p?.route !== 'relayed' || p.relay !== peerIds.get('relay')) return false
      }
      return true
    }, { timeoutMs: 30_000, what: 'every node of home A connected to every node of home B through the relay' })
    await write('a1', testCid(1), 'warm-up')
    await waitFor(async () => await has('b2', testCid(1)), { timeoutMs: 10_000, what: 'the first write from home A in home B' })
    expect((await mesh('relay')).reach.reachability).toBe('announced')
    expect((await mesh('a1')).reach).toMatchObject({ reachability: 'relayed-only', relayed: expect.arrayContaining([`/ip4/${WAN}.1/tcp/4001/p2p/${peerIds.get('relay')}/p2p-circuit/p2p/${peerIds.get('a1')}`]) })
    const relay = (await mesh('relay')).reach.relay
    expect(relay).toMatchObject({ serving: true })
    expect(relay.reservations).toBeGreaterThanOrEqual(4)
    expect(relay.circuits).toBeGreaterThanOrEqual(1)
    for (let i = 0; i < 3; i++) {
      const cid = testCid(100 + i)
      await write('a2', cid, `from home A ${i}`)
      const t0 = Date.now()
      await waitFor(async () => await has('b1', cid) && await has('b2', cid), { timeoutMs: 2_000, intervalMs: 20, what: 'a write from home A in home B within 2 s' })
      expect(Date.now() - t0).toBeLessThan(2_000)
    }
    // a1 may reach a2 through the member exchange before mDNS answers (it asks again every 10 s): the status line marks a member found on the LAN.
    await waitFor(async () => (await connectedTo('a1', 'a2'))?.lan === true, { timeoutMs: 20_000, what: 'a1 to have found a2 on the LAN (mDNS)' })
    const status = net.run('a1', [BIN, 'status', '--http-port', '9000'])
    await status.exited
    expect(status.stdout()).toMatch(/connected via relay relay/)
    expect(status.stdout()).toMatch(/connected \(LAN\)/)
    expect(status.stdout()).toMatch(/reach\s+relayed only/)
  }, 60_000)

  it('serves a 24 MiB file only in home B to a node in home A, whole and in ranges', async () => {
    const content = randomBytes(FILE_BYTES)
    fs.mkdirSync(path.join(tmp.dir, 'b2', 'files', 'plugin'), { recursive: true })
    fs.writeFileSync(path.join(tmp.dir, 'b2', 'files', 'plugin', 'film.mkv'), content)
    const reg = await sockJson(sock('b2'), 'POST', '/api/files/register', { path: 'plugin/film.mkv' })
    expect(reg.status, JSON.stringify(reg.body)).toBe(201)
    const cid = reg.body.cid as string
    await waitFor(async () => await has('a1', cid), { timeoutMs: 10_000, what: 'the file\'s record in home A' })
    const whole = await sockRequest(sock('a1'), 'GET', `/file/${cid}`, { timeoutMs: 60_000 })
    expect(whole.status).toBe(200)
    expect(createHash('sha256').update(whole.body).digest('hex')).toBe(createHash('sha256').update(content).digest('hex'))
    const mid = await sockRequest(sock('a1'), 'GET', `/file/${cid}`, { headers: { range: 'bytes=10000000-12999999' } })
    expect(mid.status).toBe(206)
    expect(mid.body.equals(content.subarray(10_000_000, 13_000_000))).toBe(true)
    const tail = await sockRequest(sock('a2'), 'GET', `/file/${cid}`, { headers: { range: 'bytes=-65536' } })
    expect(tail.status).toBe(206)
    expect(tail.body.equals(content.subarray(FILE_BYTES - 65_536))).toBe(true)
    const relay = (await mesh('relay')).reach.relay
    expect(relay.bytesRelayed).toBeGreaterThan(FILE_BYTES)
  }, 90_000)

  it('with the relay stopped, each home replicates inside; writes on both sides reach every node within 30 s of its return', async () => {
    await stop('relay')
    await waitFor(async () => !(await connectedTo('a1', 'b1')) && !(await connectedTo('a1', 'b2')), { timeoutMs: 10_000, what: 'home A cut off from home B' })
    await write('a1', testCid(200), 'home A, relay down')
    await write('b1', testCid(201), 'home B, relay down')
    await waitFor(async () => await has('a2', testCid(200)) && await has('b2', testCid(201)), { timeoutMs: 10_000, what: 'each home to replicate inside' })
    expect(await has('b1', testCid(200))).toBe(false)
    // The relay's absence itself: nothing to wait for, only time to pass with the homes apart.
    await new Promise(resolve => setTimeout(resolve, 3_000))
    await write('a2', testCid(202), 'home A, later')
    await write('b2', testCid(203), 'home B, later')
    await start('relay', argsOf('relay', ['--swarm-key', key, '--announce', `/ip4/${WAN}.1/tcp/4001`]))
    const back = Date.now()
    await waitFor(async () => {
      for (const h of MEMBERS) for (const n of [200, 201, 202, 203]) if (!await has(h, testCid(n))) return false
      return true
    }, { timeoutMs: 30_000, intervalMs: 200, what: 'the writes made while the relay was down on every node' })
    expect(Date.now() - back).toBeLessThan(30_000)
  }, 90_000)

  it('gives nodes of another mesh nothing: in home A, and at the relay\'s address, not even a reservation', async () => {
    for (const h of ['a3', 'stranger'] as Host[]) {
      const m = await mesh(h)
      expect(m.peers.filter((p: any) => p.connected)).toEqual([])
      expect(m.reach.relays).toEqual([])
      expect((await sockJson(sock(h), 'GET', '/status')).body.fileCount).toBe(0)
    }
    const strangers = new Set([peerIds.get('a3'), peerIds.get('stranger')])
    for (const h of MEMBERS) {
      const m = await mesh(h)
      expect(m.peers.filter((p: any) => strangers.has(p.peerId))).toEqual([])
    }
    expect((await mesh('relay')).reach.relay.peers.filter((p: any) => strangers.has(p.peerId))).toEqual([])
  }, 30_000)
})
