import { randomBytes } from 'node:crypto'
import { openKv, type KvOptions, type KvStore } from '../kv/index.js'
import { RecordStore, type RecordStoreOptions } from './record-store.js'

const NODE_ID_KEY = 'meta-core:node-id'

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

/** Opens the kv file and the record layer over it. */
export function openNodeStore (opts: NodeStoreOptions): NodeStore {
  const kv = openKv(opts)
  try {
    const nodeId = opts.nodeId ?? ensureNodeId(kv)
    const records = new RecordStore(kv, { ...opts, nodeId })
    return { kv, records, close: () => { kv.close() } }
  } catch (err) {
    kv.close()
    throw err
  }
}
