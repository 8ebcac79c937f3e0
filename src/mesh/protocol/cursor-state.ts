/**
 * What a node keeps per peer it pulls from (`mesh:cursor/<peer>`, one
 * node-local row, peer-sync.ts): the peer's log id and our cursor in it, and
 * the entries of its pages refused for clock drift, kept aside to try again
 * (written with the cursor, so the cursor never moves past an entry that
 * was neither applied nor kept).
 */
import { entryWeight } from '../messages.js'
import type { Cursor, RemoteEntry } from './runtime.js'

export const CURSOR_PREFIX = 'mesh:cursor/'

export interface CursorState {
  /** The peer's log id this cursor belongs to; null: never synced. */
  log: string | null
  cursor: Cursor | null
  /** Entries refused for clock drift, kept to try again (the newest version per key). */
  parked?: RemoteEntry[]
}

/** A cursor state with its parked entries (none: the field is left out). */
export function withParked (s: CursorState, parked: RemoteEntry[] | undefined): CursorState {
  const out: CursorState = { log: s.log, cursor: s.cursor }
  if (parked !== undefined && parked.length > 0) out.parked = parked
  return out
}

export function parseState (raw: string | undefined): CursorState {
  if (raw === undefined) return { log: null, cursor: null }
  try {
    const o = JSON.parse(raw) as CursorState
    if (typeof o === 'object' && o !== null && (o.log === null || typeof o.log === 'string')) return o
  } catch {
    // A cursor we cannot read only costs a resync: fall through to "never synced".
  }
  return { log: null, cursor: null }
}

/** The newest version per key of both lists, within `maxBytes` (about): the entries furthest ahead are dropped first. */
export function park (held: readonly RemoteEntry[], more: readonly RemoteEntry[], maxBytes: number): { kept: RemoteEntry[], dropped: number } {
  const byKey = new Map<string, RemoteEntry>()
  for (const e of [...held, ...more]) {
    const had = byKey.get(e.key)
    if (had === undefined || e.hlc > had.hlc || (e.hlc === had.hlc && e.origin > had.origin)) byKey.set(e.key, e)
  }
  const all = [...byKey.values()].sort((a, b) => (a.hlc < b.hlc ? -1 : a.hlc > b.hlc ? 1 : 0))
  let bytes = 0
  let keep = 0
  while (keep < all.length && bytes + entryWeight(all[keep]) <= maxBytes) bytes += entryWeight(all[keep++])
  return { kept: all.slice(0, keep), dropped: all.length - keep }
}
