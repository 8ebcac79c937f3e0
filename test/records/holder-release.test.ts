/**
 * The deletion rule (docs/design/mesh-rules.md#the-deletion-rule),
 * over two and three stores through the mesh's apply path (RecordReplica),
 * in every delivery order and with clock offsets between the nodes:
 * - no record is removed while a node holds its bytes: a holder added
 *   concurrently with another node's last release keeps the record, with
 *   the fields a person gave it;
 * - a store copied from another node never takes over or releases that
 *   node's holders;
 * - a field written concurrently with a record delete leaves no record (the
 *   delete wins): no counted record is unreachable by CID;
 * - every node ends with the same records, whatever the order.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { RecordReplica } from '../../src/mesh/replica-store.js'
import { adoptHolderId } from '../../src/node/holder-id.js'
import { formatHlc, openNodeStore, type NodeStore, type RemoteEntry } from '../../src/records/index.js'
import { pick, prng, shuffle } from '../helpers/prng.js'
import { testCid } from '../helpers/record-ops.js'
import { tmpDir } from '../helpers/tmp.js'
import { groupInvariantErrors } from './invariants.js'

const t = tmpDir('mc-holders-')
afterAll(() => { t.cleanup() })
let seq = 0

function open (nodeId: string, offsetMs = 0, file = path.join(t.dir, `s${seq++}.db`)): NodeStore {
  return openNodeStore({ path: file, nodeId, now: () => Date.now() + offsetMs, backgroundCheckpoint: false })
}

const X = testCid(40)
const PATH_A = '/files/movie.mkv'

/** Every change `s` logged after `cursor`, as the pull path pages them. */
function changesAfter (s: NodeStore, cursor: string | undefined): RemoteEntry[] {
  const out: RemoteEntry[] = []
  for (;;) {
    const page = s.records.changesSince(cursor, { limit: 50 })
    out.push(...page.changes)
    if (page.next === undefined || page.next === cursor || page.next === page.head) return out
    cursor = page.next
  }
}

/** The replicated state and what is derived from it: equal on two stores that reached the same records. */
function state (s: NodeStore): Record<string, string> {
  const out: Record<string, string> = {}
  for (const p of ['file:', 'ver:', 'cid:', 'idx:roots/', 'idx:grp/', 'idx:grpm/', 'idx:count/roots']) {
    for (const [k, v] of s.kv.prefix(p)) out[k] = v
  }
  return out
}

/** No counted record unreachable by CID: each listed root has a live cids/ member that resolves to it, and the count agrees. */
function reachabilityErrors (s: NodeStore): string[] {
  const errs = groupInvariantErrors(s)
  const roots = s.records.listRoots()
  if (roots.length !== s.records.countRecords()) errs.push(`count ${s.records.countRecords()} but ${roots.length} listed`)
  for (const rid of roots) {
    const cids = s.records.getDocument(rid)?.cids ?? []
    if (cids.length === 0) errs.push(`${rid} is counted with no cids`)
    for (const c of cids) if (s.records.resolveRoot(c) !== rid) errs.push(`${c} does not reach ${rid}`)
  }
  return errs
}

type Op = 'none' | 'release' | 'hold' | 'edit' | 'delete'

interface Case {
  offsets: [number, number, number]
  /** B held the bytes before the concurrent phase. */
  bHolds: boolean
  /** C started from a file copy of A's store (after the baseline) instead of a pull. */
  cCopied: boolean
  ops: [Op, Op, Op]
}

