/**
 * Range-based set reconciliation between two stores of N roots, in one
 * process (every message encoded and decoded as on the wire, the responder
 * served by the core's serving functions): equal stores, then 1 % of the
 * roots changed (half on each side), then a fresh store against a full one.
 * Prints JSON: time, requests and bytes each way, keys moved.
 *   npx tsx bench/reconcile.ts [roots=169000] [fields=4]
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { RecordReplica } from '../src/mesh/index.js'
import { decodeMessage, encodeMessage, type Message, type RequestMessage } from '../src/mesh/messages.js'
import { reconcile } from '../src/mesh/protocol/reconcile.js'
import { serveRecon, serveRoots } from '../src/mesh/protocol/serve.js'
import { newRecordId, openNodeStore, type NodeStore, type RemoteEntry } from '../src/records/index.js'

const N = Number(process.argv[2] ?? 169_000)
const FIELDS = Number(process.argv[3] ?? 4)
const dirs: string[] = []

function open (id: string): { s: NodeStore, r: RecordReplica } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-rc-'))
  dirs.push(dir)
  const s = openNodeStore({ path: path.join(dir, 's.db'), nodeId: id, backgroundCheckpoint: false })
  return { s, r: new RecordReplica(s.records) }
}

async function run (a: { r: RecordReplica }, b: { r: RecordReplica }): Promise<Record<string, number>> {
  const w = { requests: 0, bytesOut: 0, bytesIn: 0 }
  const t0 = performance.now()
  const o = await reconcile(a.r, {
    alive: () => true,
    apply: async (entries) => { await a.r.apply(entries) },
    ask: async (m: RequestMessage): Promise<Message> => {
      const req = encodeMessage(m)
      w.requests++
      w.bytesOut += req.length
      const got = decodeMessage(req)
      let reply: Uint8Array
      if (got.t === 'recon') reply = serveRecon(b.r, got, 0)
      else if (got.t === 'roots') reply = serveRoots(b.r, got, 0)
      else if (got.t === 'give') { await b.r.apply(got.entries); reply = encodeMessage({ t: 'taken',
        applied: got.entries.length }) } else throw new Error(got.t)
      w.bytesIn += reply.length
      return decodeMessage(reply)
    }
  })
  return { ms: Math.round(performance.now() - t0), ...w, roots: o?.roots ?? -1, keysIn: o?.keysIn ?? -1, keysOut: o?.keysOut ?? -1,
    equalDigests: a.r.digest().digest === b.r.digest().digest ? 1 : 0 }
}

const a = open('nodeA')
const b = open('nodeB')
const rids: string[] = []
const hlc = a.s.records.hlc.now()
let page: RemoteEntry[] = []
const t0 = performance.now()
for (let i = 0; i < N; i++) {
  const rid = newRecordId()
  rids.push(rid)
  for (let f = 0; f < FIELDS; f++) page.push({ key: `file:${rid}/f${f}`, value: `value ${i} ${f}`, hlc, origin: 'peerZ' })
  if (page.length >= 40_000 || i === N - 1) {
    await a.s.records.applyBatch(page, { rootsPerTransaction: Infinity, entriesPerTransaction: Infinity })
    await b.s.records.applyBatch(page, { rootsPerTransaction: Infinity, entriesPerTransaction: Infinity })
    page = []
  }
}
const fillMs = Math.round(performance.now() - t0)
const equal = await run(a, b)
const changed = Math.round(N / 100)
for (let i = 0; i < changed; i++) {
  const side = i % 2 === 0 ? a : b
  await side.s.records.applyRemote([{ key: `file:${rids[(i * 7919) % N]}/f0`, value: `changed ${i}`, hlc: side.s.records.hlc.now(),
    origin: side === a ? 'nodeA' : 'nodeB' }])
}
const onePercent = await run(a, b)
const c = open('nodeC')
const fresh = await run(c, a)
console.log(JSON.stringify({ roots: N, fields: FIELDS, fillMs, equal, onePercent: { changedRoots: changed, ...onePercent }, freshFromFull: fresh }, null, 1))
for (const x of [a, b, c]) x.s.close()
for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
