/**
 * Between homes through a relay, beside the same inside one home, in one
 * run: the network of test/e2e/homes-netns.test.ts (Linux, as root; a
 * public namespace with a relay member that announces its address, two
 * homes behind masquerading routers, two members each; every node its own
 * `node bin/meta-core.js` process, its API reached through a forwarder on a
 * unix socket). The relay's byte limits are lifted to 1 GiB/s, so what is
 * measured is the relay, not its bounds (its defaults cap a member at
 * 64 MiB/s).
 *
 * - write to visible: RELAY_BENCH_WRITES (default 60) writes on a1, each
 *   timed until b1 (the other home: through the relay) and a2 (the same
 *   home: its LAN) read it; p50, p90, p99, max;
 * - file bytes: a RELAY_BENCH_MIB (default 64) MiB file in b1's library,
 *   read whole by `GET /file/<cid>` from a1 (streamed from b1 through the
 *   relay) and from b2 (from b1 across their LAN), RELAY_BENCH_ROUNDS
 *   (default 3) alternating rounds; the median, and the relay's and the
 *   holder's CPU per MB.
 *
 * Goals (issue 53): relayed p99 ≤ 1 s; bytes through the relay ≥ 50 MB/s.
 * BENCH_NO_DOC=1 leaves docs/benchmarks.md alone.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { waitFor } from '../src/common/index.js'
import { newSwarmKeyText } from '../src/mesh/libp2p/swarm-key.js'
import { HomesNet, netnsProblem, sockJson, sockRequest, WAN, type Host } from '../test/helpers/netns.js'
import { listeningUrl } from '../test/helpers/node-cli.js'
import { testCid } from '../test/helpers/record-ops.js'
import { processCpuMs } from './lib/proc-cpu.js'
import { machineLine, percentile, report } from './lib/report.js'

const WRITES = Number(process.env.RELAY_BENCH_WRITES ?? 60)
const MIB = Number(process.env.RELAY_BENCH_MIB ?? 64)
const ROUNDS = Number(process.env.RELAY_BENCH_ROUNDS ?? 3)
const BIN = path.resolve(import.meta.dirname, '../bin/meta-core.js')
const LIFTED = String(1024 * 1024 * 1024)

const log = (msg: string): void => { process.stderr.write(`bench:relay: ${msg}\n`) }
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const r2 = (x: number): number => Math.round(x * 100) / 100


/** The machine's CPU times so far (/proc/stat's first line: user, nice, system, idle, …), to tell how busy it was meanwhile. */
function machineTicks (): number[] {
  return fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
}

/** The share of the machine's CPU time that was idle between two readings, in %. */
function idleShare (a: number[], b: number[]): number {
  const d = b.map((x, i) => x - a[i])
  return Math.round(100 * d[3] / d.reduce((x, y) => x + y, 0))
}

function stats (xs: number[]): { p50: number, p90: number, p99: number, max: number } {
  return { p50: r2(percentile(xs, 50)), p90: r2(percentile(xs, 90)), p99: r2(percentile(xs, 99)), max: r2(Math.max(...xs)) }
}

