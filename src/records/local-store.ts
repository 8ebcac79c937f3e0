/**
 * Node-local rows for the layers above (the watcher's file state, the
 * mesh's bookkeeping), in the record layer's group commit. The store's and
 * the record layer's own namespaces are refused, so a layer above can never
 * write a record, a version, an index entry or a change-log row by hand.
 */
import { InvalidInputError } from '../common/index.js'
import { prefixEnd, type KvStore, type Tx } from '../kv/index.js'
import { META_EVENTS } from './change-log.js'
import { DUP, membersOf } from './layout.js'
import { readLocation } from './local-location.js'
import type { RecordReader } from './reads.js'
import type { LocalStore, LocalTx } from './surface.js'

/** Namespaces a local row may not use: the records, their derived state, the store's own bookkeeping and streams. */
export const RESERVED_PREFIXES = ['file:', 'ver:', 'cid:', 'idx:', 'dup:', 'loc:', 'meta-core:', 'ev:', 'evhwm:', 'evlow:', 'fts']

function checkLocalKey (key: string): void {
  if (typeof key !== 'string' || key.length === 0 || RESERVED_PREFIXES.some(p => key.startsWith(p))) {
    throw new InvalidInputError(`${JSON.stringify(String(key).slice(0, 40))} is not a node-local key: the store owns that namespace`)
  }
}

export function localStore (kv: KvStore, reads: RecordReader): LocalStore {
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
