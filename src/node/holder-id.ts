/**
 * The watcher marks each record whose content this node holds with the
 * member `holders/<id>`, where id is this node's origin: `node-<hex>` for a
 * standalone store, its libp2p peer id in a mesh. The store records the id
 * its holder members are under (records' store-identity.ts). At start, before the
 * watcher and the mesh run, that id is compared with this node's:
 *
 * - the same: nothing to do.
 * - one this node owned: the store's own standalone id (a standalone store
 *   joining a mesh) or the peer id of this node's identity key file (a node
 *   leaving its mesh). Its members must follow the id, or the deletion rule
 *   would see holders that no longer exist and this node's own copies would
 *   be forgotten: every `holders/<old>` member becomes `holders/<new>`, the
 *   new member written first, then the old one deleted (ordinary replicated
 *   writes: peers learn of the move like of any other). A crash half-way is
 *   finished at the next start.
 * - any other id: the store was written by another node (a copy of its
 *   store, the way a machine is seeded). That node's holder members are its
 *   own, live on its disk: they are never moved or released here, so this
 *   node can never remove a record the other node holds. The node-local
 *   rows of the copy (duplicate paths and locations, which name the other
 *   node's disk) are dropped; the watcher's scan then adds this node's own
 *   members for the files on its own disk. The other id is kept beside
 *   it (records' store identity).
 *
 * A store from before location rows existed has them filled in once from
 * the records this node holds (records' backfillLocations).
 */
import type { Logger } from '../common/index.js'
import type { NodeStore } from '../records/index.js'

/** Records moved per group commit: every write of a chunk shares one transaction. */
const CHUNK = 500

interface AdoptOptions {
  /**
   * The peer id of this node's identity key file, when there is one: asked
   * only when the store's id is neither this node's current id nor the
   * store's own standalone id (reading the key loads the crypto stack).
   */
  keyPeerId?: () => Promise<string | undefined>
}

/** What the start found: the records whose holder members moved, or the other node a copied store came from. */
interface AdoptResult { moved: number, copiedFrom?: string }

/** Moves this node's holder members to its current id, or recognises a store copied from another node. */
export async function adoptHolderId (store: NodeStore, log: Logger, opts: AdoptOptions = {}): Promise<number> {
  return (await checkStoreIdentity(store, log, opts)).moved
}

export async function checkStoreIdentity (store: NodeStore, log: Logger, opts: AdoptOptions = {}): Promise<AdoptResult> {
  const { records } = store
  const current = records.nodeId
  const { holderId: prev, standaloneId } = records.storeIdentity()
  if (prev === current) {
    await records.backfillLocations(current)
    return { moved: 0 }
  }
  if (prev !== undefined && prev !== standaloneId && prev !== await opts.keyPeerId?.()) {
    log.warn('this store was written by another node (a copy of its store): its holder members stay its own, and the copy\'s local paths are dropped', { storeNodeId: prev, nodeId: current })
    await records.forgetLocalPaths()
    // The copy's location rows went above: none are filled in from the other node's replicated paths.
    await records.recordStoreIdentity(current, prev)
    return { moved: 0, copiedFrom: prev }
  }
  let moved = 0
  if (prev !== undefined) {
    const from = `holders/${prev}`
    const to = `holders/${current}`
    const tuples = records.fileTuplesWithField(from)
    if (tuples.length > 0) log.info('node id changed: moving this node\'s holder members', { from: prev, to: current, records: tuples.length })
    for (let i = 0; i < tuples.length; i += CHUNK) {
      await Promise.all(tuples.slice(i, i + CHUNK).map(async ({ rid }) => {
        await records.mergeFlat(rid, { [to]: 'true' })
        await records.deleteProperty(rid, from)
      }))
      moved += Math.min(CHUNK, tuples.length - i)
    }
  }
  await records.recordStoreIdentity(current)
  await records.backfillLocations(current)
  return { moved }
}
