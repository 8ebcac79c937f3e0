/**
 * Whose holder members a store holds, as the record layer keeps it (the
 * node's start compares it with its own id: node/holder-id.ts). The rows
 * are the record layer's own (`meta-core:` keys, layout.ts); the layers
 * above read and record them only through these two functions.
 */
import type { Tx } from '../kv/index.js'
import { COPIED_FROM_KEY, HOLDER_ID_KEY, LOCATIONS_DONE_KEY, NODE_ID_KEY, type Reader } from './layout.js'

export interface StoreIdentity {
  /**
   * The id this store's holder members are under; a store from before that
   * was recorded answers its standalone id (the id it wrote them under), a
   * fresh store undefined.
   */
  holderId: string | undefined
  /** The store's own standalone id (open-store.ts ensureNodeId), if it has one. */
  standaloneId: string | undefined
}

export function readStoreIdentity (r: Pick<Reader, 'get'>): StoreIdentity {
  const standaloneId = r.get(NODE_ID_KEY)
  return { holderId: r.get(HOLDER_ID_KEY) ?? standaloneId, standaloneId }
}

/**
 * Records `holderId` as the id the holder members are under. With
 * `copiedFrom`: the store was written by that node, whose local rows were
 * dropped, so none are filled in from its replicated paths either.
 */
export function writeStoreIdentity (tx: Pick<Tx, 'put'>, holderId: string, copiedFrom?: string): void {
  tx.put(HOLDER_ID_KEY, holderId)
  if (copiedFrom === undefined) return
  tx.put(COPIED_FROM_KEY, copiedFrom)
  tx.put(LOCATIONS_DONE_KEY, '1')
}
