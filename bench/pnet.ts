/**
 * Private network benchmark: our protector (src/mesh/libp2p/private-network.ts)
 * against @libp2p/pnet, which it replaces. Every run is a child process of
 * this one, since @libp2p/pnet's can end in a crash (docs/mesh.md, Trust).
 *
 * 0. The cipher alone: ours against `xsalsa20` 1.2.0 (what @libp2p/pnet
 *    runs), 64 KiB and 1,400-byte updates, 5 alternating rounds, medians.
 * 1. Throughput: two bare libp2p nodes (TCP on 127.0.0.1, noise, yamux),
 *    one stream carrying PNET_BENCH_MIB MiB (64) in 1 MiB writes, as pull
 *    pages are written; PNET_BENCH_ROUNDS (7) rounds alternating no
 *    protector, @libp2p/pnet and ours; medians of the rounds that finished,
 *    against @libp2p/pnet's.
 * 2. Large transfers: the same with PNET_BENCH_LARGE_MIB MiB (256), 3 rounds
 *    of each protector: does the node live through it.
 * 3. Hostile connections: a node with three peers connected and talking
 *    (an echo every 10 ms each), then PNET_BENCH_ATTACK (8000) connections to its
 *    port that send a nonce, wait for the node's, send junk and go, as
 *    anyone who can reach the port can, from rotating 127.0.0.x source
 *    addresses (libp2p accepts 5 connections per second per host): the
 *    count it survived, and how it ended.
 *
 * Env: PNET_BENCH_MIB, PNET_BENCH_ROUNDS, PNET_BENCH_LARGE_MIB, PNET_BENCH_ATTACK,
 * PNET_BENCH_ONLY (cipher|throughput|large|attack), BENCH_NO_DOC=1 to leave docs/benchmarks.md alone.
 */
import '../src/mesh/libp2p/polyfill.js'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { parseSwarmKey } from '../src/mesh/libp2p/swarm-key.js'
import { XSalsa20 } from '../src/mesh/libp2p/xsalsa20.js'
import { echo, protectorFor, sink, startPlainNode, type ProtectorKind } from '../test/helpers/pnet-peers.js'
import { machineLine, report } from './lib/report.js'

