/**
 * The record layer's versioned change log: the kv stream `meta:events`, one
 * entry per changed replicated key, written by the mutation path in the same
 * transaction as the change. One mutation's entries are one bulk append, so
 * kv stores them as one packed row (src/kv/streams.ts); readers see entries.
 *
 * Entry (kv stream entry fields, stored as JSON): `{"t":"s"|"d","k":<key>,"v":<version>}`
 * - `t`: `s` the key was set (or, from a peer, took a newer version of the
 *   same value), `d` deleted (a tombstone).
 * - `k`: `file:<rid>/<field>`, or `file:<rid>` for a root tombstone (DeleteRoot).
 * - `v`: the version the change carried, `<hlc16><origin>` as in `ver:<rid>`.
 * No timestamp: the entry id's milliseconds are the time of the change.
 * Rows written before the log carried versions (`{"type","key","ts"}`) are
 * still read: their version comes from `ver:` like every row's current one.
 *
 * The SSE `meta` stream shows each field row as the original's
 * `{type: set|del, key, ts}`; root tombstone rows are not shown (clients of
 * the original know per-key events only, and DeleteRoot already emits a `del`
 * for every key it removes), but they advance a subscriber's cursor.
 */
import type { Logger } from '../common/index.js'
import { parseEventId, type EventId, type KvStore, type StreamEntry, type Tx } from '../kv/index.js'
import { versionHlc, versionOrigin, type Version } from './versions.js'

/** The stream name is the original's: SSE clients and cursors carry over. */
export const META_EVENTS = 'meta:events'

type ChangeOp = 'set' | 'del'

/**
 * One mutation's changes, in the order they happen, as the mutation path
 * hands them to the log: each row as it is stored, and beside it the key's
 * value after the change (null: deleted, or a root tombstone), which only
 * change listeners hear.
 */
export class ChangeBatch {
  readonly rows: Array<{ t: 's' | 'd', k: string, v: Version }> = []
  readonly values: Array<string | null> = []

  /** `key` was set to `value` (or, from a peer, took a newer version of the same value). */
  set (key: string, value: string, version: Version): void {
    this.rows.push({ t: 's', k: key, v: version })
    this.values.push(value)
  }

  /** `key` was deleted (a tombstone), or `file:<rid>` took a root tombstone. */
  del (key: string, version: Version): void {
    this.rows.push({ t: 'd', k: key, v: version })
    this.values.push(null)
  }
}

/** A change-log row read back. `version` is absent on rows written before the log carried versions. */
export interface ChangeLogEntry {
  id: EventId
  op: ChangeOp
  key: string
  version?: Version
}

/** A committed change as `onChanges` listeners hear it: the entry id and the key's new state and version. */
export interface CommittedChange {
  id: EventId
  key: string
  value: string | null
  hlc: string
  origin: string
}

export type ChangeListener = (changes: readonly CommittedChange[]) => void

/** Decodes a row of the log (either format); undefined for a row that is not one. */
export function decodeChange (e: StreamEntry): ChangeLogEntry | undefined {
  const f = e.fields
  if (typeof f.k === 'string') {
    return { id: e.id, op: f.t === 'd' ? 'del' : 'set', key: f.k, version: f.v }
  }
  if (typeof f.key === 'string') return { id: e.id, op: f.type === 'del' ? 'del' : 'set', key: f.key }
  return undefined
}

/** True for the key of a root tombstone (`file:<rid>`, no field). */
function isRootKey (key: string): boolean {
  return key.indexOf('/', 5) < 0
}

/**
 * The entry as SSE clients of the original see it (`{type, key, ts}`), or
 * undefined for a row they never saw (root tombstones).
 */
export function presentChange (e: StreamEntry): StreamEntry | undefined {
  const f = e.fields
  if (typeof f.k !== 'string') return e // a row from before versions: already in the public shape
  if (isRootKey(f.k)) return undefined
  return { stream: e.stream, id: e.id, fields: { type: f.t === 'd' ? 'del' : 'set', key: f.k, ts: String(parseEventId(e.id).ms) } }
}

/**
 * Appends rows and hands committed changes to listeners. Listeners hear each
 * commit's changes once, after COMMIT, in log order; a change that rolled
 * back is never heard.
 */
export class ChangeLog {
  private readonly listeners = new Set<ChangeListener>()
  /** Changes of the current commit, gathered by after-commit hooks, handed out by the commit listener that runs right after them. */
  private committed: CommittedChange[] = []
  private unsubscribe: (() => void) | undefined

  constructor (private readonly kv: KvStore, private readonly log: Logger) {}

  /** Appends one mutation's changes in order (one packed row); returns the last id. */
  append (tx: Tx, changes: ChangeBatch): EventId | undefined {
    const { rows, values } = changes
    if (rows.length === 0) return undefined
    const ids = tx.appendEvents(META_EVENTS, rows)
    const last = ids[ids.length - 1]
    if (this.listeners.size === 0) return last
    const out: CommittedChange[] = rows.map((r, i) => ({
      id: ids[i], key: r.k, value: values[i], hlc: versionHlc(r.v), origin: versionOrigin(r.v)
    }))
    tx.afterCommit(() => { for (const c of out) this.committed.push(c) })
    return last
  }

  onChanges (listener: ChangeListener): () => void {
    this.listeners.add(listener)
    // kv runs after-commit hooks before commit listeners, so this sees the whole commit's changes.
    this.unsubscribe ??= this.kv.onCommit(() => { this.deliver() })
    return () => {
      this.listeners.delete(listener)
      if (this.listeners.size === 0) {
        this.unsubscribe?.()
        this.unsubscribe = undefined
        this.committed = []
      }
    }
  }

  private deliver (): void {
    if (this.committed.length === 0) return
    const batch = this.committed
    this.committed = []
    for (const l of this.listeners) {
      // the changes are committed; one listener's failure must not starve the others
      try { l(batch) } catch (err) { this.log.error('change listener failed', { err }) }
    }
  }
}
