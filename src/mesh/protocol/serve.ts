/**
 * Serving pulls: a peer's request for the changes after its cursor, for
 * a page of the whole replicated range (resync), or for a step of a
 * reconciliation (reconcile.ts). Every page is encoded and
 * checked against the 1 MiB message limit; a page that encodes larger is
 * read again with half the budget (only pathological values get there).
 */
import {
  encodeMessage, MAX_MESSAGE_BYTES, type ErrorMessage, type Message, type PullMessage, type ReconMessage, type RootsMessage, type SnapMessage
} from '../messages.js'
import { splitPoints } from './range-copy.js'
import { answerRecon, DEFAULT_RECONCILE_LIMITS } from './reconcile.js'
import { answerRoots } from './reconcile-keys.js'
import type { MeshOptions } from './options.js'
import type { ReplicaStore } from './runtime.js'

/** A refusal: no clock in it (a peer measures its clock only on valid replies: clock-guard.ts). */
export function errorReply (code: ErrorMessage['code'], message: string, retryAfterMs?: number): Uint8Array {
  const m: ErrorMessage = { t: 'error', code, message }
  if (retryAfterMs !== undefined) m.retryAfterMs = retryAfterMs
  return encodeMessage(m)
}

/** Reads a page with `read(budget)` and encodes it, halving the budget until it fits one message. */
function fit (budget: number, read: (maxBytes: number) => Message): Uint8Array {
  for (let b = budget; ; b = Math.floor(b / 2)) {
    const bytes = encodeMessage(read(Math.max(b, 1)))
    if (bytes.length <= MAX_MESSAGE_BYTES || b <= 1) return bytes
  }
}

/** `clock`: our wall clock, which every reply carries so the peer can measure its offset to us (clock-guard.ts). */
export function servePull (store: ReplicaStore, opts: MeshOptions, m: PullMessage, clock: number): Uint8Array {
  const log = store.logId()
  if (m.log !== log) {
    // Not a cursor into this log (another store, or one that was replaced): the peer must resync.
    return encodeMessage({ t: 'changes', log, entries: [], next: null, head: store.head(), gap: true, clock })
  }
  return fit(Math.min(m.maxBytes, opts.pageBytes), (maxBytes) => {
    const page = store.changesSince(m.cursor, { limit: opts.pageKeys, maxBytes })
    return { t: 'changes', log, entries: page.changes, next: page.next, head: page.head, gap: page.gap, clock }
  })
}

export function serveSnap (store: ReplicaStore, opts: MeshOptions, m: SnapMessage, clock: number): Uint8Array {
  const log = store.logId()
  // The head is captured before the first page is read: every change after it reaches the peer through the
  // changes it asks for next, including changes to keys on pages it already has.
  const head = m.after === null ? store.head() : null
  // The first page says how many records there are: the peer's join shows its time left.
  const records = m.after === null ? store.recordCount?.() : undefined
  // Asked with the first page: where to cut the range so a joining node can copy its slices from several peers.
  const splits = m.after === null && m.split !== undefined ? splitPoints(store, m.split) : undefined
  return fit(Math.min(m.maxBytes, opts.pageBytes), (maxBytes) => {
    const page = store.exportRange(m.after, { maxBytes })
    // The range's end as the first page was read: a copy stops there, and what comes after reaches the peer from the head on.
    const end = m.after === null ? page.end : undefined
    return { t: 'snapshot', log, entries: page.entries, next: page.next, head, clock, ...(records === undefined ? {} : { records }),
      ...(splits === undefined ? {} : { splits }), ...(end === undefined ? {} : { end }) }
  })
}

/**
 * A reconciliation request (reconcile.ts): the log id and head are read
 * before the fingerprints, in the same turn, so a peer whose ranges end
 * equal to ours holds everything up to that head.
 */
export function serveRecon (store: ReplicaStore, m: ReconMessage, clock: number): Uint8Array {
  const log = store.logId()
  const head = store.head()
  return fit(DEFAULT_RECONCILE_LIMITS.messageBytes, (messageBytes) => {
    const a = answerRecon(store, m, { ...DEFAULT_RECONCILE_LIMITS, messageBytes })
    return { t: 'recond', log, head, ranges: a.ranges, diff: a.diff, taken: a.taken, clock }
  })
}

/** The key comparison of roots a reconciliation found to differ. */
export function serveRoots (store: ReplicaStore, m: RootsMessage, clock: number): Uint8Array {
  return fit(DEFAULT_RECONCILE_LIMITS.entryBytes, (entryBytes) => {
    const a = answerRoots(store, m, { ...DEFAULT_RECONCILE_LIMITS, entryBytes })
    return { t: 'rootsd', entries: a.entries, want: a.want, taken: a.taken, clock }
  })
}