const MIB = Number(process.env.PNET_BENCH_MIB ?? 64)
const ROUNDS = Number(process.env.PNET_BENCH_ROUNDS ?? 7)
const LARGE_MIB = Number(process.env.PNET_BENCH_LARGE_MIB ?? 256)
const LARGE_ROUNDS = 3
const ATTACK = Number(process.env.PNET_BENCH_ATTACK ?? 8000)
/** Honest peers connected to the attacked node, each echoing every 10 ms. */
const PEERS = 3
const ONLY = process.env.PNET_BENCH_ONLY
const KEY = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}`)!

const log = (msg: string): void => { process.stderr.write(`bench:pnet: ${msg}\n`) }
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const r2 = (x: number): number => Math.round(x * 100) / 100

// ---------------------------------------------------------------- 0. the cipher alone

const stockXSalsa20 = createRequire(import.meta.url)('xsalsa20') as (nonce: Uint8Array, key: Uint8Array) => { update: (input: Uint8Array) => Uint8Array }

/** MB/s of one instance ciphering `total` bytes in updates of `chunk` (from an odd offset, as network buffers come). */
function cipherMBps (make: () => { update: (input: Uint8Array) => Uint8Array }, chunk: number, total: number): number {
  const buf = randomBytes(chunk + 3).subarray(3)
  const c = make()
  const t = process.hrtime.bigint()
  for (let done = 0; done < total; done += chunk) c.update(buf)
  return total / 1e6 / (Number(process.hrtime.bigint() - t) / 1e9)
}

function cipher (): Array<{ chunk: number, stockMBps: number, oursMBps: number, oursVsStock: number }> {
  const key = randomBytes(32)
  const nonce = randomBytes(24)
  return [[65536, 256e6], [1400, 64e6]].map(([chunk, total]) => {
    const stock: number[] = []
    const ours: number[] = []
    for (let r = 0; r < 5; r++) {
      stock.push(cipherMBps(() => stockXSalsa20(nonce, key), chunk, total))
      ours.push(cipherMBps(() => new XSalsa20(key, nonce), chunk, total))
    }
    const m = { stock: median(stock), ours: median(ours) }
    log(`cipher, ${chunk}-byte updates: xsalsa20 ${m.stock.toFixed(0)} MB/s, ours ${m.ours.toFixed(0)} MB/s`)
    return { chunk, stockMBps: Math.round(m.stock), oursMBps: Math.round(m.ours), oursVsStock: r2(m.ours / m.stock) }
  })
}

// ---------------------------------------------------------------- 1. throughput

type Variant = 'none' | ProtectorKind

async function transferMBps (variant: Variant, mib: number): Promise<number> {
  const protector = variant === 'none' ? undefined : protectorFor(variant, KEY)
  const a = await startPlainNode(protector)
  const b = await startPlainNode(protector)
  try {
    const chunk = randomBytes(1024 * 1024)
    const total = mib * 1024 * 1024
    await sink(a, b, chunk, 1024 * 1024) // connection and warm-up outside the timing
    const t = process.hrtime.bigint()
    await sink(a, b, chunk, total, 600_000)
    return total / 1e6 / (Number(process.hrtime.bigint() - t) / 1e9)
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
}

interface ChildResult { code: number | null, out: string, err: string }

/** Runs this file in a child process with `args` (a crash there is a result, not the end of the benchmark). */
async function child (args: string[]): Promise<ChildResult> {
  const c = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  c.stdout.on('data', (d: Buffer) => { out += d.toString() })
  c.stderr.on('data', (d: Buffer) => { err += d.toString() })
  const code = await new Promise<number | null>(resolve => c.on('exit', resolve))
  return { code, out, err }
}

/** The last error a crashed child printed (the one that ended it). */
const crashLine = (err: string): string => [...err.matchAll(/\b[A-Za-z]*Error: [^\n]*/g)].pop()?.[0] ?? 'no error printed'

interface Rounds {
  mib: number
  mbps: Partial<Record<Variant, number[]>>
  /** Per variant, the error of each round that died. */
  died: Partial<Record<Variant, string[]>>
  median: Partial<Record<Variant, number>>
}

/** `rounds` transfers of `mib` MiB per variant, alternating, each in a fresh process. */
async function transfers (variants: readonly Variant[], mib: number, rounds: number): Promise<Rounds> {
  const out: Rounds = { mib, mbps: {}, died: {}, median: {} }
  for (const v of variants) { out.mbps[v] = []; out.died[v] = [] }
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) {
      const res = await child(['--transfer', v, String(mib)])
      const mbps = /^mbps (\S+)$/m.exec(res.out)?.[1]
      if (res.code === 0 && mbps !== undefined) {
        out.mbps[v]!.push(r2(Number(mbps)))
        log(`${mib} MiB, round ${r + 1}, ${v}: ${Number(mbps).toFixed(1)} MB/s`)
      } else {
        out.died[v]!.push(crashLine(res.err))
        log(`${mib} MiB, round ${r + 1}, ${v}: died (${crashLine(res.err)})`)
      }
    }
  }
  for (const v of variants) if (out.mbps[v]!.length > 0) out.median[v] = median(out.mbps[v]!)
  return out
}

// ---------------------------------------------------------------- 3. hostile connections

/** Child: a node with the given protector, hostile connections to it; prints progress lines. */
async function attackChild (kind: ProtectorKind, count: number): Promise<void> {
  const node = await startPlainNode(protectorFor(kind, KEY))
  const port = Number(node.getMultiaddrs()[0].getComponents().find(c => c.name === 'tcp')?.value)
  // Members of the mesh, connected and talking all along, as a node's peers are.
  const peers = await Promise.all(Array.from({ length: PEERS }, async () => await startPlainNode(protectorFor(kind, KEY))))
  let talking = true
  let reached = 0
  let echoFailures = 0
  const chatter = Promise.all(peers.map(async (peer) => {
    while (talking) {
      try {
        await echo(peer, node, [randomBytes(200)], 5_000)
      } catch (err) {
        // The mesh's own traffic failing is the first sign: say when (the next echo dials again).
        if (echoFailures++ === 0) process.stdout.write(`peer-failed ${reached} ${(err as Error).message}\n`)
      }
      await new Promise(resolve => setTimeout(resolve, 10))
    }
  }))
  /** One connection; true when the node answered the nonce exchange (and so built its ciphers). */
  const one = async (i: number): Promise<boolean> => await new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${2 + (i % 250)}` })
    let got = 0
    const finish = (): void => { s.destroy(); resolve(got >= 24) }
    s.setTimeout(5_000, finish)
    s.on('error', finish)
    s.on('close', finish)
    s.on('connect', () => { s.write(randomBytes(24)) })
    s.on('data', (d: Buffer) => {
      const before = got
      got += d.length
      // The node's nonce is here: it has built its ciphers for this connection. Junk, and go.
      if (before < 24 && got >= 24) { s.end(randomBytes(300)); setTimeout(finish, 20) }
    })
  })
  const t = Date.now()
  // A few at a time: libp2p refuses inbound upgrades beyond 10 pending, and more than 5 connections
  // a second from one host (those are refused before the nonce exchange and not counted).
  for (let i = 0; reached < count && i < 4 * count; i += 8) {
    const ok = await Promise.all(Array.from({ length: 8 }, async (_, k) => await one(i + k)))
    for (const o of ok) {
      if (!o) continue
      reached++
      if (reached % 50 === 0) process.stdout.write(`${reached}\n`)
    }
  }
  talking = false
  await chatter
  process.stdout.write(`${reached}\nechoFailures ${echoFailures}\nsurvived ${Math.round((Date.now() - t) / 100) / 10}\n`)
  await Promise.all([...peers, node].map(async n => { await n.stop() }))
}

