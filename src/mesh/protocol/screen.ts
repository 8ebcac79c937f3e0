/**
 * What a peer's entries come to before they may be applied: record grammar
 * (the store's rules), clock drift, and our own origin. A malformed entry
 * refuses the whole lot, unless `perEntry` (a pulled page: only that entry
 * is dropped). Entries too far ahead are separated out for the caller to
 * refuse or keep aside; entries claiming our origin with a version we never
 * issued (ahead of both our HLC and our wall clock: the HLC is persisted and
 * never goes back, so every version we issued is at or below it) are
 * dropped and counted.
 */
import { parseHlc } from '../../records/index.js'
import type { PeerKey, RemoteEntry, ReplicaStore } from './runtime.js'

/**
 * What entries come to after screening: applicable, too far ahead of our
 * clock, malformed (`dropped`), or of our own origin with a version we never
 * issued (`forged`). A gossip frame is refused whole (`bad`) for any
 * malformed entry; a page drops only those.
 */
export type Screened = { ok: RemoteEntry[], drifted: RemoteEntry[], dropped: number, forged: number } | { bad: string }

interface ScreenContext {
  perEntry: boolean
  /** Our wall clock (runtime ms). */
  now: number
  maxClockDriftMs: number
  selfId: PeerKey
}

export function screenEntries (store: ReplicaStore, entries: readonly RemoteEntry[], c: ScreenContext): Screened {
  let list = entries
  let dropped = 0
  const why = store.checkEntries(entries)
  if (why !== undefined) {
    if (!c.perEntry) return { bad: why }
    list = entries.filter(e => store.checkEntries([e]) === undefined)
    dropped = entries.length - list.length
  }
  const limit = c.now + c.maxClockDriftMs
  const issued = store.clock()
  const ok: RemoteEntry[] = []
  const drifted: RemoteEntry[] = []
  let forged = 0
  // A record's entries come together and share their clock: each run of one clock value is parsed once.
  let hlc: string | undefined
  let ahead = false
  let future = false
  for (const e of list) {
    if (e.hlc !== hlc) {
      const h = parseHlc(e.hlc)
      if (h === undefined) return { bad: 'bad hlc' }
      hlc = e.hlc
      ahead = h.ms > limit
      future = h.ms > c.now && e.hlc > issued
    }
    if (future && e.origin === c.selfId) forged++
    else if (ahead) drifted.push(e)
    else ok.push(e)
  }
  return { ok, drifted, dropped, forged }
}