/** Runs one case: the baseline, each node's concurrent op, then every delivery order on fresh receivers. */
async function runCase (c: Case, rand: () => number): Promise<void> {
  const ids = ['A', 'B', 'C'] as const
  const a = open('A', c.offsets[0])
  await adoptHolderId(a, silentLogger) // as a node's start does: the store records the id its holders are under
  const rid = await a.records.mint(PATH_A, 9, 1, { [`cids/${X}`]: 'true', 'holders/A': 'true', title: 'Given by a person' })
  const b = open('B', c.offsets[1])
  await new RecordReplica(b.records).apply(changesAfter(a, undefined))
  if (c.bHolds) {
    const before = b.records.changeLogHead()
    await b.records.mergeFlat(X, { 'holders/B': 'true' })
    await new RecordReplica(a.records).apply(changesAfter(b, before))
  }
  let cs: NodeStore
  // C's changes start where its copy of A's log ends: what it writes at start (holder moves) is its own.
  let copyHead: string | undefined
  if (c.cCopied) {
    copyHead = a.records.changeLogHead()
    // A copy of A's file, as an operator seeds a new machine; opened under C's own id.
    const file = path.join(t.dir, `s${seq++}.db`)
    a.close()
    fs.copyFileSync(a.kv.path, file)
    cs = open('C', c.offsets[2], file)
    await adoptHolderId(cs, silentLogger)
  } else {
    cs = open('C', c.offsets[2])
    await new RecordReplica(cs.records).apply(changesAfter(a, undefined))
  }
  const aa = c.cCopied ? open('A', c.offsets[0], a.kv.path) : a
  const nodes = [aa, b, cs]
  const baseline = changesAfter(aa, undefined)
  const heads = nodes.map((n, i) => i === 2 && c.cCopied ? copyHead : n.records.changeLogHead())

  // The concurrent phase: each node acts on what it has seen, none sees the others.
  for (let i = 0; i < 3; i++) {
    const n = nodes[i]
    const op = c.ops[i]
    if (op === 'release') await n.records.releaseCopy(X, PATH_A, ids[i])
    else if (op === 'hold') await n.records.mergeFlat(X, { [`holders/${ids[i]}`]: 'true' })
    else if (op === 'edit') await n.records.mergeFlat(X, { rating: '5' })
    else if (op === 'delete') await n.records.deleteRoot(X)
  }
  const batches = nodes.map((n, i) => changesAfter(n, heads[i]))
  for (const n of nodes) n.close()

  // Does some node hold the bytes once all is known? (A holds from the start; B when bHolds; C never, a copy included.)
  const holds = [c.ops[0] !== 'release', c.bHolds ? c.ops[1] !== 'release' : c.ops[1] === 'hold', c.ops[2] === 'hold']
  const deleted = c.ops.includes('delete')
  const edited = c.ops.includes('edit')
  const what = JSON.stringify(c)

  const orders: RemoteEntry[][][] = [
    ...[[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]].map(o => o.map(i => batches[i])),
    // And entry by entry, interleaved at random.
    shuffle(rand, batches.flat()).map(e => [e])
  ]
  let first: Record<string, string> | undefined
  for (const order of orders) {
    const r = open('R')
    const replica = new RecordReplica(r.records)
    await replica.apply(baseline)
    for (const step of order) {
      await replica.apply(step)
      const errs = reachabilityErrors(r)
      expect(errs, what).toEqual([])
      // Never removed while a holder key is live in what this node has merged so far.
      const heldHere = Object.keys(r.records.getFlat(rid) ?? {}).some(f => f.startsWith('holders/')) ||
        Object.keys(Object.fromEntries(r.kv.prefix(`file:${rid}/holders/`))).length > 0
      if (heldHere && !deleted) {
        expect(r.records.resolveRoot(X), what).toBe(rid)
        expect(r.records.getFlat(X)?.title, what).toBe('Given by a person')
      }
    }
    const live = r.records.resolveRoot(X)
    if (deleted) {
      // A record delete wins over a concurrent field write or holder add: no record is left.
      expect(live, what).toBeUndefined()
    } else if (holds.some(h => h)) {
      expect(live, what).toBe(rid)
      const doc = r.records.getFlat(X)!
      expect(doc.title, what).toBe('Given by a person')
      if (edited) expect(doc.rating, what).toBe('5')
      for (let i = 0; i < 3; i++) expect(doc[`holders/${ids[i]}`], `${what} holder ${ids[i]}`).toBe(holds[i] ? 'true' : undefined)
    } else {
      // Every holder released: removed on every node.
      expect(live, what).toBeUndefined()
      expect(r.records.countRecords(), what).toBe(0)
    }
    const s = state(r)
    if (first === undefined) first = s
    else expect(s, what).toEqual(first)
    r.close()
  }
}

