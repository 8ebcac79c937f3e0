/**
 * bench:join's digest figures: `GET /api/mesh/digest` on a node holding A's
 * records (a copy of A's store, the node in a child process, no peers),
 * beside `GET /health` on the same node as the baseline (what any request
 * costs there), asked one at a time by this process over HTTP on 127.0.0.1;
 * then the node's largest event-loop stall (perf_hooks
 * monitorEventLoopDelay in the node's process, a 5 ms timer: a stall is how
 * late it fired, the 5 ms taken off) while it
 * takes new 40-field records at a steady rate, once with `/health` asked
 * every 10 ms (the baseline: the write load alone) and once with the digest
 * asked every 10 ms.
 */
import { percentile } from './report.js'
import type { NodeProc } from './join-proc.js'

export interface DigestOptions { requests: number, loadSeconds: number, writeRate: number, firstRecord: number }

const r2 = (x: number): number => Math.round(x * 100) / 100

interface Latency { requests: number, p50Ms: number, p99Ms: number, maxMs: number }

function summary (lat: number[]): Latency {
  return { requests: lat.length, p50Ms: r2(percentile(lat, 50)), p99Ms: r2(percentile(lat, 99)), maxMs: r2(Math.max(...lat)) }
}

async function once (url: string): Promise<number> {
  const t = performance.now()
  const r = await fetch(url)
  await r.arrayBuffer()
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`)
  return performance.now() - t
}

/** `count` requests to each path, alternating, one at a time. */
async function alternate (base: string, paths: string[], count: number): Promise<number[][]> {
  const out = paths.map(() => [] as number[])
  for (let i = 0; i < count; i++) {
    for (let j = 0; j < paths.length; j++) out[j].push(await once(base + paths[j]))
  }
  return out
}

/** Requests to `path` every `everyMs` for `seconds` while the node writes; the node's event-loop figures over that window. */
async function underLoad (node: NodeProc, path: string, o: DigestOptions, first: number): Promise<{ latency: Latency,
  loop: { maxMs: number, p99Ms: number, meanMs: number }, writes: unknown }> {
  await node.call('loopStart', { resolutionMs: 5 })
  await node.call('writer', { rate: o.writeRate, first })
  const lat: number[] = []
  const end = performance.now() + o.loadSeconds * 1000
  while (performance.now() < end) {
    const t = performance.now()
    lat.push(await once(node.ready.url + path))
    const wait = 10 - (performance.now() - t)
    if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
  }
  const writes = await node.call<Record<string, unknown>>('writerStop')
  const loop = await node.call<{ maxMs: number, p99Ms: number, meanMs: number }>('loopStop')
  delete writes.issuedAt
  return { latency: summary(lat), loop: { maxMs: r2(loop.maxMs), p99Ms: r2(loop.p99Ms), meanMs: r2(loop.meanMs) }, writes }
}

export async function digestFigures (node: NodeProc, o: DigestOptions): Promise<Record<string, unknown>> {
  const st = await node.status()
  await alternate(node.ready.url, ['/health', '/api/mesh/digest'], 50)
  const [health, digest] = (await alternate(node.ready.url, ['/health', '/api/mesh/digest'], o.requests)).map(summary)
  const loadBaseline = await underLoad(node, '/health', o, o.firstRecord)
  const load = await underLoad(node, '/api/mesh/digest', o, o.firstRecord + 1_000_000)
  return {
    records: st.records,
    keys: st.keys,
    idle: { digest, health },
    underWrites: { writeRate: o.writeRate, seconds: o.loadSeconds, digest: load, healthBaseline: loadBaseline },
    target: {
      p99Ms: 20,
      stallMs: 50,
      p99Met: digest.p99Ms <= 20,
      stallMet: load.loop.maxMs <= 50
    }
  }
}
