/**
 * `docker-compose.peers.yml` run without Docker: every service of the file
 * started as a local process with its own command and environment (and the
 * image's ENV, ENTRYPOINT and CMD from the Dockerfile), its volumes mapped
 * to temp folders, its ports to free ports on 127.0.0.1 and its
 * `/dns4/<service>` bootstrap addresses to localhost (helpers/compose.ts).
 * The one-shot swarm-key service runs first, as `depends_on` says; then the
 * three peers must form a mesh and converge, answer their healthcheck, and
 * show each other in `meta-core status` and `/metrics`. The processes are
 * shared by every test of the file.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor, withTimeout } from '../../src/common/index.js'
import { freePort, localPlans, readCompose, type ComposeFile, type LocalPlan } from '../helpers/compose.js'
import { listeningUrl, reapClis, runCli, runNodeScript, type Cli } from '../helpers/node-cli.js'
import { scrape } from '../helpers/prometheus.js'
import { testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'

const TOKEN = 'compose-token-0123456789abcdef'
const PEERS = ['peer1', 'peer2', 'peer3']
const tmp = tmpDir('mc-compose-')
const clis: Cli[] = []
let compose: ComposeFile
let plans: Map<string, LocalPlan>
const urls = new Map<string, string>()
const procs = new Map<string, Cli>()
const ids = new Map<string, string>()
const auth = { authorization: `Bearer ${TOKEN}` }

function volumeDir (name: string): string {
  const d = path.join(tmp.dir, 'volumes', name)
  fs.mkdirSync(d, { recursive: true })
  return d
}

/** Runs a one-shot service to completion (what `condition: service_completed_successfully` waits for). */
async function runToCompletion (plan: LocalPlan): Promise<Cli> {
  const cli = runNodeScript(plan.argv, plan.env)
  clis.push(cli)
  const code = await withTimeout(cli.exited, 30_000, `service ${plan.service} to complete`)
  expect(code, `${plan.service}: ${cli.stderr()}`).toBe(0)
  return cli
}

async function api<T = any> (peer: string, route: string, init: RequestInit = {}): Promise<{ status: number, body: T }> {
  const r = await fetch(`${urls.get(peer) ?? ''}${route}`, { ...init, headers: { ...auth, ...(init.body === undefined ? {}
    : { 'content-type': 'application/json' }), ...(init.headers ?? {}) } })
  const text = await r.text()
  return { status: r.status, body: (text === '' ? undefined : JSON.parse(text)) as T }
}

beforeAll(async () => {
  compose = readCompose({ META_CORE_API_TOKEN: TOKEN })
  const ports = new Map<string, { http: number, p2p: number }>()
  for (const [name, s] of Object.entries(compose.services)) {
    if ((s.ports ?? []).length > 0) ports.set(name, { http: await freePort(), p2p: await freePort() })
  }
  plans = new Map(localPlans(compose, volumeDir, ports).map(p => [p.service, p]))
  // Dependencies first, as compose orders them.
  for (const peer of PEERS) {
    for (const d of plans.get(peer)?.dependsOn ?? []) {
      if (d.condition === 'service_completed_successfully' && !procs.has(d.service)) procs.set(d.service, await runToCompletion(plans.get(d.service)!))
    }
  }
  for (const peer of PEERS) {
    const cli = runNodeScript(plans.get(peer)!.argv, plans.get(peer)!.env)
    clis.push(cli)
    procs.set(peer, cli)
  }
  for (const peer of PEERS) {
    urls.set(peer, await listeningUrl(procs.get(peer)!))
    ids.set(peer, (await api(peer, '/api/mesh')).body.self.peerId)
  }
}, 90_000)

afterAll(async () => {
  await reapClis(clis)
  tmp.cleanup()
})

