import { randomBytes } from 'node:crypto'
import { silentLogger } from '../common/index.js'
import { openKv, prefixEnd, type KvOptions, type KvReader, type KvStore } from '../kv/index.js'
import { sweepMalformedRows } from './malformed-sweep.js'
import { RecordStore, type RecordStoreOptions } from './record-store.js'
import { FILE, NODE_ID_KEY, ROOTS } from './layout.js'

/**
 * A stable id for this node when no mesh identity is configured: generated
 * once and kept in the store, so versions and holder members survive restarts.
 */
export function ensureNodeId (kv: KvStore): string {
  const cur = kv.get(NODE_ID_KEY)
  if (cur !== undefined) return cur
  const id = 'node-' + randomBytes(12).toString('hex')
  kv.writeSync(tx => { tx.put(NODE_ID_KEY, id) })
  return id
}

export interface NodeStoreOptions extends KvOptions, Omit<RecordStoreOptions, 'nodeId'> {
  /** Origin id; defaults to the store's own stable node id. */
  nodeId?: string
}

export interface NodeStore {
  kv: KvStore
  records: RecordStore
  close: () => void
}

/**
 * The record layer's part of the schema gate: a file with no schema version
 * that holds records (or the root index) was written by an older meta-core.
 */
function recordsInUnversionedFile (r: KvReader): string | undefined {
  return r.any(FILE, prefixEnd(FILE)) || r.any(ROOTS, prefixEnd(ROOTS)) ? 'holds records' : undefined
}

/** Opens the kv file and the record layer over it (after the one-time malformed-text sweep, malformed-sweep.ts). */
export function openNodeStore (opts: NodeStoreOptions): NodeStore {
  const kv = openKv({ ...opts, checkUnversioned: recordsInUnversionedFile })
  try {
    sweepMalformedRows(kv, opts.logger ?? silentLogger)
    const nodeId = opts.nodeId ?? ensureNodeId(kv)
    const records = new RecordStore(kv, { ...opts, nodeId })
    return { kv, records, close: () => { kv.close() } }
  } catch (err) {
    kv.close()
    throw err
  }
}
