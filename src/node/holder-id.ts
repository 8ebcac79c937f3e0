/**
 * The watcher marks each record whose content this node holds with the
 * member `holders/<id>`, where id is this node's origin: `node-<hex>` for a
 * standalone store, its libp2p peer id in a mesh. When that id changes (a
 * standalone store joins a mesh, leaves it, or its identity key is
 * replaced), the node's members must follow, or the deletion rule would see
 * holders that no longer exist and this node's own copies would be
 * forgotten. So at start, before the watcher and the mesh run, every
 * `holders/<old>` member becomes `holders/<new>`: the new member is written
 * first, then the old one is deleted (ordinary replicated writes: peers
 * learn of the move like of any other). The id in use is kept in
 * `meta-core:holder-id`; a crash half-way is finished at the next start.
 */
import type { Logger } from '../common/index.js'
import type { NodeStore } from '../records/index.js'

const HOLDER_ID_KEY = 'meta-core:holder-id'
/** The standalone id the store used before `meta-core:holder-id` existed (records/open-store.ts). */
const NODE_ID_KEY = 'meta-core:node-id'
/** Records moved per group commit: every write of a chunk shares one transaction. */
const CHUNK = 500

/** Moves this node's holder members to its current id; returns how many records moved. */
export async function adoptHolderId (store: NodeStore, log: Logger): Promise<number> {
  const { kv, records } = store
  const current = records.nodeId
  const prev = kv.get(HOLDER_ID_KEY) ?? kv.get(NODE_ID_KEY)
  if (prev === current) return 0
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
  await kv.write(tx => { tx.put(HOLDER_ID_KEY, current) })
  return moved
}
