/**
 * The client load: operations arrive as a Poisson process at `opsPerSec`
 * (Maelstrom's clients issue operations at a fixed mean rate), each at a
 * random node that is up. A write either creates a record (a new CID with a
 * title and a size) or updates a known one (a new title and rating); every
 * write also adds one unique member `log/<write id>`, the key that marks the
 * write readable on a node. A read fetches a random known record's fields on
 * a random node: it costs no network message, it only counts as an operation.
 */
import { apiFields, syntheticRecord } from '../bench/lib/synthetic.js'
import { encodeCidV1, CODEC_RAW, MH_SHA2_256 } from '../src/cid/index.js'
import type { Prng } from '../src/mesh/testing/index.js'

export interface WorkloadSpec {
  opsPerSec: number
  /** Fraction of operations that are writes (Maelstrom's broadcast: half). */
  writeFraction: number
  /** Fraction of writes that create a record (the rest update a random known one). */
  newRecordFraction: number
  /** Length of the title written (characters). */
  valueBytes: number
  /** What a new record holds: a title and a size, or a library record's ~40 fields. */
  shape: RecordShape
}

export type RecordShape = 'small' | 'library'

/** Index offset of the load's new library-shaped records, so they never collide with preloaded ones. */
const LOAD_RECORD_OFFSET = 100_000_000

/**
 * Record `i` of a shape: its CID and fields. `library`: the benches'
 * synthetic library record (bench/lib/synthetic.ts) without the location
 * fields only a node's watcher writes; `small`: a title and a size.
 */
export function shapedRecord (shape: RecordShape, i: number, rng: Prng, titleBytes: number): { cid: string, fields: Record<string, string> } {
  if (shape === 'library') {
    const r = syntheticRecord(i)
    return { cid: r.cid, fields: apiFields(r) }
  }
  return { cid: randomCid(rng), fields: { title: title(rng, titleBytes), sizeByte: String(1_000_000 + rng.int(4_000_000_000)) } }
}

export type Op =
  | { kind: 'write', id: number, at: number, addr: string | undefined, fields: Record<string, string>, newCid?: string }
  | { kind: 'read', at: number }

const WORDS = ['amber', 'basalt', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'harbor', 'island', 'juniper', 'kestrel', 'lumen', 'meadow', 'nectar', 'onyx',
  'prairie']

/** A raw-codec sha2-256 CID of 32 seeded random bytes: a valid address nobody has seen. */
export function randomCid (rng: Prng): string {
  return encodeCidV1(CODEC_RAW, MH_SHA2_256, rng.bytes(32))
}

function title (rng: Prng, len: number): string {
  let s = ''
  while (s.length < len) s += (s === '' ? '' : ' ') + rng.pick(WORDS)
  return s.slice(0, len)
}

/** Op times in [0, durationMs), ascending. */
export function arrivals (rng: Prng, opsPerSec: number, durationMs: number): number[] {
  const out: number[] = []
  if (opsPerSec <= 0) return out
  const mean = 1000 / opsPerSec
  for (let t = rng.exponential(mean); t < durationMs; t += rng.exponential(mean)) out.push(t)
  return out
}

/** Builds the next operation; `known` are the CIDs of records created so far. */
export function makeOp (rng: Prng, spec: WorkloadSpec, at: number, nextWriteId: () => number, known: readonly string[]): Op {
  if (!rng.chance(spec.writeFraction)) return { kind: 'read', at }
  const id = nextWriteId()
  const fields: Record<string, string> = { title: title(rng, spec.valueBytes), [`log/${id}`]: 'true' }
  if (known.length === 0 || rng.chance(spec.newRecordFraction)) {
    if (spec.shape === 'library') {
      const r = shapedRecord('library', LOAD_RECORD_OFFSET + id, rng, spec.valueBytes)
      return { kind: 'write', id, at, addr: undefined, fields: { ...r.fields, ...fields }, newCid: r.cid }
    }
    fields.sizeByte = String(1_000_000 + rng.int(4_000_000_000))
    return { kind: 'write', id, at, addr: undefined, fields, newCid: randomCid(rng) }
  }
  fields.rating = String(1 + rng.int(10))
  return { kind: 'write', id, at, addr: rng.pick(known), fields }
}