interface AttackResult {
  /** The process lived to the end. */
  survived: boolean
  /** Hostile connections the node answered (built ciphers for). */
  connections: number
  seconds: number | null
  /** Echoes with the honest peer that failed, and after how many hostile connections the first did. */
  echoFailures: number | null
  firstEchoFailure: string | null
  ended: string
}

async function attack (kind: ProtectorKind): Promise<AttackResult> {
  const res = await child(['--attack', kind, String(ATTACK)])
  const lines = res.out.trim().split('\n')
  const counts = lines.filter(l => /^\d+$/.test(l)).map(Number)
  const survivedLine = lines.find(l => l.startsWith('survived '))
  const failures = lines.find(l => l.startsWith('echoFailures '))
  const first = lines.find(l => l.startsWith('peer-failed '))
  return {
    survived: survivedLine !== undefined && res.code === 0,
    connections: counts.length > 0 ? counts[counts.length - 1] : 0,
    seconds: survivedLine === undefined ? null : Number(survivedLine.split(' ')[1]),
    echoFailures: failures === undefined ? null : Number(failures.split(' ')[1]),
    firstEchoFailure: first === undefined ? null : `after ${first.split(' ')[1]}: ${first.split(' ').slice(2).join(' ')}`,
    ended: survivedLine !== undefined ? `exit ${res.code}` : `exit ${res.code}: ${crashLine(res.err)}`
  }
}

// ---------------------------------------------------------------- main

const NAMES: Record<Variant, string> = {
  none: 'none (no private network)',
  stock: '@libp2p/pnet 3.0.27 (xsalsa20 1.2.0, WebAssembly)',
  ours: 'ours (src/mesh/libp2p/private-network.ts)'
}