describe('docker-compose.peers.yml', () => {
  it('has three peers on 127.0.0.1:9001–9003, each with its own store and library volumes, one shared read-only swarm key and a healthcheck', () => {
    expect(Object.keys(compose.services).filter(s => s !== 'swarm-key').sort()).toEqual(PEERS)
    const hostPorts = PEERS.map(p => plans.get(p)!.published.get(9000))
    expect(hostPorts).toEqual([9001, 9002, 9003].map(hostPort => ({ hostIp: '127.0.0.1', hostPort })))
    const own = PEERS.flatMap(p => (compose.services[p].volumes ?? []).filter(v => !v.startsWith('swarm-key:')).map(v => v.split(':')[0]))
    expect(new Set(own).size).toBe(PEERS.length * 2)
    for (const p of PEERS) {
      const s = compose.services[p]
      expect(s.volumes).toContain('swarm-key:/keys:ro')
      expect(s.healthcheck?.test).toEqual(['CMD', 'node', '/app/bin/healthcheck.js'])
      expect(plans.get(p)!.env.META_CORE_SWARM_KEY).toBe(path.join(volumeDir('swarm-key'), 'swarm.key'))
    }
    // The swarm key is made by keygen in the volume, never a file of the repository.
    expect(compose.services['swarm-key'].command?.[0]).toBe('keygen')
    expect(fs.readFileSync(path.join(volumeDir('swarm-key'), 'swarm.key'), 'utf8')).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\//)
    // The token comes from the environment (.env), and compose refuses to start without it.
    expect(() => readCompose({})).toThrow(/META_CORE_API_TOKEN/)
  })

  it('keeps the swarm key on the next `up` (the one-shot service runs again and leaves it)', async () => {
    const file = path.join(volumeDir('swarm-key'), 'swarm.key')
    const before = fs.readFileSync(file, 'utf8')
    await runToCompletion(plans.get('swarm-key')!)
    expect(fs.readFileSync(file, 'utf8')).toBe(before)
  })

  it('forms a mesh: each peer connected to the two others (its own address in the shared list skipped), and converges', async () => {
    await waitFor(async () => {
      for (const p of PEERS) {
        const peers = (await api(p, '/api/mesh')).body.peers as Array<{ peerId: string, connected: boolean }>
        if (peers.filter(x => x.connected).length !== 2) return false
      }
      return true
    }, { timeoutMs: 30_000, what: 'every peer connected to the two others', intervalMs: 200 })
    for (const p of PEERS) {
      const peers = (await api(p, '/api/mesh')).body.peers as Array<{ peerId: string }>
      expect(peers.map(x => x.peerId).sort()).toEqual(PEERS.filter(o => o !== p).map(o => ids.get(o)).sort())
      // Dialing its own address is no failure to report.
      expect(procs.get(p)!.stderr()).not.toMatch(new RegExp(`cannot reach peer.*tcp/${plans.get(p)!.p2pPort}"`))
    }

    const a = testCid(7001)
    const b = testCid(7002)
    expect((await api('peer1', `/meta/${a}`, { method: 'PATCH', body: JSON.stringify({ title: 'written on peer1', year: '2001' }) })).status).toBe(200)
    expect((await api('peer3', `/meta/${b}`, { method: 'PATCH', body: JSON.stringify({ title: 'written on peer3' }) })).status).toBe(200)
    for (const p of PEERS) {
      await waitFor(async () => (await fetch(`${urls.get(p) ?? ''}/api/meta/${a}`)).status === 200 &&
        (await fetch(`${urls.get(p) ?? ''}/api/meta/${b}`)).status === 200,
        { timeoutMs: 20_000, what: `both records on ${p}`, intervalMs: 100 })
      expect((await (await fetch(`${urls.get(p) ?? ''}/api/meta/${a}`)).json() as { metadata: unknown }).metadata).toMatchObject({ title: 'written on peer1',
        year: '2001' })
    }
    let digests: string[] = []
    await waitFor(async () => {
      digests = await Promise.all(PEERS.map(async p => (await api<{ digest: string }>(p, '/api/mesh/digest')).body.digest))
      return new Set(digests).size === 1
    }, { timeoutMs: 20_000, what: `equal digests (${digests.join(' ')})`, intervalMs: 100 })
  })

  it('passes its healthcheck on every peer', async () => {
    for (const p of PEERS) {
      const check = runNodeScript(plans.get(p)!.healthcheck!, plans.get(p)!.env)
      clis.push(check)
      expect(await withTimeout(check.exited, 15_000, `the healthcheck of ${p}`), check.stderr()).toBe(0)
    }
  })

  it('meta-core status, run with a peer\'s own environment (docker compose exec peer1 meta-core status), prints every peer with its lag', async () => {
    const env = plans.get('peer1')!.env
    const table = runCli(['status'], env)
    clis.push(table)
    expect(await withTimeout(table.exited, 20_000, 'meta-core status'), table.stderr()).toBe(0)
    const out = table.stdout()
    expect(out).toContain(`node id  ${ids.get('peer1') ?? ''}`)
    expect(out).toMatch(/records\s+2\b/)
    const header = out.split('\n').find(l => l.startsWith('NAME'))
    expect(header).toMatch(/NAME\s+PEER\s+CONNECTION\s+LAG\s+LAST SYNC/)
    for (const other of ['peer2', 'peer3']) {
      // Each row opens with the name the peer announced (the host name: every peer here runs on this machine).
      const row = out.split('\n').find(l => l.startsWith(`${os.hostname().slice(0, 64)}  `) && l.includes(ids.get(other) ?? '?'))
      expect(row, out).toMatch(/\sconnected\s+(caught up|behind [\d.]+ (ms|s)|first sync, [\d.]+ (ms|s))\s/)
    }

    const json = runCli(['status', '--json'], env)
    clis.push(json)
    expect(await withTimeout(json.exited, 20_000, 'meta-core status --json')).toBe(0)
    const report = JSON.parse(json.stdout()) as { health: { status: string }, status: { fileCount: number },
      mesh: { peers: Array<{ peerId: string, lagMs: number, behind: boolean, connected: boolean }> } }
    expect(report.health.status).toBe('ok')
    expect(report.status.fileCount).toBe(2)
    expect(report.mesh.peers.map(p => p.peerId).sort()).toEqual([ids.get('peer2'), ids.get('peer3')].sort())
    for (const p of report.mesh.peers) {
      expect(p.connected).toBe(true)
      expect(Number.isInteger(p.lagMs) && p.lagMs >= 0).toBe(true)
      if (!p.behind) expect(p.lagMs).toBe(0)
    }

    // Without the token the node refuses, and status says how to pass one.
    const { META_CORE_API_TOKEN: _t, ...noToken } = env
    const refused = runCli(['status'], noToken)
    clis.push(refused)
    expect(await withTimeout(refused.exited, 20_000, 'meta-core status without a token')).toBe(1)
    expect(refused.stderr()).toContain('wants its API token: pass --api-token or set META_CORE_API_TOKEN')
  })

  it('meta-core id, with a peer\'s environment, prints the peer id that peer runs with', async () => {
    const plan = plans.get('peer2')!
    const id = runCli(['id', '--json'], plan.env)
    clis.push(id)
    expect(await withTimeout(id.exited, 20_000, 'meta-core id'), id.stderr()).toBe(0)
    const j = JSON.parse(id.stdout()) as { peerId: string, created: boolean, addrs: string[] }
    expect(j.peerId).toBe(ids.get('peer2'))
    expect(j.created).toBe(false)
    expect(j.addrs).toEqual([`${plan.env.META_CORE_P2P_LISTEN}/p2p/${j.peerId}`])
  })

  it('shows per-peer mesh figures on /metrics, and they move with the work', async () => {
    const before = await scrape(urls.get('peer2') ?? '', TOKEN)
    const from1 = { peer: ids.get('peer1') ?? '' }
    const cid = testCid(7003)
    expect((await api('peer1', `/meta/${cid}`, { method: 'PATCH', body: JSON.stringify({ title: 'for the metrics' }) })).status).toBe(200)
    await waitFor(async () => (await fetch(`${urls.get('peer2') ?? ''}/api/meta/${cid}`)).status === 200, { timeoutMs: 20_000, what: 'the record on peer2' })
    const after = await scrape(urls.get('peer2') ?? '', TOKEN)
    // The write reached peer2 as a gossip frame signed by peer1 (or, if that frame was lost, by a pull from it).
    const moved = (after.value('meta_core_mesh_frames_in_total', from1) - before.value('meta_core_mesh_frames_in_total', from1)) +
      (after.value('meta_core_mesh_pages_in_total', from1) - before.value('meta_core_mesh_pages_in_total', from1))
    expect(moved).toBeGreaterThan(0)
    const p1 = await scrape(urls.get('peer1') ?? '', TOKEN)
    expect(p1.value('meta_core_mesh_frames_out_total')).toBeGreaterThan(0)
    for (const other of ['peer1', 'peer3']) {
      const peer = { peer: ids.get(other) ?? '' }
      expect(after.value('meta_core_mesh_peer_connected', peer)).toBe(1)
      expect(after.labels('meta_core_mesh_peer_lag_seconds')).toContainEqual(peer)
      expect(after.value('meta_core_mesh_frames_rejected_total', peer)).toBe(0)
    }
    expect(after.value('meta_core_records')).toBe(3)
  })

  it('stops every peer on SIGTERM with exit 0 (docker compose down)', async () => {
    for (const p of PEERS) procs.get(p)!.child.kill('SIGTERM')
    for (const p of PEERS) expect(await withTimeout(procs.get(p)!.exited, 15_000, `${p} to exit`), procs.get(p)!.stderr().slice(-1000)).toBe(0)
  })
})