async function main (): Promise<void> {
  const problem = netnsProblem()
  if (problem !== undefined) {
    log(`cannot run: ${problem}`)
    process.exit(1)
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-bench-relay-'))
  const net = new HomesNet(tmp)
  try {
    net.build()
    const key = path.join(tmp, 'swarm.key')
    fs.writeFileSync(key, newSwarmKeyText(), { mode: 0o600 })
    const socks = new Map<Host, string>()
    const pids = new Map<Host, number>()
    const start = async (host: Host, extra: string[]): Promise<void> => {
      const cli = net.run(host, [BIN, '--db-path', path.join(tmp, host, 'db', 'meta-core.db'), '--files-path', path.join(tmp, host, 'files'),
        '--http-port', '9000', '--p2p-listen', '/ip4/0.0.0.0/tcp/4001', '--enable-file-watcher=false', '--swarm-key', key, '--node-name', host, '--log-level',
          'warn', ...extra])
      await listeningUrl(cli)
      socks.set(host, await net.forward(host, 9000))
      pids.set(host, cli.child.pid!)
    }
    await start('relay', ['--announce', `/ip4/${WAN}.1/tcp/4001`, '--relay-bytes-per-second', LIFTED, '--relay-peer-bytes-per-second', LIFTED])
    const relayId = (await sockJson(socks.get('relay')!, 'GET', '/api/mesh')).body.self.peerId as string
    const relayAddr = `/ip4/${WAN}.1/tcp/4001/p2p/${relayId}`
    await Promise.all((['a1', 'a2', 'b1', 'b2'] as Host[]).map(async h => { await start(h, ['--bootstrap', relayAddr]) }))
    const mesh = async (h: Host): Promise<any> => (await sockJson(socks.get(h)!, 'GET', '/api/mesh')).body
    const ids = new Map<Host, string>()
    for (const h of ['a1', 'a2', 'b1', 'b2'] as Host[]) ids.set(h, (await mesh(h)).self.peerId)
    const route = async (x: Host, y: Host): Promise<string | undefined> => (await mesh(x)).peers.find((p: any) => p.peerId === ids.get(y) && p.connected)?.route
    await waitFor(async () => await route('a1', 'b1') === 'relayed' && await route('b2', 'b1') === 'direct' && await route('a1', 'a2') === 'direct',
      { timeoutMs: 60_000, intervalMs: 250, what: 'a1 to reach b1 through the relay, and each home inside' })
    log('mesh formed: a1 and b1 through the relay, each home across its LAN')

    const has = async (h: Host, cid: string): Promise<boolean> => (await sockRequest(socks.get(h)!, 'GET', `/api/meta/${cid}`)).status === 200
    const seen = async (h: Host, cid: string, t0: number): Promise<number> => {
      for (;;) {
        if (await has(h, cid)) return performance.now() - t0
        if (performance.now() - t0 > 30_000) throw new Error(`write not on ${h} within 30 s`)
        await new Promise(resolve => setTimeout(resolve, 2))
      }
    }
    const relayed: number[] = []
    const local: number[] = []
    for (let i = 0; i <= WRITES; i++) {
      const cid = testCid(10_000 + i)
      const t0 = performance.now()
      const w = await sockJson(socks.get('a1')!, 'PATCH', `/meta/${cid}`, { title: `write ${i}` })
      if (w.status !== 200) throw new Error(`write ${i}: ${w.status}`)
      const [r, l] = await Promise.all([seen('b1', cid, t0), seen('a2', cid, t0)])
      // The first is a warm-up (gossip meshes graft within a heartbeat of connecting).
      if (i > 0) { relayed.push(r); local.push(l) }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    log(`write to visible: relayed p99 ${r2(percentile(relayed, 99))} ms, same home p99 ${r2(percentile(local, 99))} ms`)

    const rel = 'plugin/film.mkv'
    const file = path.join(tmp, 'b1', 'files', rel)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const hash = createHash('sha256')
    const fd = fs.openSync(file, 'w')
    for (let i = 0; i < MIB; i++) { const b = randomBytes(1024 * 1024); hash.update(b); fs.writeSync(fd, b) }
    fs.closeSync(fd)
    const sha = hash.digest('hex')
    const reg = await sockJson(socks.get('b1')!, 'POST', '/api/files/register', { path: rel })
    const cid = reg.body.cid as string
    await waitFor(async () => await has('a1', cid) && await has('b2', cid), { timeoutMs: 30_000, what: 'the file\'s record on a1 and b2' })
    const size = MIB * 1024 * 1024
    const get = async (h: Host): Promise<number> => {
      const t0 = performance.now()
      const r = await sockRequest(socks.get(h)!, 'GET', `/file/${cid}`, { timeoutMs: 300_000 })
      const ms = performance.now() - t0
      if (r.status !== 200 || r.body.length !== size || createHash('sha256').update(r.body).digest('hex') !== sha) throw new Error(`${h}: ${r.status}, ${r.body.length} bytes, not the file`)
      return ms
    }
    await get('a1')
    await get('b2')
    const through: number[] = []
    const lan: number[] = []
    const relayCpu: number[] = []
    const holderCpu: number[] = []
    const idle: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const c0 = { relay: processCpuMs(pids.get('relay')!), holder: processCpuMs(pids.get('b1')!) }
      const m0 = machineTicks()
      const ms = await get('a1')
      idle.push(idleShare(m0, machineTicks()))
      through.push(r2((size / 1e6) / (ms / 1000)))
      relayCpu.push(r2((processCpuMs(pids.get('relay')!) - c0.relay) / (size / 1e6)))
      holderCpu.push(r2((processCpuMs(pids.get('b1')!) - c0.holder) / (size / 1e6)))
      lan.push(r2((size / 1e6) / ((await get('b2')) / 1000)))
      log(`round ${round + 1}: through the relay ${through[round]} MB/s (machine ${idle[round]} % idle meanwhile), across the LAN ${lan[round]} MB/s`)
    }
    const relayView = (await mesh('relay')).reach.relay
    const R = stats(relayed)
    const L = stats(local)
    const out = {
      writes: WRITES,
      writeToVisibleMs: { relayed: R, sameHome: L },
      fileMiB: MIB,
      rounds: ROUNDS,
      fileMBps: { throughRelay: median(through), acrossLan: median(lan), roundsThroughRelay: through, roundsAcrossLan: lan },
      cpuMsPerMB: { relay: median(relayCpu), holder: median(holderCpu) },
      machineIdlePercentThroughRelay: idle,
      relay: { bytesRelayed: relayView.bytesRelayed, circuits: relayView.circuits, reservations: relayView.reservations },
      goals: { relayedP99Ms: 1000, throughRelayMBps: 50 }
    }
    const md = [
      '## Relay between homes (`npm run bench:relay`)',
      '',
      `${machineLine()}. The network of \`test/e2e/homes-netns.test.ts\` in network namespaces (Linux, as root): a relay member announcing its address, two homes behind masquerading routers, two members each, every node its own process (\`node bin/meta-core.js\`), the relay's byte limits lifted to 1 GiB/s (its defaults hold a member to 64 MiB/s). ${WRITES} writes on a1, each timed until b1 (the other home, through the relay) and a2 (the same home) read it; then a ${MIB} MiB file only in b1's library read whole from a1 (through the relay) and from b2 (across their LAN), ${ROUNDS} alternating rounds, medians; CPU per MB of the relay's and the holder's processes while a1 reads.`,
      '',
      '| path | write to visible p50 | p90 | p99 | max | file bytes |',
      '|---|---:|---:|---:|---:|---:|',
      `| between homes, through the relay | ${R.p50} ms | ${R.p90} ms | ${R.p99} ms | ${R.max} ms | ${median(through)} MB/s |`,
      `| inside one home | ${L.p50} ms | ${L.p90} ms | ${L.p99} ms | ${L.max} ms | ${median(lan)} MB/s |`,
      '',
      `Relayed p99 **${R.p99} ms** (goal ≤ 1 s: ${R.p99 <= 1000 ? 'met' : 'not met'}); bytes through the relay **${median(through)} MB/s** (goal ≥ 50 MB/s: ${median(through) >= 50 ? 'met' : 'not met'}). The relay spends ${median(relayCpu)} ms of CPU per MB relayed (noise and the private network's cipher, off the holder's connection and onto the reader's: four passes, and yamux), the holder ${median(holderCpu)} ms per MB (its file, and the same four passes as the relay: a relayed connection runs the private network and noise end to end inside each member's own connection to the relay, which runs them too). The machine was ${median(idle)} % idle while a1 read through the relay: ${median(idle) < 10 ? 'the figures are CPU-bound, and other work on the machine took its share' : 'the figures are not CPU-bound'}.`
    ].join('\n')
    report('relay', out, md)
  } finally {
    await net.destroy()
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
