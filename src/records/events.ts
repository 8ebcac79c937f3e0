/**
 * The node's event streams as the API serves them: `meta:events` (the
 * record layer's change log, shown in the original's `{type, key, ts}`
 * shape; root tombstone rows are not shown) and `file:events` (written by
 * the watcher through the local store, shown as stored).
 */
import { entriesOf, prefixEnd, type EventIdParts, type KvStore, type StreamEntry } from '../kv/index.js'
import { META_EVENTS, presentChange } from './change-log.js'
import { FILE } from './layout.js'
import type { EventStreams, ShownEntry } from './surface.js'

/** The watcher's stream of file events (add, change, delete, rename, reset), served by GET /api/events/files. */
export const FILE_EVENTS = 'file:events'

function shown (e: StreamEntry): ShownEntry {
  if (e.stream !== META_EVENTS) return e
  const p = presentChange(e)
  return { stream: e.stream, id: e.id, fields: p === undefined ? null : p.fields }
}

export function eventStreams (kv: KvStore): EventStreams {
  return {
    head: (stream) => kv.streamHead(stream),
    first: (stream) => kv.streamFirst(stream),
    read: (stream, after: EventIdParts | undefined, limit) => kv.readStream(stream, after, limit).map(shown),
    onCommit: (listener, wants) => kv.onCommit(runs => {
      // Entries are listed (ids formatted, shaped) only for the streams wanted.
      const entries = entriesOf(runs, wants)
      if (entries.length > 0 || wants === undefined) listener(entries.map(shown))
    }),
    recordKeys: (after, limit) => kv.keys(after === undefined ? FILE : after + '\u0000', prefixEnd(FILE), limit)
  }
}
