/**
 * Node-local rows (never replicated, never in the change log), in the
 * record layer's group commit: the one door to them. A door is opened for a
 * list of namespaces and refuses every other key, so a layer above can never
 * write a record, a version, an index entry or a change-log row by hand:
 *
 * - `LAYER_NAMESPACES`: the layers above, through `records.local` (the
 *   watcher's file state, the mesh's bookkeeping);
 * - `CLIENT_NAMESPACES`: what clients write as plain rows through
 *   `PUT /api/kv/value`, through `records.clientRows` (the other services of
 *   the original's deployment wrote `btmagnet:*`, `searchcov:*` and `nzb:*`
 *   through /api/kv/value: docs/design/data-model.md#shared-and-node-local).
 *
 * Everything else (`file:`, `ver:`, `cid:`, `idx:`, `dup:`, `loc:`,
 * `meta-core:`, the event streams, search's rows) belongs to the store.
 */
import { InvalidInputError } from '../common/index.js'
import { prefixEnd, type KvStore, type Tx } from '../kv/index.js'
import { META_EVENTS } from './change-log.js'
import { DUP, membersOf } from './layout.js'
import { readLocation } from './local-location.js'
import type { RecordReader } from './reads.js'
import type { LocalStore, LocalTx } from './surface.js'

/** The layers' node-local namespaces: the watcher's file state (`watch:f/…`), the mesh's cursors, epoch, log id and member book. */
export const LAYER_NAMESPACES: readonly string[] = ['watch:', 'mesh:']
/** What a client may write as a plain row through `/api/kv` (the original's other services). */
export const CLIENT_NAMESPACES: readonly string[] = ['btmagnet:', 'searchcov:', 'nzb:']

/** Whether `key` lies in one of `namespaces`. */
function inNamespaces (key: string, namespaces: readonly string[]): boolean {
  return typeof key === 'string' && namespaces.some(p => key.startsWith(p))
}

/** A key outside a door's namespaces: the store owns it, or nobody may write it this way. */
export class NotNodeLocalKeyError extends InvalidInputError {
  constructor (key: string, namespaces: readonly string[]) {
    const shown = JSON.stringify(String(key).slice(0, 40))
    super(`${shown} cannot be written here: only keys under ${namespaces.join(', ')} are node-local rows (the rest belong to the store; record fields are written as file:<record id>/<field>)`, { code: 'reserved_key' })
  }
}

export function localStore (kv: KvStore, reads: RecordReader, namespaces: readonly string[]): LocalStore {
  const checkLocalKey = (key: string): void => {
    if (key.length === 0 || !inNamespaces(key, namespaces)) throw new NotNodeLocalKeyError(key, namespaces)
  }
  const wrap = (tx: Tx): LocalTx => ({
    get: (key) => { checkLocalKey(key); return tx.get(key) },
    put: (key, value) => { checkLocalKey(key); tx.put(key, value) },
    delete: (key) => { checkLocalKey(key); tx.delete(key) },
    deletePrefix (prefix) {
      checkLocalKey(prefix)
      for (const k of tx.keys(prefix, prefixEnd(prefix))) tx.delete(k)
    },
    appendEvent (stream, fields) {
      if (stream === META_EVENTS) throw new InvalidInputError('meta:events is the record layer\'s change log')
      return tx.appendEvent(stream, fields)
    },
    clearStream (stream) {
      if (stream === META_EVENTS) throw new InvalidInputError('meta:events is the record layer\'s change log')
      tx.clearStream(stream)
    },
    resolves: (cid) => reads.resolveRoot(cid, tx) !== undefined,
    recordedAt (cid, path) {
      const rid = reads.resolveRoot(cid, tx)
      if (rid === undefined) return false
      for (const m of membersOf(tx, rid)) {
        if (readLocation(tx, m)?.filePath === path || tx.get(`${DUP}${m}/${path}`) !== undefined) return true
      }
      return false
    }
  })
  return {
    get: (key) => { checkLocalKey(key); return kv.get(key) },
    entries: (prefix) => { checkLocalKey(prefix); return kv.iterate(prefix, prefixEnd(prefix)) },
    write: async (fn) => await kv.write(tx => fn(wrap(tx))),
    writeSync: (fn) => kv.writeSync(tx => fn(wrap(tx)))
  }
}
