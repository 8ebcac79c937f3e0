import { createHash } from 'node:crypto'
import { encodeCidV1 } from '../../src/cid/index.js'
import type { NodeStore, RecordDocument, RecordId } from '../../src/records/index.js'
import { pick } from './prng.js'

/** A valid CIDv1 (raw, sha2-256) derived from `n`: the same `n` gives the same CID on every node. */
export function testCid (n: number): string {
  return encodeCidV1(0x55, 0x12, createHash('sha256').update(String(n)).digest())
}

// Holder members too: records whose every holder goes stop being records (records' isRecord), in groups as alone.
export const OP_FIELDS = ['title', 'year', 'genres/Drama', 'genres/Comedy', 'fileinfo/duration', 'tmdbid', 'stream/0', 'holders/n1', 'holders/n2']
export const OP_VALUES = ['a', 'b', 'Ünïcode ✓', '', '2001', 'true']
export const OP_CIDS = Array.from({ length: 6 }, (_, i) => testCid(i))

/**
 * One random record operation on `s`: mint (often with a shared CID, so
 * groups form), merge, delete a field or a cids/ member, replace, DeleteRoot,
 * or a write addressed by a CID. `known` collects minted roots, so other
 * nodes can address them. Address errors (a target deleted meanwhile) are
 * expected and swallowed; anything else throws.
 */
export async function randomRecordOp (s: NodeStore, rand: () => number, known: RecordId[], i: number): Promise<void> {
  const roll = rand()
  const live = s.records.listRoots()
  const target = (): string => (live.length > 0 && rand() < 0.8 ? pick(rand, live) : pick(rand, known.length > 0 ? known : live))
  try {
    if (roll < 0.2 || live.length === 0) {
      const extra: Record<string, string> = { title: pick(rand, OP_VALUES) }
      if (rand() < 0.7) extra[`cids/${pick(rand, OP_CIDS)}`] = 'true'
      known.push(await s.records.mint(`/files/${i}`, i, i, extra))
    } else if (roll < 0.55) {
      const f: Record<string, string> = {}
      for (let j = 0; j < 1 + Math.floor(rand() * 3); j++) f[pick(rand, OP_FIELDS)] = pick(rand, OP_VALUES)
      if (rand() < 0.3) f[`cids/${pick(rand, OP_CIDS)}`] = 'true'
      await s.records.mergeFlat(target(), f)
    } else if (roll < 0.7) {
      await s.records.deleteProperty(target(), rand() < 0.3 ? `cids/${pick(rand, OP_CIDS)}` : pick(rand, OP_FIELDS))
    } else if (roll < 0.8) {
      await s.records.setFlat(target(), { [pick(rand, OP_FIELDS)]: pick(rand, OP_VALUES) })
    } else if (roll < 0.88) {
      await s.records.deleteRoot(target())
    } else {
      await s.records.mergeFlat(pick(rand, OP_CIDS), { [pick(rand, OP_FIELDS)]: pick(rand, OP_VALUES) })
    }
  } catch (err) {
    // Only address errors are expected (a target that was deleted); anything else is a bug.
    if (!(err instanceof Error) || !/neither|not found/.test(err.message)) throw err
  }
}

/** A document without the location fields, which each node shows for its own copy (records' local-location.ts): what every node reads the same. */
export function replicatedDoc (doc: RecordDocument | undefined): RecordDocument | undefined {
  if (doc === undefined) return undefined
  const { filePath: _p, sizeByte: _s, mtimeNano: _m, ...metadata } = doc.metadata
  return { ...doc, metadata }
}