/** A table row per variant: median, each round, the deaths, and the ratio to @libp2p/pnet's median. */
function transferRows (t: Rounds, variants: readonly Variant[]): string[] {
  const rows = ['| protector | MB/s (median) | rounds (MB/s) | died | against @libp2p/pnet |', '|---|---:|---|---|---:|']
  for (const v of variants) {
    const died = t.died[v] ?? []
    const m = t.median[v]
    const ratio = m !== undefined && t.median.stock !== undefined ? `${r2(m / t.median.stock)}×` : '–'
    rows.push(`| ${NAMES[v]} | ${m ?? '–'} | ${(t.mbps[v] ?? []).join(', ') || '–'} | ${died.length > 0 ? `**${died.length} of ${died.length + (t.mbps[v] ?? []).length}** (\`${died[0]}\`)` : 'none'} | ${v === 'ours' ? `**${ratio}**` : ratio} |`)
  }
  return rows
}

if (process.argv[2] === '--attack') {
  await attackChild(process.argv[3] as ProtectorKind, Number(process.argv[4]))
} else if (process.argv[2] === '--transfer') {
  process.stdout.write(`mbps ${await transferMBps(process.argv[3] as Variant, Number(process.argv[4]))}\n`)
} else {
  const all = ['none', 'stock', 'ours'] as const
  const ciph = ONLY === undefined || ONLY === 'cipher' ? cipher() : undefined
  const tp = ONLY === undefined || ONLY === 'throughput' ? await transfers(all, MIB, ROUNDS) : undefined
  const large = ONLY === undefined || ONLY === 'large' ? await transfers(['stock', 'ours'], LARGE_MIB, LARGE_ROUNDS) : undefined
  const hostile = ONLY === undefined || ONLY === 'attack' ? { stock: await attack('stock'), ours: await attack('ours') } : undefined
  if (hostile !== undefined) log(`hostile connections: ${JSON.stringify(hostile)}`)
  const lines = ['## Private network (`npm run bench:pnet`)', '', machineLine() + '.', '']
  if (ciph !== undefined) {
    lines.push(
      '**0. The cipher alone**: one instance ciphering a stream in updates of a given size, 5 alternating rounds, medians:',
      '',
      '| update | xsalsa20 1.2.0 (WebAssembly, what @libp2p/pnet runs) | ours (src/mesh/libp2p/xsalsa20.ts) | ours / xsalsa20 |',
      '|---:|---:|---:|---:|',
      ...ciph.map(c => `| ${c.chunk} B | ${c.stockMBps} MB/s | ${c.oursMBps} MB/s | ${c.oursVsStock}× |`),
      ''
    )
  }
  if (tp !== undefined) {
    lines.push(
      `**1. Throughput** of one stream carrying ${MIB} MiB in 1 MiB writes (as pull pages are written) between two nodes (TCP on 127.0.0.1, noise, yamux), each round in a fresh process, ${ROUNDS} rounds per protector, alternating; medians of the rounds that finished:`,
      '', ...transferRows(tp, all), ''
    )
  }
  if (large !== undefined) {
    lines.push(`**2. Large transfers**: the same with ${LARGE_MIB} MiB, ${LARGE_ROUNDS} rounds each:`, '', ...transferRows(large, ['stock', 'ours']), '')
  }
  if (hostile !== undefined) {
    const row = (name: string, h: AttackResult): string =>
      `| ${name} | ${h.survived ? `lived through all ${h.connections}` : `died after ${h.connections}–${h.connections + 50}`} | ${h.seconds ?? '–'} | ${h.firstEchoFailure ?? 'none'}${h.echoFailures !== null && h.echoFailures > 0 ? ` (${h.echoFailures} failed)` : ''} | ${h.ended} |`
    lines.push(
      `**3. Hostile connections**: a node with ${PEERS} peers connected and talking (an echo every 10 ms each), then ${ATTACK} TCP connections to its port, each sending a nonce, waiting for the node's, then junk (no swarm key needed), 8 at a time from rotating 127.0.0.x addresses:`,
      '',
      '| protector | hostile connections | seconds | first failed echo with a peer | how it ended |',
      '|---|---|---:|---|---|',
      row('@libp2p/pnet 3.0.27', hostile.stock),
      row('ours', hostile.ours)
    )
  }
  report('pnet', { cipher: ciph, throughput: tp, large, hostile }, lines.join('\n'))
}
