/**
 * The key comparison of a reconciliation (reconcile.ts, step 2), the
 * responder's side: for the roots found to differ, the entries the
 * initiator's versions do not cover and the keys it holds newer.
 */
import type { RootsMessage, RootsReplyMessage } from '../messages.js'
import { entryWeight } from '../messages.js'
import type { ReconcileLimits } from './reconcile.js'
import type { RemoteEntry, ReplicaStore } from './runtime.js'

interface RootState { root: string | undefined, fields: Map<string, string> }

export function ridOf (key: string): string {
  const slash = key.indexOf('/', 5)
  return slash < 0 ? key.slice(5) : key.slice(5, slash)
}

/** Each root's versions, from entries (as exportRoots gives them, or a `roots` request's). */
function statesOf (entries: readonly RemoteEntry[]): Map<string, RootState> {
  const out = new Map<string, RootState>()
  for (const e of entries) {
    const slash = e.key.indexOf('/', 5)
    const rid = slash < 0 ? e.key.slice(5) : e.key.slice(5, slash)
    let s = out.get(rid)
    if (s === undefined) { s = { root: undefined, fields: new Map() }; out.set(rid, s) }
    const v = e.hlc + e.origin
    if (slash < 0) {
      if (s.root === undefined || v > s.root) s.root = v
    } else {
      const f = e.key.slice(slash + 1)
      const had = s.fields.get(f)
      if (had === undefined || v > had) s.fields.set(f, v)
    }
  }
  return out
}

/** True when `s` already holds `e`'s version of its key or a newer one (a root tombstone covers every key at or below it). */
function covered (e: RemoteEntry, s: RootState | undefined): boolean {
  if (s === undefined) return false
  const v = e.hlc + e.origin
  if (s.root !== undefined && s.root >= v) return true
  const slash = e.key.indexOf('/', 5)
  if (slash < 0) return false
  const fv = s.fields.get(e.key.slice(slash + 1))
  return fv !== undefined && fv >= v
}

/** True for a field's entry (`file:<rid>/<field>`), false for a root tombstone (`file:<rid>`). */
const isField = (e: RemoteEntry): boolean => e.key.indexOf('/', 5) > 0

/**
 * The responder's side of the key comparison: its entries the sender lacks,
 * and the keys it wants, for as many roots as fit. A root named here was
 * found to differ (its hash covers values and versions): when no version
 * differs, a value held at an equal version does, and every field of the
 * root moves both ways (the tie's winner is kept on both sides).
 */
export function answerRoots (store: ReplicaStore, m: RootsMessage, limits: ReconcileLimits): Omit<RootsReplyMessage, 't' | 'clock'> {
  const theirs = statesOf(m.entries)
  const sentBy = byRootOf(m.entries)
  // Our versions first (the version rows alone); values are read only for the roots that send some.
  const ours = byRootOf(store.exportVersions(m.rids))
  const plan: Array<{ rid: string, send: Set<string> | 'all', want: string[] }> = []
  const valued: string[] = []
  for (const rid of m.rids) {
    const mine = ours.get(rid) ?? []
    const state = statesOf(mine).get(rid)
    const sent = sentBy.get(rid) ?? []
    let send: Set<string> | 'all' = new Set(mine.filter(e => !covered(e, theirs.get(rid))).map(e => e.key))
    let wanted = sent.filter(e => !covered(e, state))
    if (send.size === 0 && wanted.length === 0) {
      send = 'all'
      wanted = sent.filter(isField)
    }
    plan.push({ rid, send, want: wanted.map(e => e.key) })
    if (send === 'all' || send.size > 0) valued.push(rid)
  }
  const withValues = byRootOf(store.exportRoots(valued))
  const entries: RemoteEntry[] = []
  const want: string[] = []
  let bytes = 0
  let taken = 0
  for (const { rid, send, want: w } of plan) {
    if (taken > 0 && bytes >= limits.entryBytes) break
    const all = withValues.get(rid) ?? []
    const out = send === 'all' ? all.filter(isField) : all.filter(e => send.has(e.key))
    const add = out.reduce((n, e) => n + entryWeight(e), 0)
    if (taken > 0 && bytes + add > 2 * limits.entryBytes) break
    entries.push(...out)
    want.push(...w)
    bytes += add
    taken++
  }
  return { entries, want, taken }
}

/** Entries grouped by root, in the order they come. */
export function byRootOf (entries: readonly RemoteEntry[]): Map<string, RemoteEntry[]> {
  const out = new Map<string, RemoteEntry[]>()
  for (const e of entries) {
    const rid = ridOf(e.key)
    const list = out.get(rid)
    if (list === undefined) out.set(rid, [e])
    else list.push(e)
  }
  return out
}
