/**
 * The page's one subscription to each event stream, shared by every view:
 * `meta` (record key set/del) tells open records and result rows to refresh;
 * `files` (watcher add/change/delete) feeds the activity list. Views
 * subscribe by record root; the feed keeps the latest entries.
 */
import { useEffect, useState } from 'preact/hooks'
import { follow, type StreamState } from './sse.js'
import type { StreamEvent } from './wire.js'

export interface Activity {
  /** Stream id, unique per stream. */
  id: string
  kind: 'meta' | 'files'
  type: string
  /** meta: the record root; files: the path. */
  subject: string
  /** meta: the field. */
  field?: string
  at: number
}

/** Entries the activity feed keeps (and shows). */
const FEED_SIZE = 12

type RootListener = (root: string) => void

const rootListeners = new Set<RootListener>()
const feedListeners = new Set<() => void>()
const stateListeners = new Set<() => void>()
let feed: Activity[] = []
let states: Record<'meta' | 'files', StreamState> = { meta: 'connecting', files: 'connecting' }
let started = false

function push (a: Activity): void {
  // One write of many fields arrives as many `set`s: the feed shows the record once per burst.
  const prev = feed[0]
  if (prev !== undefined && prev.kind === a.kind && prev.subject === a.subject && prev.type === a.type && a.at - prev.at < 2000) {
    feed = [{ ...a, field: prev.field === a.field ? a.field : undefined }, ...feed.slice(1)]
  } else {
    feed = [a, ...feed].slice(0, FEED_SIZE)
  }
  for (const l of feedListeners) l()
}

/**
 * Said to every root listener whenever the meta stream goes live: what is
 * shown may have been read before the stream was there (the first connect
 * of a page starts at the head, after its first fetches) or while it was
 * away (a reconnect without a cursor, a new token).
 */
const ANY_ROOT = '*'

/**
 * Every root change heard (and every time the meta stream went live, as
 * ANY_ROOT) gets the next mark. A view notes the mark when it starts a load
 * and hands it to useRootChanges, which refreshes at once if something it
 * shows changed after that mark but before its listener was in place: the
 * answer and the change can cross (a render happens before its effects run,
 * and the stream may go live in between).
 */
let mark = 0
/** The latest marks, oldest first; older ones are forgotten, and a view older than all of them refreshes. */
const recent: Array<{ mark: number, root: string }> = []
const RECENT_SIZE = 512

/** The mark of the latest change heard; a load started now reflects every change up to it. */
export function changeMark (): number {
  return mark
}

function heard (root: string): void {
  mark++
  recent.push({ mark, root })
  if (recent.length > RECENT_SIZE) recent.splice(0, recent.length - RECENT_SIZE)
  for (const l of rootListeners) l(root)
}

/** True if a change after `since` may touch one of `roots`. */
function changedSince (since: number, roots: ReadonlySet<string>): boolean {
  if (since >= mark) return false
  if (recent.length === 0 || recent[0].mark > since + 1) return true // forgotten: assume so
  for (let i = recent.length - 1; i >= 0 && recent[i].mark > since; i--) {
    const r = recent[i].root
    if (r === ANY_ROOT || roots.has(r)) return true
  }
  return false
}

function setState (kind: 'meta' | 'files', s: StreamState): void {
  if (kind === 'meta' && s === 'live') heard(ANY_ROOT)
  states = { ...states, [kind]: s }
  for (const l of stateListeners) l()
}

/** Starts following both streams (once per page). */
export function startLive (): void {
  if (started) return
  started = true
  follow('/api/events/meta', (e: StreamEvent) => {
    const m = /^file:([^/]+)(?:\/(.*))?$/.exec(e.data.key ?? '')
    if (m === null) return
    const root = m[1]
    heard(root)
    push({ id: e.id ?? String(Date.now()), kind: 'meta', type: e.event, subject: root, field: m[2], at: Number(e.data.ts ?? Date.now()) })
  }, s => { setState('meta', s) })
  follow('/api/events/files', (e: StreamEvent) => {
    if (e.event === 'gap') return
    push({ id: e.id ?? String(Date.now()), kind: 'files', type: e.event, subject: e.data.path ?? '', at: Number(e.data.timestamp ?? Date.now()) })
  }, s => { setState('files', s) })
}

/**
 * Calls `refresh` (at most every `ms`) when any key of one of `roots` changes.
 * `since` is the changeMark() taken when the shown data started loading:
 * a change heard after it, before this subscription was in place, refreshes too.
 * `roots` is compared by content, so a new array of the same roots keeps the subscription.
 */
export function useRootChanges (roots: readonly string[], since: number, refresh: () => void, ms = 150): void {
  const key = roots.join(',')
  useEffect(() => {
    if (key === '') return
    const set = new Set(key.split(','))
    let timer: ReturnType<typeof setTimeout> | undefined
    const l: RootListener = (root) => {
      if ((root !== ANY_ROOT && !set.has(root)) || timer !== undefined) return
      timer = setTimeout(() => { timer = undefined; refresh() }, ms)
    }
    rootListeners.add(l)
    if (changedSince(since, set)) l(ANY_ROOT)
    return () => { rootListeners.delete(l); if (timer !== undefined) clearTimeout(timer) }
  }, [key, since, refresh, ms])
}

/** The current value of a module-level variable, re-rendering when its listeners are told. */
function useShared<T> (get: () => T, listeners: Set<() => void>): T {
  const [v, set] = useState(get)
  useEffect(() => {
    const l = (): void => { set(get) }
    listeners.add(l)
    return () => { listeners.delete(l) }
  }, [])
  return v
}

export function useFeed (): Activity[] {
  return useShared(() => feed, feedListeners)
}

export function useStreamStates (): Record<'meta' | 'files', StreamState> {
  return useShared(() => states, stateListeners)
}