describe('holders and record deletes through the apply path', () => {
  it('a holder added on B concurrently with A\'s last release keeps the record, with both clock orders', async () => {
    for (const offsets of [[20, 0, 0], [0, 20, 0], [0, 0, 0]] as Array<[number, number, number]>) {
      await runCase({ offsets, bHolds: false, cCopied: false, ops: ['release', 'hold', 'none'] }, prng(1))
    }
  })

  it('a node started from a copy of A\'s store neither takes over nor releases A\'s holder', async () => {
    await runCase({ offsets: [0, 0, 0], bHolds: false, cCopied: true, ops: ['none', 'none', 'release'] }, prng(2))
    await runCase({ offsets: [0, 0, 20], bHolds: false, cCopied: true, ops: ['none', 'edit', 'release'] }, prng(3))
  })

  it('a delete racing a later field write leaves no counted record, on every node', async () => {
    for (const offsets of [[0, 20, 0], [20, 0, 0]] as Array<[number, number, number]>) {
      await runCase({ offsets, bHolds: false, cCopied: false, ops: ['delete', 'edit', 'none'] }, prng(4))
    }
  })

  it('holds over random ops, clock offsets and every delivery order', async () => {
    const rand = prng(40)
    const OFFSETS = [-25, -5, 0, 5, 25]
    for (let i = 0; i < 24; i++) {
      const c: Case = {
        offsets: [pick(rand, OFFSETS), pick(rand, OFFSETS), pick(rand, OFFSETS)],
        bHolds: rand() < 0.5,
        cCopied: rand() < 0.3,
        ops: [
          pick(rand, ['none', 'release', 'release', 'edit', 'delete'] as Op[]),
          pick(rand, ['none', 'release', 'hold', 'edit'] as Op[]),
          pick(rand, ['none', 'release', 'hold', 'edit'] as Op[])
        ]
      }
      await runCase(c, rand)
    }
  }, 120_000)

  it('takes out, once, the roots an older store counted that are no records', async () => {
    const s = open('A')
    const kept = await s.records.mint(PATH_A, 9, 1, { [`cids/${X}`]: 'true', title: 'kept' })
    // A husk as the old rule left it: a field newer than the record's delete, counted, reachable by no CID.
    const husk = '01M8ME6YDNEBQ9WHRFBFD4HMGQ'
    const rt = formatHlc({ ms: Date.now(), counter: 0 }) + 'A'
    const later = formatHlc({ ms: Date.now() + 20, counter: 0 }) + 'B'
    s.kv.writeSync(tx => {
      tx.put(`file:${husk}/rating`, '5')
      tx.put(`ver:${husk}`, JSON.stringify({ r: rt, g: { [later]: ['rating'] } }))
      tx.put(`idx:roots/${husk}`, '')
      tx.addCounter('idx:count/roots', 1)
    })
    expect(s.records.countRecords()).toBe(2)
    const before = s.records.changeLogHead()
    expect(await s.records.sweepNonRecords()).toBe(1)
    expect(s.records.countRecords()).toBe(1)
    expect(s.records.listRoots()).toEqual([kept])
    expect(reachabilityErrors(s)).toEqual([])
    // Nothing replicated was written, and a second start sweeps nothing.
    expect(s.records.changeLogHead()).toBe(before)
    expect(await s.records.sweepNonRecords()).toBe(0)
    s.close()
  })
})
